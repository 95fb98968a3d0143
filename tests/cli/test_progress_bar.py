"""The add progress bar as a terminal shows it: files read of files found, chunks, the file being read."""

from __future__ import annotations

import io
import re

from rich.console import Console

from haiku_cli.cli import output


def _rendered(monkeypatch, steps, *, width: int = 160, description: str = "adding to notes") -> str:
    screen = io.StringIO()
    monkeypatch.setattr(
        output, "err", Console(file=screen, force_terminal=True, width=width, color_system=None)
    )
    with output.progress_bar(description) as bar:
        steps(bar)
        bar._progress.refresh()
        shown = screen.getvalue()
    return shown.replace("\r", "\n").splitlines()[-1]


def test_an_add_shows_files_of_all_found_then_chunks_and_the_file_being_read(monkeypatch) -> None:
    def steps(bar) -> None:
        bar.add_files(751)
        for name in ("/home/me/papers/a.pdf", "/home/me/papers/b.pdf"):
            bar.reading(name)
            bar.add_total(40)
            bar.file_done()
        bar.advance(25)
        bar.reading("/home/me/papers/a-very-long-folder-name/with/a/long/file-name-at-the-end.pdf")

    line = _rendered(monkeypatch, steps)
    assert "adding to notes" in line and "2/751 files  25/80 chunks" in line
    assert line.rstrip().endswith(" …me/with/a/long/file-name-at-the-end.pdf")  # its end, 40 characters


def test_at_80_columns_the_database_name_the_times_and_the_figures_stay_whole(monkeypatch) -> None:
    def steps(bar) -> None:
        bar.add_files(230)
        bar.reading("/home/me/books/rust-book/src/ch16-03-shared-state.md")
        bar.add_total(19_300)
        bar.file_done()
        bar.advance(8_100)

    line = _rendered(monkeypatch, steps, width=80, description="adding to rust-book").replace("\x1b[2K", "")
    assert len(line.rstrip()) <= 80, line
    assert line.startswith("adding to rust-book ") and "1/230 files  8,100/19,300 chunks" in line
    assert "0:00:0" in line and "eta " in line  # elapsed, then the time left


def test_work_without_files_counts_chunks_alone(monkeypatch) -> None:
    def steps(bar) -> None:
        bar.add_total(120)
        bar.advance(30)

    line = _rendered(monkeypatch, steps)
    assert "30/120 chunks" in line and "files" not in line


def test_a_wait_is_one_line_counting_seconds_on_a_terminal_and_one_line_piped(monkeypatch) -> None:
    import time

    why = "waiting for database 'notes': it is being written by pid 7 (haiku add-src big/)"
    for terminal in (True, False):
        screen = io.StringIO()
        console = Console(file=screen, force_terminal=terminal, width=160, color_system=None)
        monkeypatch.setattr(output, "err", console)
        notice = output.WaitNotice()
        began = time.monotonic()
        notice.start(why)
        time.sleep(1.2)  # the terminal line is redrawn with the seconds meanwhile
        notice.end()
        took = time.monotonic() - began  # 1.2 s on a quiet machine; more on a busy one
        lines = [line for line in screen.getvalue().replace("\r", "\n").splitlines() if "haiku:" in line]
        if terminal:
            last = lines[-1].replace("\x1b[2K", "").replace("\x1b[1A", "").strip()
            shown = re.fullmatch(rf"haiku: {re.escape(why)} \((\d+) s\)", last)
            assert shown is not None, last
            assert 1 <= int(shown.group(1)) <= round(took)  # the seconds waited, as long as it took
        else:
            assert lines == [f"haiku: {why}"]


def test_a_count_bar_shows_items_done_of_all_on_a_terminal_and_nothing_piped(monkeypatch) -> None:
    for terminal in (True, False):
        screen = io.StringIO()
        console = Console(file=screen, force_terminal=terminal, width=160, color_system=None)
        monkeypatch.setattr(output, "err", console)
        with output.count_bar("evaluating") as advance:
            advance(3, 76)
            advance(4, 76)
        shown = screen.getvalue().replace("\r", "\n")
        if terminal:
            assert any("evaluating" in line and "4/76" in line for line in shown.splitlines())
        else:
            assert shown == ""
