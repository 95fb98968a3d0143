"""Human-readable rendering of results, documents and reports."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.padding import Padding
from rich.text import Text

from haiku_cli import api
from haiku_cli.cli import output, tables
from haiku_cli.cli.freshness_render import part_source
from haiku_cli.cli.output import printable
from haiku_cli.cli.places import link_style, place

if TYPE_CHECKING:
    from haiku_cli.api import (
        AskResult,
        Citation,
        DatabaseInfo,
        DatabaseOverview,
        DocumentPart,
        DocumentWithChunks,
        Execution,
        ForgottenSource,
        PictureMark,
        PublishInfo,
        SearchHit,
        SourceList,
        SourceSync,
        SyncReport,
        WatchEvent,
    )

_WORD = re.compile(r"\w{3,}", re.UNICODE)
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "are",
        "was",
        "were",
        "what",
        "how",
        "does",
        "have",
        "has",
        "not",
        "you",
        "your",
    ]
)


def highlight_terms(query: str) -> list[str]:
    """Words of a query worth highlighting in an excerpt."""
    return [w for w in _WORD.findall(query.lower()) if w not in _STOP]


def excerpt(content: str, terms: Sequence[str], width: int = 320, *, indent: str | None = None) -> str:
    """A window of the content around the first query term: one line, or with `indent` code kept as lines."""
    from haiku_cli.cli.excerpts import excerpt as window

    return window(content, terms, width, indent=indent)


def search_hits(
    query: str, hits: Sequence[SearchHit], *, show_database: bool = True, files: bool = False
) -> None:
    """Ranked hits: rank, title, database, short id, uri, section and a highlighted excerpt.

    `files` (`search --files`) gives each hit one line; on a terminal it fits the width (the uri cut in
    its middle, the excerpt at its end).
    """
    if not hits:
        output.err.print("no results", style="dim")
        return
    terms = highlight_terms(query)
    shown = api.short_ids([hit.document_id for hit in hits])
    for hit in hits:
        (_hit_line if files else _hit_block)(hit, shown[hit.document_id], terms, show_database)


def _section(hit: SearchHit) -> str:
    """Where in its document a hit is: `  § heading > path  lines 12-18  p. 3,4` (empty when unknown)."""
    where = ("  § " + " > ".join(hit.heading_path)) if hit.heading_path else ""
    at = place(hit.line_start, hit.line_end, hit.pages)
    return printable(where + (f"  {at}" if at else ""))


def _hit_block(hit: SearchHit, short_id: str, terms: list[str], show_database: bool) -> None:
    label = f"  [{hit.database}]" if show_database else ""
    score = f"  score {hit.score:.3f}"
    title = printable(hit.document_title or hit.document_uri or hit.document_id)
    head = Text()
    head.append(f"{hit.rank:>2}. ", style="bold")
    head.append(_fit(title, 4 + cell_len(label + score)), style="bold cyan")
    head.append(label, style="magenta")
    head.append(score, style="dim")
    output.out.print(head)
    section = _section(hit)
    # The uri gives way, in its middle, to the id and the section.
    uri = _fit(printable(hit.document_uri or "(added text)"), 6 + len(short_id) + cell_len(section), uri=True)
    where = Text(f"    {short_id}  ", style="dim")
    where.append(uri, style=link_style(hit.document_uri, hit.pages))
    where.append(section, style="dim")
    output.out.print(where)
    if hit.stale:
        output.out.print(printable(f"    {hit.stale_note}"), style="bold red", markup=False, soft_wrap=True)
    body = Text("    " + excerpt(hit.content, terms, indent="    "))
    body.highlight_words(terms, style="bold yellow", case_sensitive=False)
    output.out.print(body)
    _pictures(hit.pictures)
    output.out.print()


def _pictures(pictures: Sequence[PictureMark]) -> None:
    """One dim line per picture a chunk covers: `picture p3-1: Figure 2 ...`."""
    for p in pictures:
        shown = f"    picture {p.reference}" + (f": {p.caption}" if p.caption else "")
        output.out.print(printable(shown), style="dim", markup=False, soft_wrap=True)


def _hit_line(hit: SearchHit, short_id: str, terms: list[str], show_database: bool) -> None:
    rank, label, section = f"{hit.rank:>2}. ", f"  [{hit.database}]" if show_database else "", _section(hit)
    title, uri = printable(hit.document_title or "(untitled)"), printable(hit.document_uri or "")
    gist_cells: int | None = 120
    if output.out.is_terminal:
        # Which document, and where it is, come first: title and uri share what the rest leaves (the uri
        # up to half of it); the section and then the excerpt follow only where room remains.
        fixed = cell_len(rank + short_id + "  " + label) + (2 if uri else 0)
        room = output.out.width - fixed
        title = tables.middle(title, max(room - min(cell_len(uri), room // 2), 12))
        uri = tables.middle(uri, max(room - cell_len(title), 12), end_share=tables.URI_END_SHARE)
        room -= cell_len(title) + cell_len(uri)
        section = section if cell_len(section) <= room else ""
        room -= cell_len(section) + len("  — ")
        gist_cells = room if room >= 20 else None
    line = Text()
    line.append(rank, style="bold")
    line.append(short_id + "  ", style="dim")
    line.append(title, style="bold cyan")
    line.append(label, style="magenta")
    line.append("  " if uri else "", style="dim")
    line.append(uri, style=link_style(hit.document_uri, hit.pages))
    line.append(section, style="dim")
    if hit.stale:
        line.append(f"  [{hit.source_state}]", style="bold red")
    if gist_cells is not None:
        body = Text(f"  — {excerpt(hit.content, terms, width=gist_cells)}")
        body.highlight_words(terms, style="bold yellow", case_sensitive=False)
        line.append_text(body)
    output.out.print(line, no_wrap=output.out.is_terminal, overflow="ellipsis", soft_wrap=True)


def _fit(text: str, beside: int, *, uri: bool = False) -> str:
    """`text` cut in its middle to fit a terminal line beside `beside` other cells (whole in a pipe)."""
    if not output.out.is_terminal:
        return text
    share = tables.URI_END_SHARE if uri else 0.5
    return tables.middle(text, max(output.out.width - beside, 20), end_share=share)


def table(
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    keep: Sequence[str] = ("id",),
    cut_first: Sequence[str] = (),
) -> None:
    """A table on stdout that fits the terminal; the `keep` columns (ids, for copying) are never cut, the
    `cut_first` ones are shortened before the others."""
    tables.table(columns, rows, keep=keep, cut_first=cut_first)


def size(n: int | None) -> str:
    """Bytes as a short human size."""
    return api.human_size(n)


def document(found: DocumentWithChunks) -> None:
    """`haiku get`: the title, the facts about the document, then its content."""
    doc = found.document
    output.out.print(printable(doc.title or "(untitled)"), style="bold", markup=False)
    # Metadata one `key=value` a line, as `--meta` takes it; a value that is not plain text is JSON.
    pairs = [f"{k}={_meta_value(v)}" for k, v in doc.metadata.items()]
    when = "%Y-%m-%d %H:%M:%S UTC"
    for label, value in (
        ("id", doc.id),
        ("uri", doc.uri),
        ("database", found.database),
        ("metadata", "\n           ".join(pairs) or None),
        ("created", doc.created_at.strftime(when)),
        ("updated", doc.updated_at.strftime(when)),
        ("chunks", len(found.chunks)),
        ("pictures", len(found.pictures) or None),
    ):
        if value is not None:
            output.out.print(f"{label:>9}: {printable(str(value))}", markup=False, style="dim")
    for p in found.pictures:
        where = f"p. {p.page}  " if p.page else ""
        line = f"{p.reference}  {where}{p.width}x{p.height} {p.format}  {size(p.size)}  {p.caption}"
        output.out.print(f"{'':>11}{printable(line.rstrip())}", markup=False, style="dim")
    output.out.print()
    output.out.print(printable(doc.content.replace("\f", "\n\n")), markup=False)


def document_part(part: DocumentPart) -> None:
    """`haiku get --lines` / `--chunk`: exactly that part on stdout; where it stands on stderr."""
    title = part.document_title or part.document_uri or part.document_id
    at = place(part.line_start, part.line_end, [])
    if part.lines_of == "text":
        at += " of the stored text (the source's lines were not recorded)"
    head = Text(printable(title), style=link_style(part.document_uri, [], "bold", output.err))
    if part.document_uri and part.document_title:
        head.append(f"  {printable(part.document_uri)}", style="dim")
    head.append(f"  {at}" if at else "", style="dim")
    output.err.print(head, soft_wrap=True)
    output.err.print(printable(part_source(part)), style="dim" if not part.differs else "bold red")
    text = printable(part.text.replace("\f", "\n\n"))
    output.out.print(text, markup=False, highlight=False, soft_wrap=True)


def _meta_value(value: object) -> str:
    if isinstance(value, str) and "\n" not in value:
        return value
    return json.dumps(value, ensure_ascii=False)


def database_info(facts: DatabaseInfo) -> None:
    """`haiku info` as a two-column table."""
    rows: list[tuple[str, object]] = [
        ("database", facts.database),
        ("kind", f"{facts.kind}, read-only" if facts.read_only else facts.kind),
        ("documents", facts.documents),
        ("chunks", facts.chunks),
        *([("pictures", facts.pictures)] if facts.pictures else []),
        ("size", size(facts.size_bytes)),
        ("embedder", f"{facts.embedder} ({facts.dimension} dims)"),
        ("schema", f"{facts.schema_version} ({facts.upgrade})" if facts.upgrade else facts.schema_version),
        ("versions", ", ".join(f"{k} v{v}" for k, v in facts.versions.items())),
    ]
    if facts.published is not None:
        rows.append(("published", api.describe_publish(facts.published)))
    for idx in facts.indexes:
        rows.append(
            (
                f"index {idx['name']}",
                f"{idx['kind']}: {idx['indexed_rows']} rows, {idx['unindexed_rows']} pending",
            )
        )
    if not facts.indexes:
        rows.append(("indexes", "none (exact search)"))
    table(["", ""], rows)
    _note_newer_publisher(facts.database, facts.published)


def _note_newer_publisher(name: str, published: PublishInfo | None) -> None:
    note = api.newer_than_reader(name, published) if published is not None else None
    if note is not None:
        output.err.print(note, markup=False, style="yellow", soft_wrap=True)


def databases(rows: Sequence[DatabaseOverview], *, show_locations: bool) -> None:
    """`haiku databases`: one row per configured database; errors follow on stderr."""
    columns = ["name", "kind", "exists", "documents", "chunks", "embedder"]
    published = any(r.published for r in rows)
    if published:
        columns.append("published")
    if show_locations:
        columns.append("location")
    cells = []
    for r in rows:
        exists = "yes" if r.exists else ("error" if r.error else "no")
        row: list[object] = [r.database, r.kind, exists, r.documents, r.chunks, r.embedder]
        if published:
            row.append(api.describe_publish(r.published) if r.published else "")
        if show_locations:
            row.append(r.location)
        cells.append(row)
    # Asked for, the locations are shown whole: the embedder's name is cut first.
    table(columns, cells, keep=("name", "location"), cut_first=("embedder",))
    for r in rows:
        if r.error:
            output.error(r.error)
        elif r.published is not None:
            _note_newer_publisher(r.database, r.published)


def answer(text: str) -> None:
    """The answer: rendered Markdown on a terminal, the text as written when piped."""
    if output.out.is_terminal:
        from rich.markdown import Markdown

        output.out.print(Markdown(printable(text)))
    else:
        output.out.print(printable(text), markup=False, highlight=False, soft_wrap=True)


def citations(cited: Sequence[Citation], question: str, *, heading: bool = True) -> None:
    """The numbered citation list: title, uri, database, pages and the cited excerpt."""
    if not cited:
        return
    terms = highlight_terms(question)
    if heading:
        output.out.print()
        output.out.print("Citations", style="bold")
    for c in cited:
        marker, label = f"[{c.index}] ", f"  [{c.database}]"
        at = place(c.line_start, c.line_end, c.pages)
        pages = f"  {at}" if at else ""
        title = printable(c.document_title or c.document_uri or c.document_id)
        uri = printable(c.document_uri) if c.document_title and c.document_uri else ""
        # On a terminal the title and the uri share the line, each cut in its middle if need be.
        beside = cell_len(marker + label + pages) + (2 if uri else 0)
        uri_cells = min(cell_len(uri), max((output.out.width - beside) // 2, 24))
        title = _fit(title, beside + uri_cells)
        uri = _fit(uri, beside + cell_len(title), uri=True)
        head = Text(marker, style="bold")
        head.append(title, style=link_style(c.document_uri, c.pages, "cyan"))
        if uri:
            head.append("  ", style="dim")
            head.append(uri, style=link_style(c.document_uri, c.pages))
        head.append(label, style="magenta")
        head.append(pages, style="dim")
        output.out.print(head, soft_wrap=True)
        if c.stale_note:
            output.out.print(printable(f"    {c.stale_note}"), style="bold red", markup=False, soft_wrap=True)
        _excerpt(c.content, terms)
        _pictures(c.pictures)


def _excerpt(content: str, terms: Sequence[str]) -> None:
    """A cited excerpt under its heading, indented: wrapped at the terminal's width with every line
    indented alike (a hanging indent under the `[n]` marker); one line per line of it in a pipe."""
    if output.out.is_terminal:
        text = Text(excerpt(content, terms, indent=""))
        text.highlight_words(terms, style="bold yellow", case_sensitive=False)
        output.out.print(Padding(text, (0, 0, 0, 4)))
        return
    text = Text("    " + excerpt(content, terms, indent="    "))
    text.highlight_words(terms, style="bold yellow", case_sensitive=False)
    output.out.print(text, soft_wrap=True)


def not_created(names: Sequence[str]) -> None:
    """Name on stderr each database of the set that was skipped because nothing was added to it yet."""
    for name in names:
        output.err.print(
            f"(database '{name}' is not created yet: nothing added to it; searched the others)",
            style="dim",
            markup=False,
        )


def grounding_notice(result: AskResult) -> None:
    """Say on stderr when an answer is not grounded, broke the citation policy, or quotes what its
    citations do not hold."""
    if result.violation:
        output.error("warning: the model neither cited its sources nor said the answer is ungrounded")
    elif not result.grounded:
        output.err.print("(not grounded in the documents)", style="dim")
    for quote in result.quotes:
        if not quote.verified:
            shown = printable(opening(quote.text))
            output.error(f'warning: quoted passage not found in the cited chunks: "{shown}"')


QUOTE_CHARS = 60  # of a quote a warning line shows; `--json` has the whole passage


def opening(text: str, chars: int = QUOTE_CHARS) -> str:
    """The start of a passage on one line: at most `chars` characters, cut at a word where one is near,
    with "…" when something was cut."""
    flat = " ".join(text.split())
    if len(flat) <= chars:
        return flat
    cut = flat[: chars - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space >= chars * 2 // 3 else cut).rstrip(" ,;:") + "…"


def executions(runs: Sequence[Execution]) -> None:
    """Each program `analyze` ran, with its output, before the answer."""
    from rich.syntax import Syntax

    for n, ran in enumerate(runs, start=1):
        status = Text(f"── program {n} ", style="bold")
        status.append("ok" if ran.ok else "failed", style="green" if ran.ok else "red")
        output.out.print(status)
        output.out.print(Syntax(ran.code, "python", theme="ansi_dark", background_color="default"))
        for text, style in ((ran.stdout, ""), (ran.stderr, "red")):
            if text:
                output.out.print(Text(text.rstrip("\n"), style=style), soft_wrap=True)
        output.out.print()


def remembered_sources(listed: SourceList) -> None:
    """The sources a database remembers: path or URL, kind, documents, and the options added with."""
    if not listed.sources:
        output.out.print(
            f"{listed.database}: no remembered sources (haiku add-src remembers each)", style="dim"
        )
        return
    rows = []
    for s in listed.sources:
        options = [f"--meta {k}={v}" for k, v in s.metadata.items()]
        options += [f"--title {s.title}"] if s.title else []
        options += ["--follow-symlinks"] if s.follow_symlinks else []
        options += [f"--include {g}" for g in s.include] + [f"--exclude {g}" for g in s.exclude]
        counts = (s.documents, s.changed, s.missing, s.dirs_changed)
        rows.append((printable(s.source), s.kind, *counts, " ".join(options)))
    table(["source", "kind", "documents", "changed", "missing", "dirs changed", "options"], rows)
    if any(s.changed or s.missing or s.dirs_changed for s in listed.sources):
        output.err.print(
            f"some sources changed since they were read: haiku sync -d {listed.database}", style="dim"
        )


def forgotten_source(done: ForgottenSource) -> None:
    """What forgetting a source did to its documents."""
    line = f"forgot {printable(done.source)}: {done.deleted_documents} documents deleted"
    if done.kept_documents:
        line += f", {done.kept_documents} kept"
    output.out.print(line, markup=False)


def source_sync(done: SourceSync) -> None:
    """One source's sync as it finishes: each change on stdout, failures and problems on stderr."""
    if done.error:
        output.error(done.error)
    shown = api.short_ids([o.document_id for o in done.changes if o.document_id])
    for o in done.changes:
        if o.status == "failed":
            output.error(o.error or o.source)
        elif o.status == "skipped":
            output.err.print(
                f"skipped: {printable(o.source)}: {printable(o.note or '')}", markup=False, style="yellow"
            )
        else:
            to = shown.get(o.document_id or "", o.document_id)
            note = f" ({printable(o.note)})" if o.note else ""
            output.out.print(f"{o.status:9} {printable(o.source)} → {to}{note}", markup=False)


