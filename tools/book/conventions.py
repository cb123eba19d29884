"""A numbered chapter's static conventions, checked from its text without building the book.

Each message names the chapter line, the rule and the fix:

- it opens with the book's map: before its first section, a `remove-input` cell calling
  `pipeline_map(step, "chapter N: topic")` whose image has the class `pipeline-map` and alt
  text starting "Map of the book";
- it closes with `## Summary` (4 to 6 points), then `## Exercises` (at least 4, each
  "**Exercise N ...**" followed by its solution, a cell tagged `hide-cell` and `solution`; at
  least 4 of them assert their answer: an open experiment may only show its result), then, last, `## What this chapter added to the package` with the
  directive that lists the names;
- an exported cell imports what it uses: the module gets the imports of exported cells only,
  so a name only an unexported cell imports is undefined in the package;
- on every page, no interval of "two standard errors": with the few seeds a run here has, it
  is not a 95% interval (three seeds make it an 82% one); a difference's interval is the
  t-interval of `scratchformer.measure.statistics.paired_difference`.
"""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

from book.cells import HEADING, PACKAGE, cell_fence_lines, numbered_chapters, read_myst, toc_chapters

ADDED_HEADING = "What this chapter added to the package"
ADDITIONS_DIRECTIVE = "package-additions"
ADDED_SECTION = f"## {ADDED_HEADING}\n\n```{{{ADDITIONS_DIRECTIVE}}}\n```\n"
SUMMARY_POINTS = (4, 6)
MIN_EXERCISES = 4
EXERCISE = re.compile(r"\*\*Exercise (\d+)\b")
MAP_ALT = "Map of the book"


def map_cell(number: int, step: str = "attention", topic: str = "topic") -> str:
    """The opening cell of chapter `number` (the map, its step highlighted)."""
    return f'''```{{code-cell}} ipython3
---
mystnb:
  image:
    alt: '{MAP_ALT}: text, tokens, embeddings and positions, attention, blocks,
      prediction. This chapter: {step}.'
    classes: pipeline-map
tags: [remove-input]
---
from scratchbook.diagrams import pipeline_map

pipeline_map("{step}", "chapter {number}: {topic}")
```
'''


def sections(notebook) -> list[tuple[str, int, list[str], list[int]]]:
    """(heading, level, its markdown lines, indices of its code cells) for each heading, in order."""
    found: list[tuple[str, int, list[str], list[int]]] = [("", 0, [], [])]
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            found[-1][3].append(index)
            continue
        for line in cell.source.splitlines():
            match = HEADING.match(line)
            if match:
                found.append((match.group(2), len(match.group(1)), [], []))
            else:
                found[-1][2].append(line)
    return found


def heading_line(lines: list[str], heading: str) -> int:
    return next((i for i, line in enumerate(lines, start=1) if line.strip() == heading), 1)


