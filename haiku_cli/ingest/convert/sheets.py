"""Spreadsheets (.xlsx) and delimited text (.csv, .tsv): each sheet a section, its rows a table under
their header, so every part of a long sheet still names its columns."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable, Iterator
from typing import Any

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.limits import over_limit
from haiku_cli.ingest.convert.packages import check_unpacked_size
from haiku_cli.ingest.convert.pdf_title import clean_metadata_title
from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.convert.text import decode_text
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment

# Up to this many columns a sheet reads as a Markdown table (the chunker repeats its header row in each
# part); wider rows each name their columns ("Name: Ada · Year: 1843"), which no cut can lose.
TABLE_COLUMNS = 8


def read_xlsx(raw: RawDocument) -> ConvertedDocument:
    """Each worksheet, in workbook order, as a section headed by its name."""
    from openpyxl import load_workbook

    check_unpacked_size(raw.data, raw.label, raw.limits, "XLSX")
    try:
        book = load_workbook(io.BytesIO(raw.data), read_only=True, data_only=True)
    except Exception as exc:  # zipfile, lxml and openpyxl raise a variety of errors on damaged packages
        raise ConversionError(f"{raw.label}: corrupt XLSX ({type(exc).__name__})") from exc
    try:
        budget = _Budget(raw.label, raw.limits)
        sections = []
        for sheet in book.worksheets:
            body = render_rows(sheet.iter_rows(values_only=True), budget)
            if body:
                sections.append(f"## {sheet.title}\n\n{body}")
        title = clean_metadata_title(book.properties.title)
    except ConversionError:
        raise
    except Exception as exc:
        raise ConversionError(f"{raw.label}: corrupt XLSX ({type(exc).__name__})") from exc
    finally:
        book.close()
    text = "\n\n".join(sections)
    return ConvertedDocument(uri=raw.uri, title=title or raw.fallback_title, segments=[Segment(text)])


def read_delimited(raw: RawDocument) -> ConvertedDocument:
    """A CSV or TSV file as one table under its first row."""
    notes: list[str] = []
    text = decode_text(raw.data, raw.label, raw.charset, notes)
    try:
        dialect: Any = csv.Sniffer().sniff(text[:2048], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if raw.label.lower().endswith(".tsv") else csv.excel
    try:
        body = render_rows(csv.reader(io.StringIO(text), dialect), _Budget(raw.label, raw.limits))
    except csv.Error as exc:
        raise ConversionError(f"{raw.label}: malformed CSV ({exc})") from exc
    return ConvertedDocument(
        uri=raw.uri, title=raw.fallback_title, segments=[Segment(body)], notes=tuple(notes)
    )


class _Budget:
    """The `[ingest] max_text_mb` a sheet's text may take, counted as rows are read, so a huge sheet is
    refused while reading rather than after."""

    def __init__(self, label: str, limits: IngestSettings) -> None:
        self.label = label
        self.limits = limits
        self.left = int(limits.max_text_mb * 2**20)

    def spend(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            limit = self.limits.max_text_mb
            raise ConversionError(
                over_limit(self.label, int(limit * 2**20) + 1, "max_text_mb", limit, "text of more than ")
            )


def render_rows(rows: Iterable[Iterable[Any]], budget: _Budget) -> str:
    """Rows under the first non-empty one (their header) as a table, or as records when wide."""
    cleaned = _non_empty(rows)
    header = next(cleaned, None)
    if header is None:
        return ""
    names = [name or f"column {i + 1}" for i, name in enumerate(header)]
    table = len(names) <= TABLE_COLUMNS
    out = ["| " + " | ".join(names) + " |", "|" + " --- |" * len(names)] if table else []
    rows_read = 0
    for row in cleaned:
        line = _row(row, names, table)
        budget.spend(len(line) + 1)
        out.append(line)
        rows_read += 1
    return "\n".join(out) if rows_read else " · ".join(header)


def _row(row: list[str], names: list[str], table: bool) -> str:
    if table:
        cells = row[: len(names)] + [""] * (len(names) - len(row))
        extra = [c for c in row[len(names) :] if c]  # cells past the header's columns
        return "| " + " | ".join(cells) + " |" + (" " + " · ".join(extra) if extra else "")
    named = (f"{names[i] if i < len(names) else f'column {i + 1}'}: {v}" for i, v in enumerate(row) if v)
    return "- " + " · ".join(named)


def _non_empty(rows: Iterable[Iterable[Any]]) -> Iterator[list[str]]:
    for row in rows:
        cells = [_cell(value) for value in row]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            yield cells


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, dt.datetime) and value.time() == dt.time():
        value = value.date()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return " ".join(str(value).split()).replace("|", "\\|")


XLSX = Converter(
    name="xlsx",
    read=read_xlsx,
    suffixes=(".xlsx", ".xlsm"),
    media_types=(
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.ms-excel.sheet.macroEnabled.12",
    ),
    sniff=lambda data: data.startswith(b"PK\x03\x04") and b"xl/workbook.xml" in data,
)
DELIMITED = Converter(
    name="csv",
    read=read_delimited,
    suffixes=(".csv", ".tsv"),
    media_types=("text/csv", "text/tab-separated-values"),
    text=True,
)
