"""`--update`: carry hand edits of a generated module back into the chapter cells they came from.

Each edited region of a module (a run of replaced, inserted or deleted lines) is one edit. An
edit is carried when it lies inside the code of one exported cell, line for line; the others
(the gathered imports, the module's docstring, the header, lines between two cells, a `Taught
in` line) are listed with the chapter line to make them in by hand. One edit that cannot be
carried does not hold back the others: those are carried, and the module keeps the rest until
they are made in the chapter (`make export` then finds nothing left to refuse).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from book.cells import ExportError
from book.chapters import CLOSING_QUOTES, TAUGHT_IN_LINE, Origin
from book.render import FINGERPRINT_MARK, fingerprint, generated, origins, recorded_fingerprint, without_fingerprint
from book.sync import stale_notebooks, update_notebook
from book.write import FORCE_HINT, hand_edited, write_atomic


class UpdateIncomplete(ExportError):
    """Some hand edits could not be carried back; `carried` says what was."""

    def __init__(self, message: str, carried: list[str]):
        super().__init__(message)
        self.carried = carried


@dataclass
class Edit:
    """One edited region of a generated module, and where it goes in its chapter."""

    where: str  # `src/...py:LINE` in the edited module
    have: list[str]  # the region's lines as edited
    wanted: list[str]  # the region's lines as generated
    chapter: str = ""
    first: int = 0  # chapter lines first..last are replaced by `have` (last < first: inserted before first)
    last: int = 0
    reason: str = ""  # why it cannot be carried ("" when it can)


def without_taught_in(lines: list[str]) -> list[int]:
    """Indexes of a module's `lines`, less its fingerprint line and the `Taught in` lines that end
    docstrings (such a line, as the exporter writes it, has a blank line before it, left out too,
    and a docstring's closing quotes after it)."""
    dropped: set[int] = {k for k, line in enumerate(lines[:4]) if line.startswith(FINGERPRINT_MARK)}
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


def split_lines(text: str) -> list[str]:
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def edits_of(rel: str, lines: list[tuple[str, Origin | None]], current: str) -> list[Edit]:
    """Every edited region of a module (`current`) against its generated `lines`, each with its
    chapter lines or the reason it cannot be carried back."""
    have_all = split_lines(current)
    wanted_all = [text for text, _ in lines]
    kept_wanted = without_taught_in(wanted_all)
    lines = [lines[k] for k in kept_wanted]
    wanted = [text for text, _ in lines]
    kept = without_taught_in(have_all)
    have = [have_all[k] for k in kept]
    found = []
    matcher = difflib.SequenceMatcher(None, wanted, have, autojunk=False)
    for tag, j1, j2, i1, i2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edit = Edit(f"{rel}:{(kept[i1] if i1 < len(kept) else len(have_all)) + 1}", have[i1:i2], wanted[j1:j2])
        found.append(edit)
        replaced = [origin for _, origin in lines[j1:j2]]
        before = next((o for _, o in reversed(lines[:j1]) if o), None)
        if any(TAUGHT_IN_LINE.fullmatch(text) for text in have[i1:i2]):
            edit.reason = ("a `Taught in` line where the exporter does not write one: the exporter ends the "
                           "docstring of each exported function and class with it, from the heading the cell "
                           "sits under. Leave it out, and change the heading (or move the cell) in the chapter "
                           "to change it")
            continue
        if replaced:
            kinds = {o.kind if o else "header" for o in replaced}
            origin = next((o for o in replaced if o), before)
            if kinds != {"code"}:
                what = ", ".join(sorted(kinds - {"code"}))
                place = f" (edit {origin.chapter}:{origin.line})" if origin else ""
                edit.reason = (f"it touches the {what} of the generated module, which does not map back to one "
                               f"cell line for line: make it in the chapter by hand{place}")
                if "docstring" in kinds and origin:
                    edit.reason = (f"it touches the module's docstring: edit `export_doc:` in the front matter "
                                   f"of {origin.chapter}:{origin.line}")
                continue
            cells = {(o.chapter, o.block) for o in replaced}
            numbers = [o.line for o in replaced]
            if len(cells) != 1 or numbers != list(range(numbers[0], numbers[0] + len(numbers))):
                edit.reason = ("it spans lines that are not consecutive lines of one cell "
                               f"({', '.join(sorted({f'{o.chapter}:{o.line}' for o in replaced}))}): make it in "
                               "the chapter by hand")
                continue
            edit.chapter, edit.first, edit.last = replaced[0].chapter, numbers[0], numbers[-1]
        else:  # lines inserted between generated lines j1 - 1 and j1
            prior = lines[j1 - 1][1] if j1 > 0 else None
            after = lines[j1][1] if j1 < len(lines) else None
            if prior and prior.kind == "code" and (after is None or after.kind != "code"
                                                   or after.block != prior.block
                                                   or after.line == prior.line + 1):
                edit.chapter, edit.first, edit.last = prior.chapter, prior.line + 1, prior.line
            elif after and after.kind == "code" and (prior is None or prior.block != after.block):
                edit.chapter, edit.first, edit.last = after.chapter, after.line, after.line - 1
            else:
                near = prior or after or before
                place = f" (near {near.chapter}:{near.line})" if near else ""
                edit.reason = ("lines added outside the code of an exported cell (the gathered imports, the "
                               f"header, or between two cells): add them in the chapter by hand{place}")
    return found


def chunks(wanted: list[str], have: list[str]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The differing regions of two modules' lines, as (generated, edited) pairs."""
    matcher = difflib.SequenceMatcher(None, wanted, have, autojunk=False)
    return [(tuple(wanted[j1:j2]), tuple(have[i1:i2])) for tag, j1, j2, i1, i2 in matcher.get_opcodes()
            if tag != "equal"]


def comparable(text: str) -> list[str]:
    lines = split_lines(text)
    return [lines[k] for k in without_taught_in(lines)]


def apply(root: Path, originals: dict[str, str], edits: list[Edit]) -> None:
    """Write `originals` with `edits` made in them (chapters not edited are written as they were)."""
    for chapter, text in originals.items():
        chapter_lines = text.split("\n")
        for edit in sorted((e for e in edits if e.chapter == chapter), key=lambda e: (e.first, e.last), reverse=True):
            chapter_lines[edit.first - 1:edit.last] = edit.have
        (root / chapter).write_text("\n".join(chapter_lines), encoding="utf-8")


def carries(root: Path, path: Path, current: str, others_before: dict[Path, str], left: list[Edit]) -> str | None:
    """The module the chapters now generate, if it differs from the edited one exactly by the edits
    `left` and no other module changed (None otherwise)."""
    after = generated(root)
    text = after.get(path, "")
    if {p: t for p, t in after.items() if p != path} != others_before:
        return None
    if chunks(comparable(text), comparable(current)) != [(tuple(e.wanted), tuple(e.have)) for e in left]:
        return None
    return text


def update_module(root: Path, path: Path) -> tuple[list[str], list[str]]:
    """Carry what can be carried of one module's hand edits: (what was carried, what was not)."""
    rel = path.relative_to(root).as_posix()
    current = path.read_text(encoding="utf-8")
    lines = origins(root).get(path)
    if lines is None:
        return [], [f"{rel}: edited by hand, but no chapter generates it any more: nothing to carry the edit "
                    f"into. Discard it with {FORCE_HINT}."]
    if recorded_fingerprint(current) != fingerprint("\n".join(text for text, _ in lines) + "\n"):
        return [], [f"{rel}: edited by hand, and its chapters changed too since it was written, so the edit cannot "
                    "be told apart from the chapters' changes: make it in the chapter by hand "
                    f"(`.venv/bin/python tools/export.py --check` shows both), then run {FORCE_HINT}."]
    edits = edits_of(rel, lines, current)
    candidates = [e for e in edits if not e.reason]
    if not candidates:
        if not edits:
            return [], [f"{rel}: the edit changes only docstrings' `Taught in` lines, which the exporter writes "
                        "from the headings the cells sit under: nothing to carry back. Change the heading (or "
                        f"move the cell) in the chapter instead, and discard the edit with {FORCE_HINT}."]
        return [], [f"{e.where}: not carried: {e.reason}" for e in edits]
    out_of_step = stale_notebooks(root, sorted({e.chapter for e in candidates}))
    if out_of_step:
        return [], [f"{rel}: edited by hand, but a chapter it would be carried into has a notebook beside it that is "
                    "out of step with it, and carrying the edit into the chapter alone would be lost at the "
                    "notebook's next save or `jupytext --sync`:\n  " + "\n  ".join(out_of_step)
                    + "\nResolve that first, then run --update again."]
    originals = {chapter: (root / chapter).read_text(encoding="utf-8") for chapter in {e.chapter for e in candidates}}
    others_before = {p: t for p, t in generated(root).items() if p != path}
    accepted: list[Edit] = []
    written = None
    try:
        apply(root, originals, candidates)
        written = carries(root, path, current, others_before, [e for e in edits if e not in candidates])
        if written is not None:
            accepted = candidates
        else:  # one by one: keep each edit that is carried exactly
            for edit in candidates:
                trial = [*accepted, edit]
                apply(root, originals, trial)
                found = carries(root, path, current, others_before, [e for e in edits if e not in trial])
                if found is not None:
                    accepted, written = trial, found
            apply(root, originals, accepted)
    except BaseException:
        for chapter, text in originals.items():
            (root / chapter).write_text(text, encoding="utf-8")
        raise
    for edit in candidates:
        if edit not in accepted:
            edit.reason = ("exporting the edited chapter does not give back the edited lines (the edit changes how "
                           "the cell is split into imports and code?): make it in the chapter by hand "
                           f"({edit.chapter}:{edit.first})")
    refused = [f"{e.where}: not carried: {e.reason}" for e in edits if e.reason]
    carried = []
    for chapter in sorted({e.chapter for e in accepted}):
        if update_notebook(root, chapter):
            carried.append(f"{Path(chapter).with_suffix('.ipynb').as_posix()}: updated from {chapter} "
                           "(its pair), outputs kept")
        for edit in sorted((e for e in accepted if e.chapter == chapter), key=lambda e: e.first):
            span = f"line {edit.first}" if edit.last <= edit.first else f"lines {edit.first}-{edit.last}"
            action = "inserted before" if edit.last < edit.first else "replaced"
            carried.append(f"{chapter}: {span} {action} ({len(edit.have)} line{'s' * (len(edit.have) != 1)} "
                           f"from {edit.where})")
    if not refused and written is not None:
        write_atomic(path, written)
    elif accepted:
        carried.append(f"{rel}: kept as it is, with the edits not carried (the chapters now generate the others)")
    return carried, refused


def update(root: Path) -> list[str]:
    """Carry hand edits of generated modules back into the chapter cells they came from.

    Exact or not at all, edit by edit: an edit is carried when it lies inside the code of one
    exported cell and exporting the edited chapter gives back the edited lines, other modules
    unchanged. Returns one line per carried edit; raises UpdateIncomplete (which holds them)
    listing each edit that was not carried, with its module line and the chapter line to edit.
    The `Taught in ...` lines that end docstrings are the exporter's own: they are never
    carried into a chapter (and the export puts them back).
    """
    carried: list[str] = []
    refused: list[str] = []
    for path in hand_edited_modules(root):
        done, left = update_module(root, path)
        carried += done
        refused += left
    if refused:
        raise UpdateIncomplete(
            f"{len(refused)} hand edit{'s' * (len(refused) != 1)} not carried back"
            + (f" ({len(carried)} carried)" if carried else "") + ":\n  " + "\n  ".join(refused), carried)
    return carried