def chapter_problems(root: Path, chapter: str, number: int,
                     module_names: dict[str, set[str]] | None = None) -> list[str]:
    """Every convention `chapter` (chapter `number`) does not keep, each with its rule and fix."""
    text = (root / chapter).read_text(encoding="utf-8")
    lines = text.splitlines()
    notebook = read_myst(text, chapter)
    fences = cell_fence_lines(text)
    code_index = {i: n for n, i in enumerate(i for i, c in enumerate(notebook.cells) if c.cell_type == "code")}

    def line_of(index: int) -> int:
        return fences[code_index[index]] if index in code_index and code_index[index] < len(fences) else 1

    problems = []
    parts = sections(notebook)
    second = [(title, (text, cells)) for title, level, text, cells in parts if level == 2]
    first_section = heading_line(lines, f"## {second[0][0]}") if second else len(lines)
    opening = next((i for i, c in enumerate(notebook.cells) if c.cell_type == "code"), None)
    cell = notebook.cells[opening] if opening is not None else None
    image = (cell.metadata.get("mystnb", {}).get("image") or {}) if cell else {}
    if (cell is None or line_of(opening) > first_section or "pipeline_map(" not in cell.source
            or "pipeline-map" not in str(image.get("classes", "")) or not str(image.get("alt", "")).startswith(MAP_ALT)
            or "remove-input" not in cell.metadata.get("tags", [])):
        problems.append(
            f"{chapter}:{line_of(opening) if cell else 1}: the chapter does not open with the book's map (rule: "
            "its first code cell, before the first section, draws the map with its own step highlighted). "
            f"Fix: put this cell right after the title (choose the step, see scratchbook.diagrams.STEPS):\n"
            + map_cell(number))
    titles = [title for title, _ in second]
    summary = dict(second).get("Summary")
    if summary is None:
        problems.append(f"{chapter}: no `## Summary` section (rule: a chapter closes with a summary of its "
                        f"ideas, {SUMMARY_POINTS[0]} to {SUMMARY_POINTS[1]} points). Fix: add it before "
                        "`## Exercises`: `## Summary`, then one `- ` line per idea")
    else:
        points = sum(1 for line in summary[0] if line.startswith(("- ", "* ")))
        if not SUMMARY_POINTS[0] <= points <= SUMMARY_POINTS[1]:
            problems.append(f"{chapter}:{heading_line(lines, '## Summary')}: the summary has {points} points "
                            f"(rule: {SUMMARY_POINTS[0]} to {SUMMARY_POINTS[1]}). Fix: one `- ` line per idea")
    exercises = dict(second).get("Exercises")
    if exercises is None:
        problems.append(f"{chapter}: no `## Exercises` section (rule: at least {MIN_EXERCISES} exercises, each "
                        "with a folded solution that asserts its answer). Fix: add `## Exercises` after the "
                        "summary: `**Exercise 1 (...).** ...`, then a cell tagged `[hide-cell, solution]`")
    else:
        problems += exercise_problems(chapter, lines, notebook, exercises, line_of)
    if [t for t in titles if t in ("Summary", "Exercises", ADDED_HEADING)] != ["Summary", "Exercises", ADDED_HEADING]:
        problems.append(f"{chapter}: its last sections are not `## Summary`, `## Exercises`, `## {ADDED_HEADING}` in "
                        "that order (rule: the names the chapter added close it). Fix: order them so")
    if not (titles and titles[-1] == ADDED_HEADING and ADDED_SECTION in text):
        problems.append(f"{chapter} must close with the list of names it added to the package, generated from its "
                        f"exported cells. Fix: make its last section:\n\n{ADDED_SECTION}\n(prose may follow the "
                        "directive)")
    return problems + export_imports(chapter, notebook, line_of, module_names)


def exercise_problems(chapter: str, lines: list[str], notebook, section: tuple[list[str], list[int]],
                      line_of) -> list[str]:
    """The exercises: at least MIN_EXERCISES, one folded, asserting solution each."""
    text, cells = section
    stated = sorted({int(n) for line in text for n in EXERCISE.findall(line)})
    solutions = [i for i in cells if notebook.cells[i].cell_type == "code"
                 and "solution" in notebook.cells[i].metadata.get("tags", [])]
    where = f"{chapter}:{heading_line(lines, '## Exercises')}"
    problems = []
    if len(solutions) < MIN_EXERCISES:
        problems.append(f"{where}: {len(solutions)} exercises with a solution (rule: at least {MIN_EXERCISES}, each "
                        "solution a code cell tagged `[hide-cell, solution]`). Fix: add exercises, each "
                        "`**Exercise N (...).**` followed by its solution cell")
    if len(stated) != len(solutions):
        problems.append(f"{where}: {len(stated)} exercises (`**Exercise N`) but {len(solutions)} solutions (rule: "
                        "each exercise has one solution cell tagged `solution`). Fix: give each its solution")
    for index in solutions:
        if "hide-cell" not in notebook.cells[index].metadata.get("tags", []):
            problems.append(f"{chapter}:{line_of(index)}: a solution that is not folded (rule: solutions are "
                            "tagged `hide-cell`). Fix: `tags: [hide-cell, solution]`")
    asserting = [i for i in solutions if re.search(r"^\s*assert\b", notebook.cells[i].source, re.M)]
    if len(solutions) >= MIN_EXERCISES > len(asserting):
        silent = ", ".join(str(line_of(i)) for i in solutions if i not in asserting)
        problems.append(f"{chapter}: {len(asserting)} solutions assert their answer (rule: at least "
                        f"{MIN_EXERCISES} do, so the build checks them). Fix: end with an `assert` the "
                        f"solutions at lines {silent}")
    return problems


