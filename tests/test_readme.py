"""The front door: the README is short, its Python example runs, and every docs page is reachable."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from pydantic_ai.models.test import TestModel

from haiku_cli import api

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
TEST_COMMAND = "pip install -e '.[test]' && pytest"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_the_readme_is_a_short_front_door() -> None:
    assert len(README.encode("utf-8")) <= 8 * 1024


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in README
    assert ci.rstrip().splitlines()[-1] == TEST_COMMAND


def test_the_readme_python_example_runs_against_the_bundled_embedder(tmp_path: Path) -> None:
    (example,) = python_blocks(README)
    assert 10 <= len([line for line in example.splitlines() if line.strip()]) <= 15
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    # In a folder of its own (it writes notes.lancedb there), with the test's config and data dir.
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["notes Herons Herons wade in shallow water to spear fish."]
    assert (tmp_path / "notes.lancedb").is_dir()


def nav_pages() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:") :]
    return re.findall(r"^  - [^:]+: ([\w.-]+\.md)$", nav, flags=re.MULTILINE)


def test_every_docs_page_is_in_the_nav_and_both_indexes_in_one_order() -> None:
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    nav = nav_pages()
    assert sorted(nav) == pages
    readme_index = README[README.index("## Documentation") :]
    in_readme = [Path(link).name for link in re.findall(r"^\d+\. \[[^\]]+\]\(([^)]+)\)", readme_index, re.M)]
    in_readme = ["benchmarks.md" if link == "README.md" else link for link in in_readme]
    site_index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    in_site = re.findall(r"^\d+\. \[[^\]]+\]\(([\w.-]+\.md)\)", site_index, flags=re.MULTILINE)
    assert in_readme == in_site == [page for page in nav if page != "index.md"]


def test_the_readme_links_resolve() -> None:
    for link in re.findall(r"\]\(([^)#:]+)\)", README):
        assert (ROOT / link).exists(), link


def test_every_test_the_docs_name_exists() -> None:
    # docs/reliability.md names the test holding each promise as tests/FILE.py::NAME.
    named = set()
    for page in (ROOT / "docs").glob("*.md"):
        named |= set(re.findall(r"(tests/[a-z0-9_/]+\.py)(?:::(\w+))?", page.read_text(encoding="utf-8")))
    assert len(named) > 40
    for file, name in sorted(named):
        source = (ROOT / file).read_text(encoding="utf-8")
        assert not name or re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), f"{file}::{name}"


def test_the_capabilities_page_example_answers_over_the_hosts_databases(tmp_path: Path, write_config) -> None:
    # The capabilities page's first block, as written (top-level await, `model` the host's), with a TestModel.
    write_config(f'[databases]\nnotes = "{tmp_path}/n.lancedb"\npapers = "{tmp_path}/p.lancedb"\n')

    async def fill() -> None:
        ws = api.Workspace.load()
        for name, text in (("notes", "Basil likes warm sun."), ("papers", "Tomatoes need deep roots.")):
            await api.add_text(ws, ws.select_one([name]), text, title=name, metadata={})

    anyio.run(fill)
    page = (ROOT / "docs" / "capabilities.md").read_text(encoding="utf-8")
    block = python_blocks(page)[0]
    code = compile(block, "capabilities.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    scope: dict = {"model": TestModel(call_tools=["search"])}

    async def run() -> None:
        await eval(code, scope)

    anyio.run(run)
    output = scope["result"].output
    assert "database: notes" in output and "database: papers" in output


@pytest.mark.parametrize(
    ("page", "heading"),
    [("README.md", "## Cheat sheet"), ("docs/index.md", "## Every command at a glance")],
)
def test_the_cheat_sheets_use_only_commands_and_options_haiku_has(cli, page: str, heading: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    block = text[text.index(heading) :].split("```sh\n", 1)[1].split("```", 1)[0]
    for line in block.splitlines():
        for part in line.split("#")[0].split(";"):
            words = shlex.split(part.strip().rstrip("&"))
            assert words[0] == "haiku", part
            command = words[1:2] if words[1:2] != ["tag"] else words[1:3]
            shown = cli(*command, "--help")
            assert shown.exit_code == 0, part
            for option in (w for w in words[2:] if w.startswith("--")):
                assert option in shown.stdout, f"{part}: {option}"


def load_run_all():
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "benchmarks" / "run_all.py")
    assert spec and spec.loader
    run_all = importlib.util.module_from_spec(spec)
    sys.modules["run_all"] = run_all  # its dataclasses look their module up
    path = list(sys.path)
    try:
        spec.loader.exec_module(run_all)  # it puts benchmarks/ on the path to import `common`
    finally:
        del sys.modules["run_all"]
        sys.modules.pop("common", None)
        sys.path[:] = path
    return run_all


def test_the_benchmark_tables_are_those_the_results_render() -> None:
    # benchmarks/README.md's tables are generated: `python benchmarks/run_all.py --render`.
    run_all = load_run_all()
    assert run_all.render() == (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    found = {r["area"] for r in run_all.load_results()}  # each of the common shape, or it exits
    assert {a.key for a in run_all.AREAS} <= found


def test_a_script_s_table_is_written_in_the_shape_the_readme_renders(tmp_path: Path, monkeypatch) -> None:
    run_all = load_run_all()
    monkeypatch.setenv("HAIKU_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["benchmarks/x.py", "--rounds", "3", "--work", "/tmp/w"])
    with run_all.result("x", "A new area", comparison="one database") as table:
        table.columns = ("figure", "value", "ratio")
        table.add("warm search p50", "2.7 ms", "1.04x")
        table.add("the check alone", "0.04 ms")
    (got,) = run_all.load_results(tmp_path)
    shown = run_all.render_table(got)
    assert "| figure | value | ratio |\n| --- | --- | --- |\n| warm search p50 | 2.7 ms | 1.04x |" in shown
    assert "| the check alone | 0.04 ms |  |" in shown
    assert f"{os.cpu_count()} CPUs" in shown and "load average" in shown
    assert "Reproduce: `python benchmarks/x.py --rounds 3`." in shown  # where files are is left out
