"""Pictures and models: search results carry the pictures of their hits, compaction keeps those of cited
evidence, and only our labelled pictures are ever taken out of a request."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import BinaryContent, ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from haiku_cli.capabilities import CitationPolicy, EvidenceCompaction, HaikuDeps, RetrievalCapability
from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.compaction import CAPSULE_HEADING, capsule_pictures
from haiku_cli.capabilities.picture_parts import tag
from haiku_cli.databases import operations
from haiku_cli.databases.pictures import PictureKey
from haiku_cli.databases.workspace import Workspace
from tests.capabilities.script import Script, Step, call, search, text
from tests.support.pictures import png

CHART = "# Sales chart\n\nThe sales chart shows quarterly revenue.\n\n![Quarterly revenue bars](chart.png)\n"
PLAN = "# Office map\n\nThe office map shows the floors of the building.\n\n![Floor plan](plan.png)\n"


@pytest.fixture
def figs(tmp_path: Path, write_config, workspace) -> Workspace:
    """A database `figs` of two Markdown documents, each with one picture (both `image-1`)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "chart.md").write_text(CHART)
    (folder / "chart.png").write_bytes(png(64, 48, "red"))
    (folder / "plan.md").write_text(PLAN)
    (folder / "plan.png").write_bytes(png(64, 48, "green"))
    write_config(f'[databases]\nfigs = "{tmp_path / "figs.lancedb"}"\n')
    ws = workspace()
    report = anyio.run(
        lambda: operations.add_sources(
            ws,
            ws.select_one(["figs"]),
            [str(folder / n) for n in ("chart.md", "plan.md")],
            title=None,
            metadata={},
        )
    )
    assert [o.status for o in report.outcomes] == ["added", "added"]
    return ws


def items(messages: Sequence[ModelMessage], tool: str = "search") -> list[list[object]]:
    """The content of each return of `tool`, as a list of items."""
    return [
        part.content if isinstance(part.content, list) else [part.content]
        for m in messages
        if isinstance(m, ModelRequest)
        for part in m.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == tool
    ]


def images(messages: Sequence[ModelMessage]) -> list[BinaryContent]:
    found = []
    for m in messages:
        if isinstance(m, ModelRequest):
            for part in m.parts:
                content = part.content if isinstance(part, ToolReturnPart | UserPromptPart) else None
                found += (
                    [c for c in content or [] if isinstance(c, BinaryContent)]
                    if isinstance(content, list)
                    else []
                )
    return found


def cite_first_hit(messages: list[ModelMessage]) -> object:
    latest = items(messages)[-1][0]
    assert isinstance(latest, str)
    return call(("cite", {"chunk_ids": re.findall(r"^\[([0-9a-f-]{36})\]", latest, re.MULTILINE)[:1]}))


def agent(ws: Workspace, script: Script, *, vision: bool = True, compaction: bool = False) -> Agent:
    model = FunctionModel(script._respond, profile={"supports_image_input": vision})
    capabilities = [RetrievalCapability(ws, limit=1), CitationPolicy()]
    if compaction:
        capabilities.append(EvidenceCompaction())
    return Agent(model, deps_type=HaikuDeps, capabilities=capabilities)


def test_search_results_carry_each_hit_picture_after_its_tagged_label(figs: Workspace) -> None:
    script = Script(*grounded("sales chart revenue"))
    agent(figs, script).run_sync("What does the chart show?", deps=HaikuDeps())
    [content] = items(script.seen[1])
    assert isinstance(content[0], str) and content[0].startswith("Results for")
    label, image = content[1:]
    doc = re.search(r'document="([^"]+)"', str(label))
    assert doc is not None
    assert str(label).startswith("Picture image-1 of 'Sales chart' (database figs): Quarterly revenue bars ")
    assert tag(PictureKey("figs", doc.group(1), "image-1")) in str(label)
    assert isinstance(image, BinaryContent) and image.media_type == "image/png"
    assert image.data == png(64, 48, "red")


