"""`haiku help [TOPIC]`: the docs pages, shipped inside the package, read offline."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_help_prints_the_json_page(cli) -> None:
    result = cli("help", "json")
    assert result.exit_code == 0
    assert result.stdout == (DOCS / "json.md").read_text(encoding="utf-8")  # `> json.md` is the page


def test_help_lists_every_page_as_a_topic(cli) -> None:
    result = cli("help")
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.stdout.splitlines()]
    pages = {p.stem for p in DOCS.glob("*.md")} - {"index"}
    assert sorted(listed) == sorted(pages)
    assert listed[:2] == ["install", "ingest"]  # the reading order of docs/index.md


def test_an_unknown_topic_names_the_topics(cli) -> None:
    result = cli("help", "jsn")
    assert result.exit_code == 1
    assert "no help topic 'jsn'" in result.stderr and "json" in result.stderr
    assert result.stdout == ""


def test_options_point_at_help_topics_not_at_files_a_pip_install_lacks(cli) -> None:
    shown = " ".join(cli("search", "--help").stdout.split())
    assert "haiku help json" in shown and "docs/" not in shown


def test_the_docs_are_one_real_folder_the_wheel_and_the_site_both_take() -> None:
    # A link in git is a text file in a Windows checkout (core.symlinks=false): the pages are one real folder,
    # the docs site is built from it, and setuptools maps it into the wheel as the haiku_cli.docs package.
    assert DOCS.is_dir() and not DOCS.is_symlink() and not (ROOT / "haiku_cli" / "docs").exists()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert config["package-dir"] == {"haiku_cli.docs": "docs"}
    assert config["package-data"]["haiku_cli.docs"] == ["*.md"]
    assert "docs_dir: docs" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8").splitlines()


def test_the_wheel_lists_every_package() -> None:
    # pyproject lists the packages (the docs are mapped in from outside haiku_cli/): a new one must be named.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = {
        str(p.parent.relative_to(ROOT)).replace("/", ".") for p in (ROOT / "haiku_cli").rglob("__init__.py")
    }
    assert sorted(config["packages"]) == sorted(found | {"haiku_cli.docs"})


def test_a_built_wheel_carries_the_pages(tmp_path: Path) -> None:
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        pytest.skip(f"no wheel could be built here: {built.stderr.strip()[-200:]}")
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {Path(n).name for n in archive.namelist() if n.startswith("haiku_cli/docs/")}
    assert shipped == {p.name for p in DOCS.glob("*.md")}


def test_git_tracks_no_symbolic_links() -> None:
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    assert [line for line in listed.stdout.splitlines() if line.startswith("120000 ")] == []


def test_every_command_help_names_its_help_topic(cli) -> None:
    import typer

    from haiku_cli.cli.app import app
    from haiku_cli.cli.help_command import topics

    known = dict(topics())
    root = typer.main.get_command(app)
    paths = []
    for name in root.list_commands(None):  # type: ignore[attr-defined]
        command = root.get_command(None, name)  # type: ignore[attr-defined]  # loads its module
        if hasattr(command, "commands"):  # a group: tag, config
            paths += [[name, sub] for sub in command.commands]
        elif name != "help":
            paths.append([name])
    assert len(paths) > 20
    for path in paths:
        last = cli(*path, "--help").stdout.rstrip().splitlines()[-1].split()
        assert last[:3] == ["More:", "haiku", "help"] and last[3] in known, path


def test_nothing_names_a_page_under_the_package() -> None:
    # The pages are docs/NAME.md in a checkout; haiku_cli/docs exists only inside a wheel.
    texts = [
        ROOT / "README.md",
        ROOT / "pyproject.toml",
        *DOCS.glob("*.md"),
        *(ROOT / "haiku_cli").rglob("*.py"),
    ]
    found = [str(p.relative_to(ROOT)) for p in texts if "haiku_cli/docs/" in p.read_text("utf-8")]
    assert found == []
