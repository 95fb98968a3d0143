"""Turning `--database NAME` / `--db PATH` into the databases a command works on."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from haiku_cli.config.paths import data_dir
from haiku_cli.config.settings import Settings
from haiku_cli.errors import InputError
from haiku_cli.store.database import exists, refuse_a_file, written_here
from haiku_cli.store.location import Location

DEFAULT_NAME = "default"


@dataclass(frozen=True)
class Selection:
    """The databases a command covers, in a stable order; never empty."""

    locations: tuple[Location, ...]

    def __post_init__(self) -> None:
        if not self.locations:
            raise InputError("the selection names no database; name one with --database NAME or --db PATH")

    @property
    def names(self) -> list[str]:
        """The databases' names, in order."""
        return [loc.name for loc in self.locations]

    def __contains__(self, name: object) -> bool:
        return name in self.names


def configured(settings: Settings) -> dict[str, Location]:
    """The configured databases by name; with none configured, the one `default` database."""
    if not settings.databases:
        return {DEFAULT_NAME: Location(DEFAULT_NAME, str(data_dir() / f"{DEFAULT_NAME}.lancedb"))}
    return {
        name: Location(
            name, db.uri, dict(db.storage_options), db.read_only, chosen_by=f"--database {shlex.quote(name)}"
        ).with_timeout(settings.storage.timeout_seconds)
        for name, db in settings.databases.items()
    }


def select_many(
    known: Mapping[str, Location], names: Sequence[str] = (), paths: Sequence[Path] = ()
) -> Selection:
    """The set for search, ask and analyze: all configured databases (`known`) unless narrowed."""
    _not_both(names, paths)
    if paths:
        return _from_paths(paths)
    if not names:
        return Selection(tuple(_usable(loc) for loc in known.values()))
    return Selection(tuple(lookup(known, n) for n in dict.fromkeys(names)))


def select_one(
    known: Mapping[str, Location], names: Sequence[str] = (), paths: Sequence[Path] = ()
) -> Location:
    """Exactly one database for every other command; refuse rather than guess."""
    _not_both(names, paths)
    chosen: list[str | Path] = [*dict.fromkeys(names)] or [*dict.fromkeys(paths)]
    if len(chosen) > 1:
        raise InputError("this command works on one database; give a single --database NAME or --db PATH")
    if paths:
        return from_path(paths[0])
    if names:
        return lookup(known, names[0])
    if len(known) == 1:
        return _usable(next(iter(known.values())))
    raise InputError(
        f"several databases are configured ({', '.join(known)}); choose one with --database NAME or --db PATH"
    )


def searchable(selection: Selection) -> tuple[Selection, list[str]]:
    """The part of a set that search, ask and analyze cover now, and the local databases left out of it.

    A local database nothing was added to yet is skipped (and named) rather than failing the whole set;
    object storage is never guessed at. When nothing is written, the whole set is kept so that opening it
    says why.
    """
    unwritten = [
        loc.name
        for loc in selection.locations
        if loc.local_path is not None and not written_here(loc) and not exists(loc)
    ]
    written = tuple(
        replace(loc, seen_written=loc.local_path is not None)
        for loc in selection.locations
        if loc.name not in unwritten
    )
    if not written:
        return selection, []
    return Selection(written), unwritten


def lookup(known: Mapping[str, Location], name: str) -> Location:
    """A configured database by name, or an error listing the configured names."""
    if name in known:
        return _usable(known[name])
    raise InputError(f"unknown database '{name}'; configured databases: {', '.join(known)}")


def from_path(path: Path) -> Location:
    """A database given by path (`--db`), named after its folder's stem."""
    if str(path) in ("", "."):
        raise InputError("--db needs the path of a database folder, e.g. --db ~/notes.lancedb")
    loc = Location.from_path(path)
    return _usable(replace(loc, chosen_by=f"--db {shlex.quote(loc.uri)}"))


def _usable(loc: Location) -> Location:
    refuse_a_file(loc)
    return loc


def _not_both(names: Sequence[str], paths: Sequence[Path]) -> None:
    if names and paths:
        raise InputError("give databases either by name (--database) or by path (--db), not both")


def _from_paths(paths: Sequence[Path]) -> Selection:
    locations: dict[str, Location] = {}
    for path in paths:
        loc = from_path(path)
        other = locations.get(loc.name)
        if other is not None and other.uri != loc.uri:
            raise InputError(
                f"two --db paths are both named '{loc.name}' (a database is named after its file stem); "
                "rename one"
            )
        locations[loc.name] = loc
    return Selection(tuple(locations.values()))