def test_a_text_only_model_gets_the_label_and_caption_without_bytes(figs: Workspace) -> None:
    script = Script(*grounded("sales chart revenue"))
    agent(figs, script, vision=False).run_sync("What does the chart show?", deps=HaikuDeps())
    [content] = items(script.seen[1])
    assert (
        len(content) == 2
        and "Quarterly revenue bars" in str(content[1])
        and "haiku-picture" in str(content[1])
    )
    assert images(script.seen[1]) == []


def test_model_images_off_sends_labels_alone_to_a_model_that_claims_to_read_them(
    figs: Workspace, tmp_path: Path, write_config, workspace
) -> None:
    write_config(f'[databases]\nfigs = "{tmp_path / "figs.lancedb"}"\n\n[model]\nimages = false\n')
    script = Script(*grounded("sales chart revenue"))
    agent(workspace(), script).run_sync("What does the chart show?", deps=HaikuDeps())
    [content] = items(script.seen[1])
    assert len(content) == 2 and "Quarterly revenue bars" in str(content[1])
    assert images(script.seen[1]) == []


def grounded(query: str) -> list[Step]:
    return [search(query), cite_first_hit, text("Answer [1].")]


def declared(answer: str) -> list[Step]:
    return [call(("cite", {"chunk_ids": []})), text(answer)]


def test_compaction_re_attaches_the_pictures_of_cited_evidence_once_each_with_fresh_labels(
    figs: Workspace,
) -> None:
    script = Script(*grounded("sales chart revenue"), *grounded("office map floors"), *declared("Both."))
    bot = agent(figs, script, compaction=True)
    deps, history = HaikuDeps(), []
    for question in ("What does the chart show?", "And the map?", "Compare them."):
        history = bot.run_sync(question, deps=deps, message_history=history).all_messages()
    request = script.seen[6]
    capsule = next(c for c in items(request) if CAPSULE_HEADING in str(c[0]))
    # Two pictures, both `image-1` of their own document: each its label, then its image.
    labels = [c for c in capsule[1:] if isinstance(c, str)]
    assert [isinstance(c, BinaryContent) for c in capsule[1:]] == [False, True, False, True]
    assert {re.search(r"of '([^']+)'", lab).group(1) for lab in labels} == {"Sales chart", "Office map"}  # type: ignore[union-attr]
    assert all('reference="image-1"' in lab for lab in labels)
    # The earlier searches are receipts now: the request holds those two images and no others.
    assert len(images(request)) == 2
    assert len(images(history)) == 2  # the stored history is left as it was (one per search)


def test_a_picture_whose_document_was_deleted_is_left_out_label_and_all(figs: Workspace) -> None:
    script = Script(*grounded("sales chart revenue"), *declared("Nothing."))
    bot = agent(figs, script, compaction=True)
    deps = HaikuDeps()
    history = bot.run_sync("What does the chart show?", deps=deps).all_messages()
    (citation,) = bot_citations(deps)
    anyio.run(lambda: operations.delete_document(figs, figs.select_one(["figs"]), citation.document_id))
    bot.run_sync("Anything else?", deps=deps, message_history=history)
    capsule = next(c for c in items(script.seen[3]) if CAPSULE_HEADING in str(c[0]))
    assert capsule == [capsule[0]] and isinstance(capsule[0], str)  # the capsule text alone
    assert images(script.seen[3]) == []


def bot_citations(deps: HaikuDeps) -> list[Citation]:
    from haiku_cli.capabilities import EvidenceState

    return deps.get("retrieval", EvidenceState).citations  # of the answer just given


