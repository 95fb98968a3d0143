"""The settings model: every key the config file may hold, with defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Strict(BaseModel):
    # Unknown keys are a typo the user wants to hear about, not something to ignore; `inf` and `nan` (valid
    # TOML floats) are no sensible limit, weight or timeout.
    # defer_build: a command validates one `Settings` (one schema holding every section) instead of
    # compiling a validator per section at import; a section's own validator is built on first direct use.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


def _defaults(section: type[_Strict]) -> Any:
    # A section left out of the file holds its defaults, which need no validation; constructing it
    # directly spares compiling that section's own validator.
    return Field(default_factory=section.model_construct)


class DatabaseSettings(_Strict):
    """One named database: a local path or a URI, with optional object-store options."""

    uri: str
    storage_options: dict[str, str] = Field(default_factory=dict)
    read_only: bool = False

    @field_validator("uri")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a database needs a path or URI; it is empty")
        return value

    @field_validator("storage_options", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        return _options_text(value)


def _options_text(value: Any) -> Any:
    # LanceDB wants strings; TOML users naturally write `allow_http = true` or `timeout = 30`. A table,
    # an array or a date is left as it is, for validation to refuse rather than pass on its Python repr.
    if isinstance(value, dict):
        return {k: _option_text(v) for k, v in value.items()}
    return value


def _option_text(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, int | float) else value


def _not_empty(value: str | None) -> str | None:
    # `name = ""` reads as "not set" in one place and as a bad model string in another: say so at load.
    if value is not None and not value.strip():
        raise ValueError("it is empty; give a value or leave the key out for the default")
    return value


class EmbedderSettings(_Strict):
    """Which embedding model new databases are written with."""

    model: str | None = None  # None: the bundled all-MiniLM-L6-v2
    base_url: str | None = None
    # Each request to a remote embedding server: a server that accepts and never answers fails the command.
    timeout_seconds: float = Field(default=120.0, gt=0)

    _set = field_validator("model", "base_url")(_not_empty)


class ModelSettings(_Strict):
    """The language model used by `ask` and `analyze`."""

    name: str | None = None  # any pydantic-ai model string, e.g. "openai:gpt-4o"
    base_url: str | None = None
    search_budget: int = Field(default=5, ge=1)
    # Each attempt at a model request (one retry follows a failed one); a stalled server fails the command.
    timeout_seconds: float = Field(default=180.0, gt=0)
    # Whether the model reads images: false for a text-only model behind an OpenAI-compatible server,
    # which would refuse a request holding one; pictures then go as their labels alone.
    images: bool = True

    _set = field_validator("name", "base_url")(_not_empty)


# LanceDB's limit is a C integer (3 x limit candidates past 2**31 overflow it); a longer list is a listing,
# which `haiku list` pages through. `--limit` and `[search] limit` share this bound.
MAX_SEARCH_LIMIT = 10_000


class SearchSettings(_Strict):
    """Search defaults."""

    limit: int = Field(default=10, ge=1, le=MAX_SEARCH_LIMIT)
    vector_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    # Characters of neighbouring text each hit brings the model (`ask`, `analyze`, `chat`): half before,
    # half after, from the same document; 0 sends the chunks alone.
    context_chars: int = Field(default=400, ge=0, le=20_000)


class SandboxSettings(_Strict):
    """Limits on code run by `analyze`."""

    timeout_seconds: float = Field(default=10.0, gt=0)
    memory_mb: int = Field(default=256, gt=0)
    max_output_chars: int = Field(default=20_000, gt=0)
    max_executions: int = Field(default=10, ge=1)


class StorageSettings(_Strict):
    """How long to wait on storage: another writer, and an object store's requests."""

    # A second writer waits this long for the first to finish (0: fail at once, exit 3).
    write_wait_seconds: float = Field(default=120.0, ge=0)
    # Each object-store request (connect + answer); a stalled server fails the command instead of hanging.
    timeout_seconds: float = Field(default=30.0, gt=0)
    # An object-store writer's lease: unrenewed this long, its holder is presumed dead and is taken over.
    lease_seconds: float = Field(default=60.0, ge=1)


