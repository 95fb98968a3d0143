"""The public front door: lazy, complete, and usable from Python without the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from haiku_cli import api
from haiku_cli.embed import Embedder, load_embedder
from tests.embed.test_remote_embedder import embedding_server

__all__ = ["embedding_server"]  # fixture: an OpenAI-compatible embeddings server on 127.0.0.1


def test_importing_the_api_loads_nothing_heavy() -> None:
    heavy = "('lancedb', 'pydantic_ai', 'numpy', 'pyarrow', 'pydantic')"
    code = f"import sys, haiku_cli.api; print(sorted(m for m in {heavy} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("name", api.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    assert getattr(api, name) is not None
    assert name in dir(api)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        api.nope  # noqa: B018


def test_an_injected_embedder_is_used_and_nothing_else_is_loaded(embedder) -> None:
    ws = api.Workspace.load(embedder=embedder)
    assert ws.embedder is embedder
    assert anyio.run(ws.resolve_embedder_spec) == ws.embedder_spec()


class _AsyncOnly(Embedder):
    """A remote embedder whose dimension must be resolved without blocking the event loop."""

    @property
    def dimension(self) -> int:
        raise AssertionError("the dimension was asked for synchronously inside the event loop")


def test_a_remote_dimension_is_resolved_asynchronously(embedding_server: str, tmp_path: Path) -> None:
    remote = load_embedder("ollama:fake-embed", base_url=embedding_server).model
    ws = api.Workspace.load(embedder=_AsyncOnly(remote, name="ollama:fake-embed"))
    loc = ws.select_one(paths=[tmp_path / "remote.lancedb"])

    async def go() -> list[list[str]]:
        await api.add_text(ws, loc, "Owls hunt at night.", title=None, metadata={})
        found = []
        for kind in ("hybrid", "vector", "auto"):
            hits = await api.search_hits(ws, api.Selection((loc,)), "owls", search_type=kind)
            found.append([h.content for h in hits])
        await api.rebuild(ws, loc, None)
        return found

    assert anyio.run(go) == [["Owls hunt at night."]] * 3


def test_add_list_page_get_and_delete_through_the_api(embedder, tmp_path: Path) -> None:
    ws = api.Workspace.load(embedder=embedder)
    loc = ws.select_one(paths=[tmp_path / "notes.lancedb"])

    async def go() -> None:
        ids = []
        for text in ("Owls hunt at night.", "Herons wade.", "Swifts sleep on the wing."):
            report = await api.add_text(ws, loc, text, title=None, metadata={})
            assert isinstance(report, api.IngestReport) and report.database == "notes"
            ids.append(report.outcomes[0].document_id)
        first = await api.list_documents(ws, loc, limit=2)
        assert first.truncated and [d.id for d in first.documents] == ids[:2]
        last = await api.list_documents(ws, loc, limit=2, offset=2)
        assert not last.truncated and [d.id for d in last.documents] == ids[2:]
        gone = await api.delete_document(ws, loc, ids[0])
        assert gone.database == "notes" and gone.document.id == ids[0] and gone.chunks == 1
        # The same workspace sees its own write at once (a long-lived host reads after writing).
        with pytest.raises(api.InputError, match=ids[0]):
            await api.get_document(ws, loc, ids[0])
        assert [d.id for d in (await api.list_documents(ws, loc)).documents] == ids[1:]

    anyio.run(go)


def test_list_refuses_a_zero_limit(embedder, tmp_path: Path) -> None:
    ws = api.Workspace.load(embedder=embedder)
    loc = ws.select_one(paths=[tmp_path / "x.lancedb"])
    with pytest.raises(api.InputError) as info:
        anyio.run(lambda: api.list_documents(ws, loc, limit=0))
    # Named as the Python argument: a library caller has no --limit (the CLI words it so).
    assert str(info.value) == "limit must be at least 1" and info.value.argument == "limit"