def test_only_our_tag_with_an_image_after_it_is_ours_in_user_messages(figs: Workspace) -> None:
    script = Script(*grounded("sales chart revenue"), *declared("Seen."))
    bot = agent(figs, script, compaction=True)
    deps = HaikuDeps()
    history = bot.run_sync("What does the chart show?", deps=deps).all_messages()
    mine = BinaryContent(png(40, 40, "yellow"), media_type="image/png")
    ours = BinaryContent(png(40, 40, "blue"), media_type="image/png")
    quoted = "Picture image-1 of 'Sales chart' (database figs): Quarterly revenue bars"  # our wording
    history.append(
        ModelRequest(
            parts=[UserPromptPart([quoted, mine, f"Copied: {tag(PictureKey('figs', 'x', 'y'))}", ours])]
        )
    )
    history.append(_answer("Noted."))
    bot.run_sync("What about these?", deps=deps, message_history=history)
    request = script.seen[3]
    sent = [
        c
        for m in request
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
        for c in (p.content if isinstance(p.content, list) else [])
    ]
    data = [c.data for c in sent if isinstance(c, BinaryContent)]
    assert mine.data in data and quoted in sent  # the user's own picture under our wording is kept
    assert ours.data not in data  # ours (tag + image) is dropped: cited pictures come back beside the capsule


def _answer(words: str):
    from pydantic_ai.messages import ModelResponse, TextPart

    return ModelResponse(parts=[TextPart(words)])


def test_one_figure_cited_through_overlapping_chunks_is_attached_once() -> None:
    marker = "![Figure 2](picture:p3-1)"
    cited = [
        Citation(index=i, database="d", document_id="doc", chunk_id=f"c{i}", content=f"part {i} {marker}")
        for i in (1, 2)
    ]
    other = Citation(index=3, database="d", document_id="doc2", chunk_id="c3", content=marker)
    from haiku_cli.capabilities.state import EarlierCitation, EvidenceState

    state = EvidenceState(earlier=[EarlierCitation(answer=1, citation=c) for c in [*cited, other]])
    owner = object()
    wanted = capsule_pictures([(owner, state)], [("q", [*cited, other])])  # type: ignore[list-item]
    assert [k for k, _, _ in wanted] == [PictureKey("d", "doc", "p3-1"), PictureKey("d", "doc2", "p3-1")]


def test_the_capsule_builder_takes_fetched_pictures_and_does_no_io() -> None:
    from pydantic_ai.messages import ToolCallPart

    from haiku_cli.capabilities.compaction import _Earlier, compact

    asked = ModelRequest(parts=[UserPromptPart("First?")])
    called = _answer("")
    called.parts = [ToolCallPart("search", {"query": "q"}, tool_call_id="c1")]
    returned = ModelRequest(
        parts=[
            ToolReturnPart(
                "search",
                ["Results", "old label", BinaryContent(b"x", media_type="image/png")],
                tool_call_id="c1",
            )
        ]
    )
    now = ModelRequest(parts=[UserPromptPart("Second?")])
    fresh = ["Picture p1-1 ... <haiku-picture/>", BinaryContent(png(), media_type="image/png")]
    # A plain function of messages, positions and already-fetched pictures: no workspace, no await.
    out = compact([asked, called, returned, now], [_Earlier(2, 0, "[receipt]")], "CAPSULE", fresh)
    assert out[2].parts[0].content == ["[receipt]\n\nCAPSULE", *fresh]
    assert returned.parts[0].content[0] == "Results"  # the history itself is untouched


def test_our_tag_with_no_image_after_it_is_the_users_text_and_reaches_the_model(figs: Workspace) -> None:
    # A user pastes a label (tag and all) a text-only model was shown, then asks about it in words: no
    # image follows the tag, so nothing of it is ours to take out.
    script = Script(*grounded("sales chart revenue"), *declared("Seen."))
    bot = agent(figs, script, compaction=True)
    deps = HaikuDeps()
    history = bot.run_sync("What does the chart show?", deps=deps).all_messages()
    pasted = f"Picture image-1 of 'Sales chart' (database figs) {tag(PictureKey('figs', 'x', 'image-1'))}"
    asked = "Which quarter had the tallest bar in that picture?"
    history.append(ModelRequest(parts=[UserPromptPart([pasted, asked])]))
    history.append(_answer("Noted."))
    bot.run_sync("And then?", deps=deps, message_history=history)
    sent = [
        c
        for m in script.seen[3]
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
        for c in (p.content if isinstance(p.content, list) else [])
    ]
    assert pasted in sent and asked in sent