class IngestSettings(_Strict):
    """What one source may cost to read (a source over a limit is skipped with the limit named), and how
    often an add commits."""

    # Bytes read from one file or download, and what a DOCX may hold once decompressed.
    max_file_mb: float = Field(default=64.0, gt=0)
    # A DOCX's XML once decompressed: it is parsed in memory at about 20 bytes per byte.
    max_docx_xml_mb: float = Field(default=20.0, gt=0)
    # One stream of a PDF's page content once decompressed: PDFium inflates a page's whole to read it.
    max_pdf_stream_mb: float = Field(default=64.0, gt=0)
    # The text of one document once converted: indexing it holds about 12 bytes per character.
    max_text_mb: float = Field(default=8.0, gt=0)
    # Pictures: a larger one is scaled down to this many pixels (one declaring over 25 times as many, as
    # a decompression bomb does, is skipped); one still over max_picture_mb once encoded is skipped.
    max_picture_pixels: int = Field(default=2_000_000, gt=0)
    max_picture_mb: float = Field(default=4.0, gt=0)
    max_pictures: int = Field(default=100, ge=0)  # per document; 0 stores none
    # OCR (the `ocr` extra): "auto" reads PDF pages without a usable text layer and image files, "always"
    # every PDF page too (its text layer set aside), "off" none. HAIKU_OCR overrides.
    ocr: Literal["auto", "off", "always"] = "auto"
    # Recognising one page's lines stops after this long; what was read by then is kept, with a note.
    ocr_page_seconds: float = Field(default=60.0, gt=0)
    # An add commits its documents in groups of this many chunks, or after this many seconds of work:
    # a Ctrl-C keeps every document a commit held whole (fewer commits cost less memory in a big add).
    commit_chunks: int = Field(default=8192, gt=0)
    commit_seconds: float = Field(default=30.0, gt=0)


class RaySettings(_Strict):
    """`add-src --engine ray`: which Ray cluster, and the size below which an add stays in this process."""

    address: str | None = None  # None: RAY_ADDRESS, else a cluster running here, else a new local one
    # Sources found totalling less than this run here: starting and feeding a cluster costs seconds.
    min_mb: float = Field(default=16.0, ge=0)
    # How many deaths of its worker process or node (its actor's) a call's work survives, done again.
    max_retries: int = Field(default=3, ge=0)
    # Workers write new documents' chunk rows as Lance fragments, committed by the add in one go; false:
    # they send the rows to the command's process, which writes them (one writer's CPU then caps the add).
    fragments: bool = True


MIN_TOKEN_CHARS = 16  # a shorter bearer token could be guessed


class SourceSettings(_Strict):
    """`[sources."s3://bucket/prefix/"]`: how sources under this prefix are read (endpoint, region, keys)."""

    storage_options: dict[str, str] = Field(default_factory=dict)

    @field_validator("storage_options", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        return _options_text(value)


class McpSettings(_Strict):
    """`haiku mcp`: the bearer token every `--http` request must carry (none: no token is asked for), and
    whether each search first syncs the sources that changed (`--sync-before-search`)."""

    http_token: str | None = Field(default=None, min_length=MIN_TOKEN_CHARS)  # HAIKU_MCP_TOKEN overrides
    sync_before_search: bool = False


class DaemonSettings(_Strict):
    """The background process that answers read commands (docs/daemon.md)."""

    auto: bool = True  # a read command that finds none starts one (HAIKU_NO_DAEMON=1 turns it off too)
    idle_minutes: float = Field(default=15.0, gt=0)  # one started so exits after this long unasked


class ServerSettings(_Strict):
    """Long-lived processes (`haiku mcp`, `haiku serve`, the daemon): what they keep open."""

    # Each open database holds its tables' manifests and index pages cached; beyond this many, the least
    # recently searched one is closed (and opened again when next searched).
    max_open_databases: int = Field(default=8, ge=1)


class Settings(_Strict):
    """The whole configuration file."""

    databases: dict[str, DatabaseSettings] = Field(default_factory=dict)
    embedder: EmbedderSettings = _defaults(EmbedderSettings)
    model: ModelSettings = _defaults(ModelSettings)
    search: SearchSettings = _defaults(SearchSettings)
    sandbox: SandboxSettings = _defaults(SandboxSettings)
    storage: StorageSettings = _defaults(StorageSettings)
    ingest: IngestSettings = _defaults(IngestSettings)
    mcp: McpSettings = _defaults(McpSettings)
    ray: RaySettings = _defaults(RaySettings)
    daemon: DaemonSettings = _defaults(DaemonSettings)
    server: ServerSettings = _defaults(ServerSettings)
    # Sources on object storage, by URI prefix (the longest matching one applies; none: the database's).
    sources: dict[str, SourceSettings] = Field(default_factory=dict)

    @field_validator("databases", mode="before")
    @classmethod
    def _short_form(cls, value: Any) -> Any:
        # `notes = "~/notes.lancedb"` is shorthand for `notes = { uri = "~/notes.lancedb" }`.
        if isinstance(value, dict):
            return {k: {"uri": v} if isinstance(v, str) else v for k, v in value.items()}
        return value
