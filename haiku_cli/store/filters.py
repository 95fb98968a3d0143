"""What a `--filter` may say beyond LanceDB's SQL: `metadata.KEY` conditions and dates written as text.

Metadata is stored as a JSON string, so LanceDB cannot reach into it (`type Utf8 is not Struct`), and a
timestamp column refuses a string literal (`could not convert to literal of type Timestamp`). Both are
written here into SQL LanceDB runs: a metadata condition becomes a search for the key and value as
`json.dumps` wrote them, a date string becomes a UTC `timestamp '...'` literal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime

from haiku_cli.errors import InputError

# What a filter can name, as the error for an unknown field says it.
FILTER_FIELDS = "id, uri, title, metadata.KEY, created_at, updated_at, content, content_hash"
_DATE_COLUMNS = ("created_at", "updated_at")
_TOKEN = re.compile(
    r"""'(?:[^']|'')*'?           # a string literal (a missing closing quote is LanceDB's to report)
    | metadata\s*\.\s*(?:"(?:[^"]|"")*"|[A-Za-z_][\w-]*)
    | [A-Za-z_]\w*              # a word: a column or a keyword
    | -?\d+(?:\.\d+)?           # a number
    | <>|!=|<=|>=|=|<|>
    | \s+
    | .""",
    re.VERBOSE | re.DOTALL | re.IGNORECASE,
)
_COMPARISONS = ("=", "!=", "<>", "<", ">", "<=", ">=")


def translate(where: str) -> str:
    """The filter as LanceDB can run it: `metadata.KEY` conditions and date strings rewritten, else as is."""
    tokens = _TOKEN.findall(where)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if re.match(r"metadata\s*\.", tok, re.IGNORECASE):
            text, i = _metadata_condition(where, tokens, i)
            out.append(text)
            continue
        if tok.lower() in _DATE_COLUMNS:
            text, i = _date_condition(where, tokens, i)
            out.append(text)
            continue
        out.append(tok)
        i += 1
    return "".join(out)


def _words(tokens: list[str], start: int) -> Iterator[tuple[int, str]]:
    """The tokens from `start` on that are not whitespace, with their positions."""
    for j in range(start, len(tokens)):
        if not tokens[j].isspace():
            yield j, tokens[j]


def _metadata_condition(where: str, tokens: list[str], i: int) -> tuple[str, int]:
    key = _key(tokens[i])
    rest = _words(tokens, i + 1)
    _, op = next(rest, (len(tokens), ""))
    if op.upper() == "IS":
        parts = [next(rest, (len(tokens), ""))]
        if parts[0][1].upper() == "NOT":
            parts.append(next(rest, (len(tokens), "")))
        if parts[-1][1].upper() == "NULL":
            present = f"instr(metadata, {sql_string(json.dumps(key, ensure_ascii=False) + ': ')}) > 0"
            negated = len(parts) == 2
            return (present if negated else f"NOT ({present})"), parts[-1][0] + 1
    elif op in ("=", "!=", "<>"):
        k, literal = next(rest, (len(tokens), ""))
        values = _json_forms(literal)
        if values:
            found = " OR ".join(_pair_present(key, v) for v in values)
            return (f"({found})" if op == "=" else f"NOT ({found})"), k + 1
    elif op.upper() in ("IN", "NOT"):
        negated = op.upper() == "NOT"
        if not negated or next(rest, (0, ""))[1].upper() == "IN":
            listed = _value_list(rest)
            if listed is not None:
                values, end = listed
                found = " OR ".join(_pair_present(key, v) for v in values)
                return (f"NOT ({found})" if negated else f"({found})"), end + 1
    raise InputError(
        f"invalid filter {where!r}: metadata.{key} can be compared with =, !=, [NOT] IN (...) or "
        f"IS [NOT] NULL to quoted values or numbers, e.g. metadata.{key} = 'draft'"
    )


def _value_list(rest: Iterator[tuple[int, str]]) -> tuple[list[str], int] | None:
    """The JSON forms of the values in `('a', 2, ...)` and where its ')' is; None if it is not a list."""
    _, opening = next(rest, (0, ""))
    if opening != "(":
        return None
    forms: list[str] = []
    for _, literal in rest:
        values = _json_forms(literal)
        if not values:
            return None
        forms += values
        end, after = next(rest, (0, ""))
        if after == ")":
            return forms, end
        if after != ",":
            return None
    return None


def _key(token: str) -> str:
    name = token.split(".", 1)[1].strip()
    return name[1:-1].replace('""', '"') if name.startswith('"') else name


def _json_forms(literal: str) -> list[str]:
    """How a value may have been stored in the metadata JSON: as a string, or as a number or boolean."""
    if len(literal) >= 2 and literal.startswith("'") and literal.endswith("'"):
        text = literal[1:-1].replace("''", "'")
    elif re.fullmatch(r"-?\d+(?:\.\d+)?", literal) or literal.lower() in ("true", "false"):
        text = literal.lower()
    else:
        return []
    forms = [json.dumps(text, ensure_ascii=False)]
    try:  # `--meta year=1901` stores "1901"; a JSON number or boolean matches the same condition
        parsed = json.loads(text)
    except ValueError:
        return forms
    if isinstance(parsed, bool | int | float):
        forms.append(json.dumps(parsed))
    return forms


def _pair_present(key: str, value: str) -> str:
    # `json.dumps` writes `"key": value` followed by ", " or "}": either end marks the value's end, so
    # `year = 19` does not match 1901. Inside another string the pair is escaped (`\"key\"`): no match.
    pair = json.dumps(key, ensure_ascii=False) + ": " + value
    return f"instr(metadata, {sql_string(pair + ',')}) > 0 OR instr(metadata, {sql_string(pair + '}')}) > 0"


def _date_condition(where: str, tokens: list[str], i: int) -> tuple[str, int]:
    column = tokens[i]
    rest = _words(tokens, i + 1)
    _, op = next(rest, (len(tokens), ""))
    if op in _COMPARISONS:
        k, literal = next(rest, (len(tokens), ""))
        if literal.startswith("'"):
            return f"{column} {op} {_timestamp(where, column, literal)}", k + 1
    elif op.upper() == "BETWEEN":
        (_, low), (_, conj), (n, high) = (next(rest, (len(tokens), "")) for _ in range(3))
        if low.startswith("'") and conj.upper() == "AND" and high.startswith("'"):
            low_ts, high_ts = _timestamp(where, column, low), _timestamp(where, column, high)
            return f"{column} BETWEEN {low_ts} AND {high_ts}", n + 1
    return column, i + 1


def _timestamp(where: str, column: str, literal: str) -> str:
    text = literal[1:-1].replace("''", "'").strip()
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(
            f"invalid filter {where!r}: {column} compares with an ISO date or time such as '2024-01-31' or "
            f"'2024-01-31T14:00:00Z', got {literal}"
        ) from None
    # A date or time without a zone is UTC, as the stored timestamps are.
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return f"timestamp '{when.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}'"


def sql_string(value: str) -> str:
    """Quote a value for a LanceDB SQL filter."""
    return "'" + value.replace("'", "''") + "'"
