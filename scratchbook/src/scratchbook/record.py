"""One recorded result of `book/results/`: where it lives, which script writes it, the fields its
readers rely on, reading it with those fields checked, and writing it atomically.

Every script of `tools/records/` and `benchmarks/` writes its record through `Record.write`, and
every page reads it through `Record.read`; the records themselves are listed once, in
`scratchbook.records`. A field is named by its path of keys, `"test.accuracy"`, where `*` stands
for every key of a mapping (or item of a list): `"runs.*.test.accuracy"`.

A record may also carry its `provenance`: who or what made the texts or labels it holds, when
relative to the models they score, and whether they have shaped a choice since. The Record says it
where the file cannot: a text set written without a script, or a record whose runs are gone and
whose own words are out of date (its writer, rerun, would write the new ones).

What this deliberately does not handle: formats other than JSON and JSON Lines, records outside
a checkout of the book (a reader may still pass any path), and checks that compare two fields
(the readers and the tests make those).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scratchformer.io.files import write_atomically

RESULTS = Path("book") / "results"
KINDS = ("fraction", "difference", "number", "text", "mapping", "list", "any")


class RecordError(ValueError):
    """A record is missing, is not JSON, or lacks a field its readers rely on; the message names
    the file, the field and the script that writes it."""


def book_root(starts: list[Path] | None = None) -> Path:
    """The book's checkout (the folder holding `_toc.yml`), found from the working directory or
    from this package, which `make venv` installs in editable mode from the checkout."""
    starts = starts or [Path.cwd(), Path(__file__).resolve().parent]
    root = next((p for start in starts for p in [start, *start.parents]
                 if (p / "_toc.yml").exists()), None)
    if root is None:
        raise FileNotFoundError("run this inside a checkout of the book: its recorded results "
                                f"are in {RESULTS.as_posix()}/")
    return root


def results_dir() -> Path:
    """`book/results/` of the book's checkout."""
    return book_root() / RESULTS


@dataclass(frozen=True)
class Record:
    """A file of `book/results/` (`name`, relative to that folder), written by `writer`, whose
    readers rely on `fields` (path -> one of `KINDS`); `indent`, `ascii` and `final_newline` are
    how its writer lays the JSON out (`compact`: no spaces at all), so that writing a record again
    changes no byte it need not; `provenance` (what -> who or what, when, what it shaped) says
    where its texts and labels came from when the file does not."""

    name: str
    writer: str
    fields: Mapping[str, str] = field(default_factory=dict)
    indent: int | None = 2
    ascii: bool = True
    final_newline: bool = True
    compact: bool = False
    provenance: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = {path: kind for path, kind in self.fields.items() if kind not in KINDS}
        if unknown:
            raise ValueError(f"{self.name}: unknown field kinds {unknown}; use one of {KINDS}")

    @property
    def path(self) -> Path:
        """Where the book keeps it."""
        return results_dir() / self.name

    def locate(self, where: Path | None = None) -> Path:
        """The file: the book's (`where` None), `where` itself, or the record's name inside the
        folder `where`."""
        if where is None:
            return self.path
        where = Path(where)
        return where / self.name if where.is_dir() else where

    def read(self, where: Path | None = None) -> Any:
        """The record (rows, for JSON Lines), its fields checked; a RecordError otherwise."""
        path = self.locate(where)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise RecordError(f"{path} does not exist: write it with {self.writer}") from None
        try:
            data = ([json.loads(line) for line in text.splitlines() if line.strip()]
                    if self.name.endswith(".jsonl") else json.loads(text))
        except json.JSONDecodeError as err:
            raise RecordError(f"{path} is not JSON ({err}): write it again with "
                              f"{self.writer}") from None
        return self.check(data, path)

    def check(self, data: Any, source: Path | str | None = None) -> Any:
        """`data` if every field readers rely on is there and of its kind; a RecordError naming
        `source` (by default the record's own path) and the field otherwise."""
        source = source if source is not None else self.locate()
        expected = list if self.name.endswith(".jsonl") else dict
        if not isinstance(data, expected):
            raise RecordError(f"{source} holds a {type(data).__name__}, not a record "
                              f"({expected.__name__}); write it again with {self.writer}")
        for path, kind in self.fields.items():
            for where, value in self._values(data, path.split("."), [], source):
                self._check_kind(value, kind, where, source)
        return data

    def field(self, data: Any, path: str, source: Path | str | None = None) -> Any:
        """`data`'s value at `path` (no `*`), or a RecordError naming the missing key."""
        source = source if source is not None else self.locate()
        [(_, value)] = self._values(data, path.split("."), [], source)
        return value

    def write(self, data: Any, where: Path | None = None) -> Path:
        """Check `data` as a reader would, then write it to `where` (by default the book's
        file) in one step: a reader never sees half a record, and a refused one leaves the old."""
        path = self.locate(where)
        self.check(data, path)
        if self.name.endswith(".jsonl"):
            text = "".join(json.dumps(row, ensure_ascii=self.ascii) + "\n" for row in data)
        else:
            text = json.dumps(data, indent=self.indent, ensure_ascii=self.ascii,
                              separators=(",", ":") if self.compact else None)
            text += "\n" if self.final_newline else ""
        write_atomically(path, lambda handle: handle.write(text.encode("utf-8")))
        return path

    def _values(self, value: Any, keys: list[str], seen: list[str],
                source: Path | str) -> Iterator[tuple[str, Any]]:
        """Each `(path, value)` that `keys` names under `value`."""
        if not keys:
            yield ".".join(seen), value
            return
        key, rest = keys[0], keys[1:]
        if key == "*":
            items = (value.items() if isinstance(value, dict) else
                     enumerate(value) if isinstance(value, list) else None)
            if items is None:
                raise RecordError(f"{source}: {'.'.join(seen) or 'the top level'} is not a "
                                  f"mapping or a list; write it again with {self.writer}")
            for name, item in items:
                yield from self._values(item, rest, [*seen, str(name)], source)
            return
        if not isinstance(value, dict) or key not in value:
            where = ".".join(seen) or "the top level"
            raise RecordError(f"{source}: no {key!r} under {where}; write it again with "
                              f"{self.writer}")
        yield from self._values(value[key], rest, [*seen, key], source)

    def _check_kind(self, value: Any, kind: str, where: str, source: Path | str) -> None:
        """A RecordError unless `value` is of `kind`."""
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        problem = {
            "fraction": None if number and 0 <= value <= 1 else "not a fraction from 0 to 1",
            "difference": (None if number and -1 <= value <= 1
                           else "not a difference of two fractions"),
            "number": None if number and value == value else "not a number",
            "text": None if isinstance(value, str) else "not text",
            "mapping": None if isinstance(value, dict) else "not a mapping",
            "list": None if isinstance(value, list) else "not a list",
            "any": None,
        }[kind]
        if problem:
            raise RecordError(f"{source}: {where} is {value!r}, {problem}; write it again with "
                              f"{self.writer}")
