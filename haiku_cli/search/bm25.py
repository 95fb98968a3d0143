"""BM25 over several databases as if they were one: global term statistics for full-text fusion.

Each database's full-text index scores with its own statistics (chunk count, average length, how many
chunks hold each term), so raw scores from two databases are not comparable. For a fan-out, haiku
gathers those statistics from every database, adds them up, and rescores each full-text candidate with
the same formula LanceDB uses (BM25, k1 = 1.2, b = 0.75), so a corpus split across databases ranks as
it would in one. For a single database the sums are its own statistics and nothing changes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from haiku_cli.search.candidates import Candidate, CandidateQuery, text_candidates
from haiku_cli.search.lookups import Reads, Shape, VersionFacts, each
from haiku_cli.store.database import Database
from haiku_cli.store.facts import corpus_totals
from haiku_cli.store.reads import async_table

K1 = 1.2
B = 0.75
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class TermStats:
    """Chunk count, total length in terms and per-term chunk frequencies of one database, or of a set."""

    chunks: int = 0
    tokens: int = 0
    frequency: Counter[str] = field(default_factory=Counter)

    def __add__(self, other: TermStats) -> TermStats:
        frequency = self.frequency + other.frequency
        return TermStats(self.chunks + other.chunks, self.tokens + other.tokens, frequency)

    @staticmethod
    def total(parts: Sequence[TermStats]) -> TermStats:
        """The statistics of the parts together (one count per term, not a Counter per part added)."""
        frequency: Counter[str] = Counter()
        for part in parts:
            frequency.update(part.frequency)
        return TermStats(sum(p.chunks for p in parts), sum(p.tokens for p in parts), frequency)

    def idf(self, terms: Sequence[str]) -> np.ndarray:
        """BM25's inverse document frequency of each term under these statistics."""
        n = np.array([self.frequency.get(t, 0) for t in terms], dtype=np.float64)
        return np.log(1 + (self.chunks - n + 0.5) / (n + 0.5))


@dataclass
class Analyzed:
    """One database's full-text candidates as BM25 sees them: each one's length and query-term counts."""

    candidates: list[Candidate]
    terms: list[str]  # the query's distinct terms, the columns of `counts`
    lengths: np.ndarray  # terms in each candidate's search text
    counts: np.ndarray  # (candidates, terms): how often each candidate holds each term

    def weights(self, query: Sequence[str], stats: TermStats) -> np.ndarray:
        """Each candidate's BM25 weight per term (times the term's repeats in the query), idf aside."""
        repeats = np.array([query.count(t) for t in self.terms], dtype=np.float64)
        avg = stats.tokens / stats.chunks if stats.chunks else 1.0
        norm = K1 * (1 - B + B * self.lengths / avg)
        tf = self.counts
        return repeats * tf * (K1 + 1) / (tf + norm[:, None])


@dataclass
class QueryTerms:
    """A query as the index sees it: its terms (repeats count, as in LanceDB) and its distinct words, to
    look a term up by (`word_lookup`)."""

    terms: list[str]
    words: list[str]
    lookup: dict[str, str] | None = None  # term -> a query word that analyzes to exactly that term


def query_words(query: str) -> list[str]:
    """The query's distinct words, each analyzed alone (when a term is looked up) to find its term."""
    return list(dict.fromkeys(_WORD.findall(query)))


async def word_lookup(reads: Reads, db: Database, terms: QueryTerms) -> dict[str, str]:
    """Each term -> a query word that `db`'s analyzer turns into exactly that term: analysed the first
    time a term's count is looked up (most searches settle every count from the scores, or kept ones)."""
    if terms.lookup is None:
        lookup: dict[str, str] = {}
        per_word = await reads.analyze(db, terms.words) if terms.words else []
        for word, analysed in zip(terms.words, per_word, strict=True):
            if len(analysed) == 1:
                lookup.setdefault(analysed[0], word)
        terms.lookup = lookup
    return terms.lookup


# Statistics of a table version never change, so they are kept for the life of the process (a host
# serving many queries counts each once); keyed by location, table and version, a write misses them.
_corpus: VersionFacts[TermStats] = VersionFacts(100_000)
_frequency: VersionFacts[int] = VersionFacts(100_000)


def _version_key(db: Database, version: int) -> tuple[str, str, int]:
    return (db.location.uri, db.chunks_table_name, version)


async def corpus_size(db: Database, version: int) -> TermStats:
    """One database's chunk count and total length in terms (no term frequencies yet), at `version` of
    its chunks table (the version its handle reads)."""
    key = _version_key(db, version)
    if key not in _corpus:
        return _corpus.remember(key, TermStats(*await corpus_totals(db, version)))
    return _corpus[key]