def sync_summary(report: SyncReport) -> None:
    """A database's sync in one line on stderr: counts over its sources."""
    fields = ("added", "updated", "deleted", "unchanged", "skipped", "failed")
    totals = {f: sum(getattr(s, f) for s in report.sources) for f in fields}
    summary = ", ".join(f"{n} {f}" for f, n in totals.items() if n)
    problems = sum(1 for s in report.sources if s.status != "synced")
    if problems:
        summary += (", " if summary else "") + f"{problems} source{'s' * (problems != 1)} not read"
    sources = len(report.sources)
    what = f"{sources} source{'s' * (sources != 1)}" if sources else "no remembered sources"
    output.err.print(f"{report.database}: {what}; {summary or 'nothing changed'}", markup=False, style="dim")


def watch_event(event: WatchEvent, *, show_database: bool) -> None:
    """One change a watch made, as one line on stderr (failures in red)."""
    where = f" [{event.database}]" if show_database else ""
    if event.status == "failed":
        output.error(f"{event.error or event.path}{where}")
        return
    detail = (
        f" → {api.short_ids([event.document_id])[event.document_id]}"
        if event.document_id
        else f": {event.error}"
        if event.error
        else ""
    )
    note = f" ({printable(event.note)})" if event.note else ""
    line = f"{event.status:9} {printable(event.path)}{detail}{note}{where}"
    output.err.print(line, markup=False, soft_wrap=True)
