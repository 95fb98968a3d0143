"""The front door: the README is short, its Python example runs, and every docs page is reachable."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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
    assert 10 <= len(example.strip().splitlines()) <= 25
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
        named |= set(re.findall(r"(tests/[\w/]+\.py)(?:::(\w+))?", page.read_text(encoding="utf-8")))
    assert len(named) > 40
    for file, name in sorted(named):
        source = (ROOT / file).read_text(encoding="utf-8")
        assert not name or re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), f"{file}::{name}"
