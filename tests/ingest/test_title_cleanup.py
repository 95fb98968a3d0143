"""PDF titles without archive stamps and footnote marks, joined when broken over lines, not a lone heading."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku_cli.ingest.convert import convert_file
from haiku_cli.ingest.convert.title_cleanup import strip_stamps, tidy
from tests.ingest.helpers import make_pdf


@pytest.mark.parametrize(
    ("title", "following", "expected"),
    [
        ("arXiv:math/9404236v1 [math.HO] 1 Apr 1994", [], None),
        ("[inria-00555588, v1] Beyond Lamport's Happened-Before", [], "Beyond Lamport's Happened-Before"),
        ("Consensus in the Cloud doi:10.1145/2699681 ", [], "Consensus in the Cloud"),
        ("Commit Protocol \u2217", [], "Commit Protocol"),
        ("WARN Report*", [], "WARN Report"),
        (
            "Kelips\u2217 :",
            [
                "Building an Efficient and Stable P2P DHT Through Increased Memory",
                "Indranil Gupta1, Ken Birman2",
            ],
            "Kelips: Building an Efficient and Stable P2P DHT Through Increased Memory",
        ),
        (
            "SIFT: Design and Analysis of a Fault-Tolerant",
            ["Computer for Aircraft Control", "JOHN H. WENSLEY, LESLIE LAMPORT, JACK GOLDBERG"],
            "SIFT: Design and Analysis of a Fault-Tolerant Computer for Aircraft Control",
        ),
        ("The Design of a Practical System for", ["Fault-Tolerant Virtual Machines"], None),
        ("Problem:", [], None),
        ("History", [], None),
        ("Abstract", [], None),
        ("Paxos Made Simple", ["Leslie Lamport"], "Paxos Made Simple"),
        ("Time, Clocks, and the Ordering of Events", ["in a Distributed System"], None),
    ],
)
def test_titles_are_tidied(title: str, following: list[str], expected: str | None) -> None:
    if expected is None and following:
        expected = f"{title} {following[0]}"  # unfinished: joined to the next line
    assert tidy(title, following) == expected


def test_a_lone_author_line_is_not_joined() -> None:
    assert tidy("Design of a Fault-Tolerant", ["J. Wensley"]) == "Design of a Fault-Tolerant"
    assert tidy("Protocols for", ["leslie@example.com"]) == "Protocols for"


def test_stamps_go_from_running_text() -> None:
    assert strip_stamps("arXiv:1706.03762v5 [cs.CL] 6 Dec 2017 Attention Is All You Need") == (
        "Attention Is All You Need"
    )


def _pdf(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "paper-file-name.pdf"
    path.write_bytes(make_pdf(["\n".join(lines)], sizes={(0, 0): 20}))
    return path


def test_a_pdf_title_broken_over_lines_is_joined(tmp_path: Path) -> None:
    path = _pdf(
        tmp_path, ["Kelips* :", "Building a Stable DHT Through Increased Memory", "Indranil Gupta", "Body."]
    )
    assert convert_file(path).title == "Kelips: Building a Stable DHT Through Increased Memory"


def test_a_pdf_whose_largest_type_is_a_lone_heading_takes_its_file_name(tmp_path: Path) -> None:
    assert convert_file(_pdf(tmp_path, ["History", "The body of the text follows here."])).title == (
        "paper-file-name"
    )
