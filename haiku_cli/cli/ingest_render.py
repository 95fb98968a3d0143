"""What an add or a rebuild says: each source's outcome, then a one-line summary on stderr."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from haiku_cli import api
from haiku_cli.cli import output
from haiku_cli.cli.output import printable, quoted_name

if TYPE_CHECKING:
    from haiku_cli.api import IngestReport, LeftOut


def ingest_report(report: IngestReport, *, verbose: bool = False) -> None:
    """What happened to each source (failures on stderr), then a one-line summary on stderr.

    The summary counts what folders held and was left out (each listed when `verbose`), and the stored
    files that left them.
    """
    shown = api.short_ids([o.document_id for o in report.outcomes if o.document_id])
    said: set[str] = set()  # a note many documents share (how to install OCR) is said once
    for o in report.outcomes:
        name = quoted_name(o.source)
        if o.status == "failed":
            # The message names the source as it is: quoted, a name with a newline stays on one line.
            output.error((o.error or o.source).replace(o.source, name))
        elif o.status == "skipped":
            line = f"skipped: {name}: {printable(o.note or '')}"
            output.err.print(line, markup=False, style="yellow", soft_wrap=True)
        else:
            kept = kept_ids(o.kept_chunk_ids)
            detail = f" ({o.chunks} chunk{'' if o.chunks == 1 else 's'}{kept})" if o.chunks else ""
            to = shown.get(o.document_id or "", o.document_id)
            output.out.print(f"{o.status:9} {name} → {to}{detail}", markup=False)
            parts = [p for p in (o.note or "").split("; ") if p and p not in said]
            said.update(parts)
            if parts:
                output.err.print(f"note: {'; '.join(parts)}", markup=False, style="yellow")
    if verbose:
        for left in report.left_out:
            line = f"left out: {quoted_name(left.source)} ({left.why}: {printable(left.detail)})"
            output.err.print(line, markup=False, style="dim", soft_wrap=True)
        for path in report.gone:
            line = f"no longer in the folder: {quoted_name(path)} (still stored)"
            output.err.print(line, markup=False, style="dim", soft_wrap=True)
    statuses = ("added", "updated", "unchanged", "skipped")
    counts = {s: sum(1 for o in report.outcomes if o.status == s) for s in statuses}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    if report.failed:
        summary += (", " if summary else "") + f"{len(report.failed)} failed"
    summary = summary or "nothing to add"
    for part in (left_out_summary(report.left_out, verbose), gone_summary(report.gone)):
        summary += f"; {part}" if part else ""
    output.err.print(f"{report.database}: {printable(summary)}", markup=False, style="dim", soft_wrap=True)


def left_out_summary(left_out: Sequence[LeftOut], verbose: bool) -> str:
    """What folders held and was not read: `273 unsupported (.png 250, .py 20), 3 ignored (by FILE)`."""
    if not left_out:
        return ""
    parts = []
    for why in ("unsupported", "ignored", "excluded"):
        # Ignored entries are counted by the ignore file that left them out, not by its pattern.
        details = Counter(
            o.detail.rsplit(": ", 1)[0] if why == "ignored" else o.detail for o in left_out if o.why == why
        )
        if details:
            shown = ", ".join(f"{d} {n}" if why == "unsupported" else d for d, n in details.most_common(5))
            more = ", …" if len(details) > 5 else ""
            by = "by " if why == "ignored" else ""
            parts.append(f"{sum(details.values())} {why} ({by}{shown}{more})")
    hint = "" if verbose else "; --verbose lists them"
    return "left out: " + ", ".join(parts) + hint


def gone_summary(gone: Sequence[str]) -> str:
    """What a re-added folder lost: `2 no longer in the folder: kept; use sync`."""
    return f"{len(gone)} no longer in the folder: kept; use sync" if gone else ""


def kept_ids(n: int | None) -> str:
    """What follows a count of chunks written again: ", N kept their ids" (nothing when none did)."""
    return f", {n} kept {'its id' if n == 1 else 'their ids'}" if n else ""
