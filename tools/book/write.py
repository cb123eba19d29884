"""Writing the package: refuse to overwrite hand edits, write atomically, diff for `--check`.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from book.files import write_atomic
from book.cells import ExportError, toc_chapters
from book.chapters import Origin
from book.render import FINGERPRINT_MARK, HEADER_MARK, fingerprint, generated, origins, recorded_fingerprint, without_fingerprint
from book.sync import stale_notebooks


CONFLICT_MARKER = re.compile(r"^(<{7}|>{7})( |$)", re.M)


FORCE_HINT = "`.venv/bin/python tools/export.py --force` (or `make export EXPORT_FLAGS=--force`)"


UPDATE_HINT = "`.venv/bin/python tools/export.py --update` (or `make export EXPORT_FLAGS=--update`)"


def hand_edited(current: str) -> bool:
    """Whether a generated module's text differs from what the exporter wrote (per its fingerprint)."""
    recorded = recorded_fingerprint(current)
    return recorded is not None and recorded != fingerprint(current) and not CONFLICT_MARKER.search(current)


def describe_edits(root: Path, path: Path, current: str, lines: list[tuple[str, Origin | None]] | None,
                   limit: int = 5) -> list[str]:
    """One line per hand-edited region of `path`: where it is, the chapter line to edit, and whether
    `--update` carries it there."""
    from book.update import edits_of

    rel = path.relative_to(root).as_posix()
    if lines is None:
        return [f"  {rel}: no chapter in _toc.yml generates it any more"]
    edits = edits_of(rel, lines, current)
    if not edits:  # only lines the exporter writes itself differ
        wanted = [text for text, _ in lines]
        have = current.split("\n")[:-1] if current.endswith("\n") else current.split("\n")
        matcher = difflib.SequenceMatcher(None, wanted, have, autojunk=False)
        for tag, j1, j2, i1, i2 in matcher.get_opcodes():
            origin = next((o for _, o in lines[j1:max(j2, j1 + 1)] if o), None)
            if tag != "equal" and origin is not None and origin.kind == "taught in":
                return [f"  {rel}:{i1 + 1}: a docstring's `Taught in` line, which the exporter writes from the "
                        f"heading above the cell: change that heading, or move the cell, in {origin.chapter} (the "
                        f"docstring closes at line {origin.line})"]
        return [f"  {rel}: the generated header (nothing to carry back)"]
    notes = []
    for edit in edits:
        shown = edit.have[0].strip() if edit.have else ""
        shown = shown[:50] + "..." if len(shown) > 53 else shown
        where = edit.where + (f" `{shown}`" if shown else " (lines deleted)" if not edit.have else "")
        if edit.reason:
            notes.append(f"  {where}: {edit.reason} (`--update` cannot carry it)")
        else:
            place = (f"insert after {edit.chapter}:{edit.last}" if edit.last < edit.first
                     else f"edit {edit.chapter}:{edit.first}" + (f"-{edit.last}" if edit.last > edit.first else ""))
            notes.append(f"  {where}: {place} instead (the code of an exported cell: `--update` carries it there)")
        if len(notes) == limit and len(edits) > limit:
            notes.append(f"  ... and {len(edits) - limit} more (`.venv/bin/python tools/export.py --check` shows "
                         "every difference)")
            break
    return notes


def refuse_hand_edits(root: Path, wanted: dict[Path, str]) -> None:
    """Raise if writing `wanted` would overwrite a generated module that was edited by hand."""
    problems = []
    lines = None
    for path, text in wanted.items():
        if not path.exists():
            continue
        current = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        if text and not current.startswith(HEADER_MARK):
            problems.append(f"  {rel}: exists without the generated header (a hand-written module?), "
                            "and a chapter exports into it")
        elif hand_edited(current) and without_fingerprint(current) != without_fingerprint(text):
            if lines is None:
                lines = origins(root)
            problems.extend(describe_edits(root, path, current, lines.get(path)))
    if problems:
        raise ExportError(
            "refusing to overwrite generated modules that were edited by hand, which would lose the edits:\n"
            + "\n".join(problems)
            + "\nMake the change in the chapter (the chapters are the source of the package), then run "
            f"`make export`.\nTo copy the edits into the chapters' cells: {UPDATE_HINT}.\n"
            f"To discard them: {FORCE_HINT}."
        )


def export(root: Path, force: bool = False) -> list[Path]:
    """Write the generated modules; return the paths that changed (written or removed).

    Refuses (ExportError) when a generated module was edited by hand, unless `force`.
    """
    wanted = generated(root)
    unsaved = stale_notebooks(root, toc_chapters(root), ("notebook", "both", "unknown"))
    if unsaved:
        raise ExportError(
            "a notebook beside a chapter holds edits its chapter lacks; the exporter reads only the "
            "chapters (.md), so exporting now would leave them out of the package:\n  " + "\n  ".join(unsaved))
    if not force:
        refuse_hand_edits(root, wanted)
    changed = []
    for path, text in wanted.items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if text == "":
            if current is not None:
                path.unlink()
                changed.append(path)
        elif text != current:
            write_atomic(path, text)
            changed.append(path)
    return changed


def check(root: Path, wanted: dict[Path, str] | None = None) -> str:
    """A unified diff between src/ and what the chapters generate ('' when in sync)."""
    diff: list[str] = []
    for path, text in (generated(root) if wanted is None else wanted).items():
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if text != current:
            rel = path.relative_to(root).as_posix()
            diff.extend(
                difflib.unified_diff(
                    current.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    fromfile=f"{rel} (in src/)",
                    tofile=f"{rel} (from the chapters)",
                )
            )
    return "".join(diff)