def exported_cells(notebook) -> list[tuple[int, str, ast.Module]]:
    """(index, module, parsed source) of each exported cell of a chapter."""
    default = notebook.metadata.get("export")
    found = []
    for index, cell in enumerate(notebook.cells):
        targets = [t for t in cell.metadata.get("tags", []) if t == "export" or t.startswith("export:")]
        if cell.cell_type == "code" and targets:
            try:
                found.append((index, default if targets[0] == "export" else targets[0][7:], ast.parse(cell.source)))
            except SyntaxError:
                continue
    return found


def module_names(root: Path) -> dict[str, set[str]]:
    """The names each module's exported cells bind (imports included), over the whole book."""
    names: dict[str, set[str]] = {}
    for chapter in toc_chapters(root):
        if (root / chapter).is_file():
            for _, module, tree in exported_cells(read_myst((root / chapter).read_text(encoding="utf-8"), chapter)):
                names.setdefault(module, set()).update(n for node in tree.body for n in bound_names(node))
    return names


def export_imports(chapter: str, notebook, line_of, names: dict[str, set[str]] | None) -> list[str]:
    """Exported cells that use a name only an unexported cell of the chapter imports."""
    imported_outside: dict[str, str] = {}
    exported = [(index, module, tree) for index, module, tree in exported_cells(notebook)]
    names = names or {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        if any(t == "export" or t.startswith("export:") for t in cell.metadata.get("tags", [])):
            continue
        for node in tree.body:  # imports from the package are the package check's (a rename, a move)
            package = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            if isinstance(node, (ast.Import, ast.ImportFrom)) and package.split(".")[0] != PACKAGE:
                for alias in node.names:
                    imported_outside.setdefault((alias.asname or alias.name).split(".")[0], ast.unparse(node))
    problems = []
    for index, module, tree in exported:
        defined = names.get(module) or {n for _, m, t in exported if m == module for node in t.body
                                        for n in bound_names(node)}
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
        missing = sorted(name for name in used - defined - set(dir(builtins)) if name in imported_outside)
        if missing:
            fixes = "; ".join(f"`{imported_outside[name]}`" for name in missing)
            problems.append(f"{chapter}:{line_of(index)}: the exported cell uses {', '.join(missing)}, which only "
                            "cells that are not exported import (rule: an exported cell imports what it uses; the "
                            f"module gets only the exported cells' imports). Fix: add to this cell {fixes}")
    return problems


def bound_names(node: ast.stmt) -> list[str]:
    """Names a top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return [n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)]


STANDARD_ERRORS = re.compile(
    r"(?<![\d.,])\b(?:2|two)\s+(?:standard\s+errors?|SEs?)\b|±\s*2\s*(?:SE|s\.e\.)",
    re.IGNORECASE)


def standard_error_wording(root: Path, page: str) -> list[str]:
    """The lines of `page` that state an interval as two standard errors."""
    lines = (root / page).read_text(encoding="utf-8").splitlines()
    return [f"{page}:{number}: an interval of two standard errors is not a 95% interval with "
            f"a few seeds (three make it 82%); report the t-interval of "
            f"scratchformer.measure.statistics.paired_difference"
            for number, line in enumerate(lines, 1) if STANDARD_ERRORS.search(line)]


def convention_problems(root: Path) -> list[str]:
    """Every numbered chapter's conventions, and every page's exported imports, checked from the text."""
    names = module_names(root)
    numbered = numbered_chapters(root)
    problems = []
    for chapter in toc_chapters(root):
        if not (root / chapter).is_file():
            continue
        problems += standard_error_wording(root, chapter)
        if chapter in numbered:
            problems += chapter_problems(root, chapter, numbered.index(chapter) + 1, names)
        else:  # an appendix or the introduction: only what the package depends on
            text = (root / chapter).read_text(encoding="utf-8")
            notebook = read_myst(text, chapter)
            fences = cell_fence_lines(text)
            code = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
            problems += export_imports(chapter, notebook, lambda i: fences[code.index(i)], names)
    return problems