def _ranked(per_db: Sequence[Sequence[Candidate]]) -> list[list[Candidate]]:
    return [[c for c in candidates if c.bm25 is not None] for candidates in per_db]


def _analyzed(ranked: list[list[Candidate]], query: Sequence[str], texts: list[str]) -> list[Analyzed]:
    terms = list(dict.fromkeys(query))
    each_text = iter(texts)
    out = []
    for found in ranked:
        lengths, counts = term_counts([next(each_text) for _ in found], terms)
        out.append(Analyzed(found, terms, lengths, counts))
    return out


def term_counts(texts: Sequence[str], terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each text's length in terms, and how often it holds each of `terms` (a row per text), the texts'
    terms separated by single spaces (as stored), none holding a space or a line break.

    Counted in one string of every text, each between spaces and apart by a line break: a term is found
    between spaces place by place (a repeat side by side shares its space with the one before), and a
    place tells its text. Splitting a search's hundreds of candidates into lists, or counting in each
    text apart, cost more than the rest of the rescoring.
    """
    starts = []
    at = 1
    for text in texts:
        starts.append(at)
        at += len(text) + 3  # the text, its spaces and the line break
    whole = " " + " \n ".join(texts) + " "
    counts = np.zeros((len(texts), len(terms)), dtype=np.float64)
    for j, term in enumerate(terms):
        pattern, step, places = f" {term} ", len(term) + 1, []
        p = whole.find(pattern)
        while p >= 0:
            places.append(p + 1)
            p = whole.find(pattern, p + step)
        if places:
            held = np.searchsorted(starts, places, side="right") - 1
            counts[:, j] = np.bincount(held, minlength=len(texts))
    lengths = np.array([text.count(" ") + 1 if text else 0 for text in texts], dtype=np.float64)
    return lengths, counts


async def query_terms(reads: Reads, db: Database, query: str) -> QueryTerms:
    """The query as `db`'s full-text index analyses it (one analyzer call, of the query alone)."""
    (analyzed_query,) = await reads.analyze(db, [query])
    return QueryTerms(analyzed_query, query_words(query))


async def analyzed(
    reads: Reads,
    db: Database,
    query: str,
    per_db: Sequence[Sequence[Candidate]],
    terms: QueryTerms | None = None,
) -> tuple[QueryTerms, list[Analyzed]]:
    """The query's terms, and each database's full-text candidates with their lengths and term counts.

    A candidate's terms are stored with its row (schema version 4); an older layout's are analysed
    here. Every haiku database analyzes with the same analyzer (`create_fts_index`'s), so `db`'s analyzes
    the query and the candidates of all of them in one call: a call's fixed cost outweighs its length.
    `terms`: the query's, analysed
    already (`query_terms`).
    """
    asked = [query] if terms is None else []
    ranked = _ranked(per_db)
    flat = [c for cands in ranked for c in cands]
    texts = [c.search_text for c in flat if c.search_terms is None]
    each_text = await reads.analyze(db, [*asked, *texts]) if asked or texts else []
    if terms is None:
        terms = QueryTerms(each_text[0], query_words(query))
    analysed = iter(each_text[len(asked) :])
    # Analysed terms joined as stored ones are (no term holds a space): one way of counting them.
    counted = [c.search_terms if c.search_terms is not None else " ".join(next(analysed)) for c in flat]
    return terms, _analyzed(ranked, terms.terms, counted)


async def rescore_set(
    reads: Reads,
    dbs: Sequence[Database],
    found: Sequence[Shape],
    per_db: Sequence[list[Candidate]],
    query: CandidateQuery,
    terms: QueryTerms | None = None,
    needed: int = 0,
) -> None:
    """Put every database's BM25 on the scale of the whole set, with the reads of one run.

    Candidates' terms are read with them (or, in an older layout, analysed in one call, with the
    query's unless `terms` has them already); each database's statistics come from the table version
    its rows came from (cached), and the term frequencies its scores do not settle are looked up,
    every database at once. With `needed`, a database whose unread chunks could still reach the set's
    best `needed` under its statistics is searched deeper (`_through_depth`), its new candidates added.
    """
    terms, candidates = await analyzed(reads, dbs[0], query.text, per_db, terms)
    # Each database's own lowest score among a full page of candidates: no chunk it did not give scores more.
    floors = [_floor(a, query.k) for a in candidates]
    combined, own = await _set_statistics(reads, dbs, found, candidates, query, terms)
    for cands in candidates:
        rescore(cands, terms.terms, combined)
    if needed:
        await _through_depth(reads, dbs, per_db, candidates, floors, query, terms, (combined, own), needed)


def _floor(analyzed: Analyzed, k: int) -> float | None:
    """The lowest of a database's own scores if it gave a full page (else it gave every match)."""
    if len(analyzed.candidates) < k:
        return None
    return min(c.bm25 or 0.0 for c in analyzed.candidates)


async def _set_statistics(
    reads: Reads,
    dbs: Sequence[Database],
    found: Sequence[Shape],
    candidates: list[Analyzed],
    query: CandidateQuery,
    terms: QueryTerms,
) -> tuple[TermStats, list[TermStats]]:
    """The set's statistics of the query's terms, and each database's own."""
    keys = [_version_key(db, rows.version) for db, rows in zip(dbs, found, strict=True)]
    cached = [_corpus.get(key) for key in keys]
    unknown = [i for i, size in enumerate(cached) if size is None]
    # The first query of a table version reads its size from meta, or counts it.
    calls = [(dbs[i], reads.within(dbs[i], corpus_size(dbs[i], keys[i][2]))) for i in unknown]
    read = dict(zip(unknown, await each(calls), strict=True))
    sizes = [size if size is not None else read[i] for i, size in enumerate(cached)]
    own = [TermStats(size.chunks, size.tokens) for size in sizes]
    missing: list[tuple[int, int, tuple[str, str, int, str]]] = []
    distinct = list(dict.fromkeys(terms.terms))
    for i, (rows, key, size, cands) in enumerate(zip(found, keys, sizes, candidates, strict=True)):
        known = {t: count for t in distinct if (count := _frequency.get((*key, t))) is not None}
        if len(known) < len(distinct):
            # Fewer full-text hits than asked for means every chunk matching a term is among them.
            exhaustive = not query.document_filter and len(cands.candidates) < query.k
            # What the scores settle is exact (it reproduces every score), so it is kept like a count
            # looked up: a later query sharing the term skips both (the settling costs as much CPU as
            # the rest of the rescoring).
            for term, count in frequencies_from_scores(size, terms.terms, cands, exhaustive).items():
                known.setdefault(term, _frequency.remember((*key, term), count))
        own[i].frequency.update(known)
        missing.extend((i, rows.rows, (*key, t)) for t in distinct if t not in known)
    # What the scores do not settle is looked up (once per table version), every database at once.
    # A term is looked up by a word that analyzes to it: re-analyzing a stem need not give the stem.
    lookup = await word_lookup(reads, dbs[0], terms) if missing else {}
    counts = await each(
        [
            (dbs[i], reads.within(dbs[i], _matching(dbs[i], lookup.get(k[3], k[3]), rows)))
            for i, rows, k in missing
        ]
    )
    for (i, _, term_key), count in zip(missing, counts, strict=True):
        own[i].frequency[term_key[3]] = _frequency.remember(term_key, count)
    return TermStats.total(own), own


def reach(own: TermStats, whole: TermStats, terms: Sequence[str]) -> float:
    """How much higher than under a database's own statistics (`own`) any of its chunks can score
    under the set's (`whole`): a bound, so a chunk its index ranks below a score s scores below s x this.

    A chunk's score is a sum over the terms of idf x weight; each term's idf scales by its ratio, and
    a weight tf (k1 + 1) / (tf + k1 (1 - b + b len / avg)) by at most the ratio of average lengths
    (reached by the longest chunks), when the set's is the longer.
    """
    present = [t for t in dict.fromkeys(terms) if own.frequency.get(t, 0) > 0]
    if not present or not own.chunks or not whole.chunks:
        return 0.0
    idf = float(np.max(whole.idf(present) / own.idf(present)))
    lengths = (whole.tokens / whole.chunks) / (own.tokens / own.chunks) if own.tokens else 1.0
    return idf * max(lengths, 1.0)


async def _through_depth(
    reads: Reads,
    dbs: Sequence[Database],
    per_db: Sequence[list[Candidate]],
    candidates: list[Analyzed],
    floors: list[float | None],
    query: CandidateQuery,
    terms: QueryTerms,
    stats: tuple[TermStats, list[TermStats]],
    needed: int,
) -> None:
    """Search deeper every database whose chunks below its own page could reach the set's best `needed`.

    A database ranks by its own statistics, so its best k need not hold every chunk of the set's best
    under the set's: one whose k-th own score, times its `reach`, still comes to the set's `needed`-th
    score is asked for twice as many, until none can (the common case asks nothing more).
    """
    combined, own = stats
    depth = [query.k] * len(dbs)
    while True:
        scores = sorted((c.bm25 or 0.0 for a in candidates for c in a.candidates), reverse=True)
        bar = scores[needed - 1] if len(scores) >= needed else 0.0
        deeper = [
            i
            for i, floor in enumerate(floors)
            if floor is not None and floor * reach(own[i], combined, terms.terms) * (1 + 1e-6) >= bar
        ]
        if not deeper:
            return
        for i in deeper:
            depth[i] *= 2
        asked = [replace(query, search_type="fts", k=depth[i]) for i in deeper]
        pairs = list(zip(deeper, asked, strict=True))
        fetched = await each(
            [(dbs[i], reads.within(dbs[i], text_candidates(reads, dbs[i], q))) for i, q in pairs]
        )
        for i, q, new in zip(deeper, asked, fetched, strict=True):
            added = _merge(per_db[i], new)
            _, (more,) = await analyzed(reads, dbs[0], query.text, [added], terms)
            floors[i] = min(c.bm25 or 0.0 for c in new) if len(new) >= q.k else None  # own scores yet
            rescore(more, terms.terms, combined)
            candidates[i].candidates.extend(more.candidates)


def _merge(held: list[Candidate], new: list[Candidate]) -> list[Candidate]:
    """Add to a database's candidates the full-text ones a deeper search found; returns those that are
    new to full text (a hybrid candidate found by vector alone gets its BM25 now)."""
    by_key = {c.key: c for c in held}
    added = []
    for cand in new:
        old = by_key.get(cand.key)
        if old is None:
            held.append(cand)
            added.append(cand)
        elif old.bm25 is None:
            old.bm25, old.search_terms, old.search_text = cand.bm25, cand.search_terms, cand.search_text
            added.append(old)
    return added


async def _matching(db: Database, word: str, rows: int) -> int:
    """How many of `db`'s `rows` chunks the full-text index finds for `word`."""
    q = async_table(db.chunks).query().nearest_to_text(word, columns="search_text").select(["_score"])
    return (await q.limit(max(rows, 1)).to_arrow()).num_rows


def frequencies_from_scores(
    size: TermStats, query: Sequence[str], analyzed: Analyzed, exhaustive: bool
) -> dict[str, int]:
    """The chunk frequencies of query terms that one database's own BM25 scores of its candidates imply.

    Each candidate's score is a sum over the query terms of idf x a known term weight, so the scores of
    enough candidates determine every idf, and each idf one chunk frequency: no lookup in the corpus.
    A term no candidate holds has frequency 0 when `exhaustive` (every match is a candidate), else it is
    left out. Frequencies are returned only if they reproduce every score; the caller looks up the rest.
    """
    held = analyzed.counts.any(axis=0) if analyzed.candidates else np.zeros(len(analyzed.terms), dtype=bool)
    by_term = list(zip(analyzed.terms, [bool(h) for h in np.asarray(held).tolist()], strict=True))
    present = [t for t, h in by_term if h]
    found = {} if not exhaustive else {t: 0 for t, h in by_term if not h}
    if not present or not size.chunks:
        return found
    weights = analyzed.weights(query, size)[:, held]
    scores = np.array([c.bm25 for c in analyzed.candidates], dtype=np.float64)
    idf, _, rank, _ = np.linalg.lstsq(weights, scores, rcond=None)
    if rank < len(present):
        return found  # fewer independent candidates than terms: many frequencies fit, so look them up
    # idf = ln((N + 1) / (n + 0.5)), so n follows from each idf; it must be a whole count >= 1.
    n = np.clip(np.rint((size.chunks + 1) / np.exp(np.clip(idf, -50, 50)) - 0.5), 1, size.chunks)
    exact_idf = np.log((size.chunks + 1) / (n + 0.5))
    # np.allclose's test (|a - b| <= atol + rtol |b|) without its wrapper's cost, a third of this call's.
    if not bool(np.all(np.abs(weights @ exact_idf - scores) <= 1e-6 + 1e-5 * np.abs(scores))):
        return found  # not determined (too few or too alike candidates): looked up instead
    return found | {t: int(v) for t, v in zip(present, n, strict=True)}


def rescore(analyzed: Analyzed, query: Sequence[str], stats: TermStats) -> None:
    """Replace each full-text candidate's BM25 with its score under the combined statistics."""
    if not analyzed.candidates or not stats.chunks:
        return
    scores = analyzed.weights(query, stats) @ stats.idf(analyzed.terms)
    for cand, score in zip(analyzed.candidates, scores.tolist(), strict=True):
        cand.bm25 = score
