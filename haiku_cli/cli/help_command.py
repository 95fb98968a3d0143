"""`haiku help [TOPIC]`: the documentation's pages, shipped inside the package, read offline.

The pages are the checkout's `docs/`, the docs site's source; a wheel ships them as `haiku_cli/docs`
(pyproject's package-dir), so an install from pip reads the same files a checkout does.
"""

from __future__ import annotations

import re
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated

import typer

from haiku_cli.cli import output
from haiku_cli.cli.running import add_command
from haiku_cli.errors import InputError

# The index's reading order: "1. [Title](page.md): what it covers".
_ENTRY = re.compile(r"^\d+\. \[(?P<title>[^\]]+)\]\((?P<page>[\w.-]+)\.md\)(?P<rest>.*)$", re.MULTILINE)
# A page that includes a file of the source tree (docs/benchmarks.md) names it instead.
_INCLUDE = re.compile(r'^--8<-- "(?P<path>[^":]+)(?::\w+)?"$', re.MULTILINE)


def register(app: typer.Typer) -> None:
    """Add `haiku help` to the app."""
    add_command(app, "help", help_)


def pages() -> Traversable:
    """The folder of documentation pages: inside an installed wheel, else the checkout's `docs/`."""
    shipped = files("haiku_cli") / "docs"
    if shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "docs"


def topics() -> list[tuple[str, str]]:
    """(topic, one-line description) in the documentation's reading order, then any other page."""
    folder = pages()
    found = {p.name.removesuffix(".md") for p in folder.iterdir() if p.name.endswith(".md")}
    listed: list[tuple[str, str]] = []
    for entry in _ENTRY.finditer((folder / "index.md").read_text(encoding="utf-8")):
        page = entry["page"]
        if page in found and page not in dict(listed):
            listed.append((page, entry["title"] + entry["rest"]))
    rest = sorted(found - dict(listed).keys() - {"index"})
    return listed + [(page, _title(folder / f"{page}.md")) for page in rest]


def _title(page: Traversable) -> str:
    first = page.read_text(encoding="utf-8").split("\n", 1)[0]
    return first.lstrip("# ").strip()


def page_text(topic: str) -> str:
    """One topic's page as Markdown, or an error naming the topics there are."""
    known = dict(topics())
    if topic not in known:
        raise InputError(f"no help topic {topic!r}: choose one of {', '.join(known)} (haiku help lists them)")
    text = (pages() / f"{topic}.md").read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: f"(The tables are in {m['path']} of haiku's source tree.)", text)


def help_(
    topic: Annotated[
        str | None, typer.Argument(metavar="TOPIC", help="A topic that `haiku help` lists.")
    ] = None,
) -> None:
    """Print a page of haiku's documentation, or list the topics.

    \b
    Examples:
      haiku help          the topics, in reading order
      haiku help json     every --json shape
      haiku help search | less
    """
    if topic is None:
        shown = topics()
        width = max(len(name) for name, _ in shown)
        for name, about in shown:
            output.out.print(f"{name:<{width}}  {about.lstrip(': ')}", markup=False, highlight=False)
        output.err.print("haiku help TOPIC prints one.", style="dim", markup=False)
        return
    text = page_text(topic)
    if output.out.is_terminal:  # drawn for reading; piped, the Markdown itself (`haiku help json > json.md`)
        from rich.markdown import Markdown

        output.out.print(Markdown(text))
        return
    output.out.print(text.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
