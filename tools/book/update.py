"""`--update`: carry a hand edit of a generated module back into the chapter cell it came from.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from book.cells import ExportError
from book.chapters import CLOSING_QUOTES, TAUGHT_IN_LINE
from book.render import fingerprint, generated, origins, recorded_fingerprint, without_fingerprint
from book.sync import stale_notebooks, update_notebook
from book.write import FORCE_HINT, hand_edited, write_atomic


def without_taught_in(lines: list[str]) -> list[int]:
    """Indexes of a module's `lines`, less the `Taught in` lines that end docstrings.

    Such a line, as the exporter writes it, has a blank line before it (left out too) and a
    docstring's closing quotes after it.
    """
    dropped: set[int] = set()
    for k in range(1, len(lines) - 1):
        if (TAUGHT_IN_LINE.fullmatch(lines[k]) and lines[k - 1] == ""
                and lines[k + 1].strip() in CLOSING_QUOTES):
            dropped.update((k - 1, k))
    return [k for k in range(len(lines)) if k not in dropped]


def hand_edited_modules(root: Path) -> list[Path]:
    return [
        path for path in sorted((root / "src").rglob("*.py"))
        if hand_edited(path.read_text(encoding="utf-8"))
    ]


def update(root: Path) -> list[str]:
    """Carry hand edits of generated modules back into the chapter cells they came from.

    Exact or nothing: each edited region must lie inside the code of one exported cell (not in
    the gathered imports, the docstring or the header), the chapters must not have changed since
    the module was written, and exporting the edited chapters must give back the edited module
    line for line. Otherwise the chapters are left as they were and ExportError says why.
    The `Taught in ...` lines that end docstrings are the exporter's own: they are never
    carried into a chapter (and the export puts them back). Returns one line per carried edit.
    """
    carried: list[str] = []
    for path in hand_edited_modules(root):
        rel = path.relative_to(root).as_posix()
        current = path.read_text(encoding="utf-8")
        lines = origins(root).get(path)
        if lines is None:
            raise ExportError(f"{rel} was edited by hand, but no chapter generates it any more: nothing to carry "
                              f"the edit into. Discard it with {FORCE_HINT}.")
        wanted = [text for text, _ in lines]
        if recorded_fingerprint(current) != fingerprint("\n".join(wanted) + "\n"):
            raise ExportError(
                f"{rel} was edited by hand, and its chapters changed too since it was written, so the edit "
                "cannot be told apart from the chapters' changes: make it in the chapter by hand "
                f"(`.venv/bin/python tools/export.py --check` shows both), then run {FORCE_HINT}."
            )
        have_all = current.split("\n")[:-1] if current.endswith("\n") else current.split("\n")
        # Both sides without the docstrings' `Taught in` lines, which come from the headings.
        lines = [lines[k] for k in without_taught_in(wanted)]
        wanted = [text for text, _ in lines]
        kept = without_taught_in(have_all)
        have = [have_all[k] for k in kept]
        edits: dict[str, list[tuple[int, int, list[str]]]] = {}  # chapter -> (first, last, new lines)
        matcher = difflib.SequenceMatcher(None, wanted, have, autojunk=False)
        for tag, j1, j2, i1, i2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            where = f"{rel}:{(kept[i1] if i1 < len(kept) else len(have_all)) + 1}"
            if any(TAUGHT_IN_LINE.fullmatch(text) for text in have[i1:i2]):
                raise ExportError(f"{where}: a `Taught in` line where the exporter does not write one. The "
                                  "exporter ends the docstring of each exported function and class with it, "
                                  "from the heading the cell sits under: leave it out of the edit, and change "
                                  "the heading (or move the cell) in the chapter to change it")
            replaced = [origin for _, origin in lines[j1:j2]]
            if replaced:
                kinds = {o.kind if o else "header" for o in replaced}
                if kinds != {"code"}:
                    raise ExportError(f"{where}: the edit touches the {', '.join(sorted(kinds - {'code'}))} of the "
                                      "generated module, which does not map back to one cell line for line: "
                                      "make it in the chapter by hand")
                chapters = {(o.chapter, o.block) for o in replaced}
                numbers = [o.line for o in replaced]
                if len(chapters) != 1 or numbers != list(range(numbers[0], numbers[0] + len(numbers))):
                    raise ExportError(f"{where}: the edit spans lines that are not consecutive lines of one cell: "
                                      "make it in the chapter by hand")
                first, last = numbers[0], numbers[-1]
                chapter = replaced[0].chapter
            else:  # lines inserted between generated lines j1 - 1 and j1
                before = lines[j1 - 1][1] if j1 > 0 else None
                after = lines[j1][1] if j1 < len(lines) else None
                if before and before.kind == "code" and (after is None or after.kind != "code"
                                                         or after.block != before.block
                                                         or after.line == before.line + 1):
                    chapter, first, last = before.chapter, before.line + 1, before.line
                elif after and after.kind == "code" and (before is None or before.block != after.block):
                    chapter, first, last = after.chapter, after.line, after.line - 1
                else:
                    raise ExportError(f"{where}: lines added outside the code of an exported cell: "
                                      "add them in the chapter by hand")
            edits.setdefault(chapter, []).append((first, last, have[i1:i2]))
        if not edits:
            raise ExportError(f"{rel}: the edit changes only docstrings' `Taught in` lines, which the exporter "
                              "writes from the headings the cells sit under: nothing to carry back. Change "
                              f"the heading (or move the cell) in the chapter instead, and discard the edit "
                              f"with {FORCE_HINT}.")
        out_of_step = stale_notebooks(root, list(edits))
        if out_of_step:
            raise ExportError(
                f"{rel} was edited by hand, but a chapter it would be carried into has a notebook beside it "
                "that is out of step with it, and carrying the edit into the chapter alone would be lost at "
                "the notebook's next save or `jupytext --sync`:\n  " + "\n  ".join(out_of_step)
                + "\nResolve that first, then run --update again.")
        originals = {chapter: (root / chapter).read_text(encoding="utf-8") for chapter in edits}
        others_before = {p: t for p, t in generated(root).items() if p != path}
        try:
            for chapter, changes in edits.items():
                text = originals[chapter]
                chapter_lines = text.split("\n")
                for first, last, new in sorted(changes, reverse=True):
                    chapter_lines[first - 1:last] = new
                (root / chapter).write_text("\n".join(chapter_lines), encoding="utf-8")
            after_edit = generated(root)
            if without_fingerprint(after_edit.get(path, "")) != without_fingerprint(current):
                raise ExportError(f"{rel}: exporting the edited chapter does not give back the edited module "
                                  "(the edit changes how the cell is split into imports and code, or a "
                                  "`Taught in` line the exporter writes?): make it in the chapter by hand")
            if {p: t for p, t in after_edit.items() if p != path} != others_before:
                raise ExportError(f"{rel}: carrying the edit back would change other modules too: "
                                  "make it in the chapter by hand")
        except BaseException:
            for chapter, text in originals.items():
                (root / chapter).write_text(text, encoding="utf-8")
            raise
        for chapter, changes in edits.items():
            if update_notebook(root, chapter):
                carried.append(f"{Path(chapter).with_suffix('.ipynb').as_posix()}: updated from {chapter} "
                               "(its pair), outputs kept")
            for first, last, new in sorted(changes):
                span = f"line {first}" if last <= first else f"lines {first}-{last}"
                action = "inserted before" if last < first else "replaced"
                carried.append(f"{chapter}: {span} {action} ({len(new)} line{'s' * (len(new) != 1)} from {rel})")
        write_atomic(path, after_edit[path])
    return carried
