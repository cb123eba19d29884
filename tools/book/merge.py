"""Which side of a chapter and its notebook changed, told from the chapter's history in git.

A notebook made from a chapter (`jupytext --to ipynb`) and the chapter may each be edited
afterwards. File times cannot tell which edits are whose, and a command that writes one file
from the other loses the other side's edits. So the versions of the chapter that git holds (the
index, then the last commits that touched it) give the base: the version the notebook is
closest to, cell by cell. Against that base, each side's changes are known, and a three-way
merge of the cells tells whether one side already holds everything (nothing can be lost by
writing it over the other) or both changed.
"""

from __future__ import annotations

import difflib
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Cell = tuple[str, str, tuple[str, ...], str]  # type, source, tags, the rest of the options
HISTORY_DEPTH = 20  # commits of a chapter searched for the version its notebook was made from


@dataclass
class Conflict:
    """Cells both sides changed differently: the base's cells `base[start:end]`, and each side's."""

    start: int
    end: int
    chapter: list[Cell]
    notebook: list[Cell]


def git_versions(root: Path, chapter: str) -> list[tuple[str, str]]:
    """(where, text) of each version of `chapter` git holds: the index, then recent commits."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                                  encoding="utf-8", errors="replace", timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    if git("rev-parse", "--show-toplevel") is None:
        return []
    top = Path(git("rev-parse", "--show-toplevel").strip()).resolve()
    path = (root / chapter).resolve().relative_to(top).as_posix()
    versions = []
    staged = git("show", f":{path}")
    if staged is not None:
        versions.append(("the chapter as staged in git", staged))
    for commit in (git("log", f"-n{HISTORY_DEPTH}", "--format=%h", "--", path) or "").split():
        text = git("show", f"{commit}:{path}")
        if text is not None:
            versions.append((f"the chapter as of commit {commit}", text))
    return versions


def changes(base: list[Cell], new: list[Cell]) -> list[tuple[int, int, list[Cell]]]:
    """(start, end, replacement) for each run of base cells that `new` replaces."""
    matcher = difflib.SequenceMatcher(None, base, new, autojunk=False)
    return [(i1, i2, new[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def distance(base: list[Cell], new: list[Cell]) -> int:
    """How many cells differ between two versions."""
    return sum(max(end - start, len(cells)) for start, end, cells in changes(base, new))


def closest_base(versions: list[tuple[str, list[Cell]]], notebook: list[Cell]) -> tuple[str, list[Cell]] | None:
    """The version the notebook differs least from (the most recent of equals)."""
    if not versions:
        return None
    return min(versions, key=lambda version: distance(version[1], notebook))


def apply(base: list[Cell], start: int, end: int, edits: list[tuple[int, int, list[Cell]]]) -> list[Cell]:
    """`base[start:end]` with `edits` (all inside that range) applied."""
    out, at = [], start
    for first, last, cells in sorted(edits, key=lambda e: (e[0], e[1])):
        out += base[at:first] + cells
        at = last
    return out + base[at:end]


def merge(base: list[Cell], chapter: list[Cell], notebook: list[Cell],
          marked: Callable[[Conflict], list[Cell]] | None = None) -> tuple[list[Cell], list[Conflict]]:
    """Three-way merge of the cells: (the merged cells, the conflicts).

    A change of one side is taken; the same change on both sides is taken once; overlapping
    changes that differ (or two insertions at one place) are conflicts, where the merged cells
    hold `marked(conflict)` (both versions between markers), or the base's cells without it.
    """
    edits = sorted([(s, e, c, "chapter") for s, e, c in changes(base, chapter)]
                   + [(s, e, c, "notebook") for s, e, c in changes(base, notebook)], key=lambda x: (x[0], x[1]))
    groups: list[list[tuple[int, int, list[Cell], str]]] = []
    for edit in edits:
        if groups:
            start = groups[-1][0][0]
            end = max(e for _, e, _, _ in groups[-1])
            touches = edit[0] < end or edit[0] == end and (edit[0] == edit[1] or start == end)
            if touches:
                groups[-1].append(edit)
                continue
        groups.append([edit])
    merged, conflicts, at = [], [], 0
    for group in groups:
        start, end = group[0][0], max(e for _, e, _, _ in group)
        merged += base[at:start]
        sides = {side: apply(base, start, end, [(s, e, c) for s, e, c, who in group if who == side])
                 for side in ("chapter", "notebook") if any(who == side for *_, who in group)}
        if len(sides) == 1 or sides["chapter"] == sides["notebook"]:
            merged += next(iter(sides.values()))
        else:
            conflict = Conflict(start, end, sides["chapter"], sides["notebook"])
            conflicts.append(conflict)
            merged += marked(conflict) if marked else base[start:end]
        at = end
    return merged + base[at:], conflicts
