"""haiku's public library API: the one front door for the CLI and for host programs (MCP server, chat).

Everything here is loaded lazily on first attribute access, so `import haiku_cli.api` costs nothing
until a name is used. Names exported (stable):

Workspace and selection
    `Workspace` (settings, pool of open databases, embedder; `Workspace.load(config, embedder=...)`),
    `Selection` (the databases a command covers; from `ws.select_many(...)` / `ws.select_one(...)`),
    `Location` (one database: name, uri, storage options, read_only).

Operations (async; each is what one `haiku` command calls)
    `search(ws, selection, query, *, search_type, limit, document_filter, query_id, per_document)
    -> SearchResults` (`per_document`: one hit per document, its best chunk)
    (`search_type`: a `SearchType`, "hybrid", "vector" or "fts")
    `search_hits(ws, selection, query, ...) -> list[SearchHit]` (no skipping of databases not written yet)
    `list_documents(ws, location, *, document_filter, limit, offset) -> DocumentList`
    `get_document(ws, location, document_id) -> DocumentWithChunks` (with its pictures, without bytes)
    `get_part(ws, location, reference, *, lines=None) -> DocumentPart` (`lines` (A, B or None) from
    `parse_lines("A:B")`: those source lines of the document; else `reference` is a chunk id: its run)
    `document_pictures(ws, location, document_id) -> DocumentPictures` (with bytes),
    `write_pictures(ws, location, document_id, folder) -> WrittenPictures`,
    `visualize_chunk(ws, location, chunk_id, folder=None) -> Visualized` (a PNG per page of a PDF chunk)
    `delete_document(ws, location, document_id) -> DeletedDocument`
    `database_holding(ws, reference) -> Location` (the one configured database holding that document or
    chunk; refused naming them when several do)
    `add_text(ws, location, text, *, title, metadata) -> IngestReport`
    `add_sources(ws, location, sources, *, title, metadata, progress, include, exclude, engine="local",
    ray_address=None, on_note) -> IngestReport` (`engine="ray"`: on a Ray cluster, `haiku help scale-out`)
    `info(ws, location) -> DatabaseInfo`, `history(ws, location) -> DatabaseHistory`,
    `vacuum(ws, location) -> VacuumReport`, `rebuild(ws, location, progress) -> RebuildReport`,
    `overview(ws, selection=None) -> list[DatabaseOverview]` (every configured database, or a selection's),
    `show_config(ws) -> ResolvedConfig` (sync: the config file, data dir and settings in effect),
    `ask(ws, selection, question, *, model, document_filter) -> AskResult`,
    `analyze(ws, selection, question, *, model, document_filter) -> AnalyzeResult`,
    `parse_metadata(["k=v", ...]) -> dict`; `MAX_QUERY_CHARS` (the longest search query, in characters);
    `human_size(bytes) -> "3.6 MB"` (sizes as every command shows them);
    `short_ids(ids) -> {id: short id}` (ids as text output shows them; `get`/`delete` take them back).

Tags (a named state of a database's tables; `ws.read_at(TAG)` reads every database at it, writing none)
    `create_tag(ws, location, name) -> DatabaseTag`, `create_tag_everywhere(ws, name) -> list[DatabaseTag]`,
    `list_tags(ws, location) -> TagList`, `delete_tag(ws, location, name) -> DatabaseTag`,
    `restore_tag(ws, location, name) -> DatabaseTag` (`TagInfo`: name, created_at, versions),
    `find_tag(ws, location, name) -> DatabaseTag` (a missing database or tag fails naming it),
    `check_tag(ws, selection)` (every written database of the selection opened at `ws`'s tag, or an error).

Publishing (`haiku publish`, `haiku help sharing`; a database's consistent state copied for others to read)
    `publish(ws, location, to, *, tag=None) -> PublishReport` (`to`: a URI, a path or a configured
    database's name; only what the target lacks is copied; `unchanged` when it held this state already),
    `PublishInfo` (`DatabaseInfo.published`, `DatabaseOverview.published`: which publish a copy holds),
    `describe_publish(info) -> str`, `newer_than_reader(name, info) -> str | None` (one line when a newer
    haiku published it).

Health (`haiku doctor`)
    `check_health(ws, selection, *, fix=False) -> DoctorReport` (`databases`: a `DatabaseHealth` each, its
    `checks` a `Check` each: `check`, `status` ok/warn/fail, `detail`, `fix`, `safe_fix`, `fixed`).

Remembered sources (what `add-src` added, read again by `sync` and `watch`)
    `list_sources(ws, location) -> SourceList`,
    `forget_source(ws, location, source, *, keep_documents) -> ForgottenSource`,
    `sync(ws, locations, *, progress, on_source, engine, ray_address, on_note) -> SyncRun`,
    `writable_databases(ws) -> list[Location]`,
    `sync_changed(ws, selection, *, on_note) -> list[(database, SourceSync)]` (`search --sync`: only the
    sources whose files changed or vanished; read_only databases and published copies noted, not synced),
    `sync_before_search(ws, selection) -> list[str]` (what `mcp`/`serve --sync-before-search` run before each
    search: `sync_changed` per database, a failed one searched as it is; the notes a result carries),
    `synced_note(database, source_sync) -> str` (one line on what syncing a source first did),
    `watch(ws, locations, *, on_change, on_note, sweep_seconds, poll_seconds, debounce_ms)` (until cancelled;
    each change a `WatchEvent`).

Conversations (saved sessions; what `haiku chat` and `ask --session` run)
    `ChatHost` (`await ChatHost.open(ws, selection, session=NAME, model=...)`, then
    `await host.ask(question, on_text)`; each finished answer is saved, a failed one leaves no trace),
    `ask_in_session(ws, selection, question, *, session, model, document_filter, rescope) -> SessionAnswer`,
    `SessionStore` (`summaries() -> SessionList`, `load`, `delete`), `Session`, `SessionSummary`.

What stands after Ctrl-C (a write of documents notes how it ended: committed whole, or interrupted
keeping the documents committed whole before its last keep point)
    `write_mark() -> int`, then `writes_since(mark) -> list[WriteOutcome]` (`database`, `stored`,
    `documents`, `chunks`).

Evaluation (`haiku eval`, `haiku help eval`; QRELS a BEIR folder or a questions file)
    `evaluate(ws, selection, qrels, *, k, search_types, progress) -> RetrievalReport` (nDCG@10, MRR@10,
    recall@k, hits@k per search type, documents and chunks; `TypeSummary`, `QueryResult`, `QueryScores`),
    `compare_settings(ws, selection, qrels, "KEY=A,B", *, k, search_types, progress) -> Comparison`
    (`Difference`: paired sign and permutation tests against the first setting),
    `evaluate_answers(ws, selection, qrels, *, model, progress) -> AnswerReport` (`AnswerResult`),
    `generate_questions(ws, selection, path, count, *, model, seed, progress) -> GeneratedQuestions`.

Result types (pydantic; `model_dump(mode="json")` is the CLI's `--json`, see `haiku help json`)
    `SearchResults`, `SearchHit`, `DocumentList`, `DocumentSummary`, `DocumentRecord`, `ChunkRecord`,
    `DocumentWithChunks`, `DeletedDocument`, `IngestReport`, `SourceOutcome`, `LeftOut`, `DatabaseInfo`,
    `DatabaseHistory`, `TableVersion`, `VacuumReport`, `RebuildReport`, `DatabaseOverview`, `AskResult`,
    `SourceList`, `SourceSummary`, `ForgottenSource`, `SyncRun`, `SyncReport`, `SourceSync`,
    `AnalyzeResult`, `Citation`, `Execution`, `ResolvedConfig`, `PictureInfo`, `PictureMark`, `PictureRecord`,
    `DocumentPictures`, `WrittenPictures`, `Visualized`.

Errors (every failure meant for a user is a `HaikuError` with a one-line message and an `exit_code`)
    `HaikuError`, `InputError`, `DatabaseError`, `ModelError`, `ExitCode`; `error.hint` is a `Hint` (or
    None): the next step (list the ids, add documents first) for a front door to word as its own command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from haiku_cli.lazy_exports import exports_of, first_use_lookup

if TYPE_CHECKING:
    from haiku_cli.agents.analyze import analyze
    from haiku_cli.agents.answer_results import AnalyzeResult, AskResult
    from haiku_cli.agents.ask import ask
    from haiku_cli.capabilities.citations import Citation
    from haiku_cli.chat.host import ChatHost, SessionAnswer, ask_in_session
    from haiku_cli.chat.sessions import Session, SessionList, SessionStore, SessionSummary
    from haiku_cli.config.resolved import ResolvedConfig
    from haiku_cli.databases.fanout import MAX_QUERY_CHARS
    from haiku_cli.databases.health import DatabaseHealth, DoctorReport, check_health
    from haiku_cli.databases.holding import database_holding
    from haiku_cli.databases.log_results import (
        DatabaseHistory,
        ForgottenSource,
        SourceList,
        SourceSummary,
        SyncRun,
    )
    from haiku_cli.databases.operations import (
        add_sources,
        add_text,
        delete_document,
        forget_source,
        history,
        list_sources,
        rebuild,
        show_config,
        sync,
        vacuum,
        writable_databases,
    )
    from haiku_cli.databases.parts import DocumentPart, get_part, parse_lines
    from haiku_cli.databases.pictures import (
        DocumentPictures,
        Visualized,
        WrittenPictures,
        document_pictures,
        visualize_chunk,
        write_pictures,
    )
    from haiku_cli.databases.publishing import publish
    from haiku_cli.databases.queries import get_document, info, list_documents, overview, search, search_hits
    from haiku_cli.databases.refreshing import sync_before_search, sync_changed, synced_note
    from haiku_cli.databases.results import (
        DatabaseOverview,
        DeletedDocument,
        DocumentList,
        DocumentWithChunks,
        RebuildReport,
        SearchResults,
        VacuumReport,
    )
    from haiku_cli.databases.selection import Selection
    from haiku_cli.databases.short_ids import short_ids
    from haiku_cli.databases.snapshots import (
        DatabaseTag,
        TagList,
        check_tag,
        create_tag,
        create_tag_everywhere,
        delete_tag,
        find_tag,
        list_tags,
        restore_tag,
    )
    from haiku_cli.databases.watching import WatchEvent, watch
    from haiku_cli.databases.workspace import Workspace
    from haiku_cli.errors import DatabaseError, ExitCode, HaikuError, Hint, InputError, ModelError
    from haiku_cli.evaluation.answers import evaluate_answers
    from haiku_cli.evaluation.compare import compare as compare_settings
    from haiku_cli.evaluation.generate import GeneratedQuestions, generate_questions
    from haiku_cli.evaluation.measures import QueryScores
    from haiku_cli.evaluation.report import (
        AnswerReport,
        AnswerResult,
        Comparison,
        Difference,
        QueryResult,
        RetrievalReport,
        TypeSummary,
    )
    from haiku_cli.evaluation.retrieval_quality import evaluate
    from haiku_cli.ingest.metadata import parse_metadata
    from haiku_cli.ingest.reports import IngestReport, LeftOut, SourceOutcome, SourceSync, SyncReport
    from haiku_cli.sandbox.execution import Execution
    from haiku_cli.search.candidates import SearchType
    from haiku_cli.search.hits import SearchHit
    from haiku_cli.store.doctor import Check
    from haiku_cli.store.facts import DatabaseInfo, TableVersion
    from haiku_cli.store.heap import freeze_long_lived
    from haiku_cli.store.location import Location
    from haiku_cli.store.outcomes import WriteOutcome
    from haiku_cli.store.outcomes import mark as write_mark
    from haiku_cli.store.outcomes import since as writes_since
    from haiku_cli.store.published import PublishInfo, newer_than_reader
    from haiku_cli.store.published import describe as describe_publish
    from haiku_cli.store.records import (
        ChunkRecord,
        DocumentRecord,
        DocumentSummary,
        PictureInfo,
        PictureMark,
        PictureRecord,
    )
    from haiku_cli.store.sizes import human_size
    from haiku_cli.store.state_copy import PublishReport
    from haiku_cli.store.tags import TagInfo


_EXPORTS = exports_of(__file__)
__all__ = sorted(_EXPORTS)


__getattr__ = first_use_lookup(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return __all__
