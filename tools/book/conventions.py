"""The book's conventions, checked from its text in seconds, without building it (`make check`).

One checker for every static convention; each message names the file and line, the rule and the
fix. `CONVENTIONS` lists them by name; `convention_problems` runs them all. This module holds the
conventions of a chapter's structure and of what it says about the package:

- a numbered chapter opens with the book's map: before its first section, a `remove-input` cell
  calling `pipeline_map(step, "chapter N: topic")` whose image has the class `pipeline-map` and
  alt text starting "Map of the book";
- it closes with `## Summary` (4 to 6 points), then `## Exercises` (at least 4, each
  "**Exercise N ...**" followed by its solution, a cell tagged `hide-cell` and `solution`; at
  least 4 of them assert their answer: an open experiment may only show its result), then, last,
  `## What this chapter added to the package` with the directive that lists the names, and the
  prose after it agrees with that list;
- its file is numbered like the chapter (`book/NN_topic.md` is chapter NN), and the introduction
  links it;
- an exported cell imports what it uses: the module gets the imports of exported cells only,
  so a name only an unexported cell imports is undefined in the package;
- every module has a docstring (`export_doc:` in a chapter feeding it), and every exported
  function and class says where it is taught (the exporter ends its docstring with the line);
- a page that glues numbers into its prose has them checked in the built HTML
  (`EXPECTED_IN_HTML` in tests/support/pages.py); on the pages of `SHORT_SENTENCES`, no
  sentence carries more than three glued values (a reader holds three figures, not thirteen);
- on every page, no interval of "two standard errors": with the few seeds a run here has, it
  is not a 95% interval (three seeds make it an 82% one); a difference's interval is the
  t-interval of `scratchformer.measure.statistics.paired_difference`.

`book.cell_conventions` holds those of the code cells (width, alt text, what is shown and
folded), `book.layers` those of the package's imports.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Collection
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


def structure_problems(root: Path) -> list[str]:
    """Every numbered chapter's structure, and every page's exported imports and intervals."""
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


def front_matter_line_of(root: Path, chapter: str, key: str) -> int:
    lines = (root / chapter).read_text(encoding="utf-8").splitlines()
    return next((i for i, line in enumerate(lines, start=1) if line.startswith(f"{key}:")), 1)


def module_docstrings(root: Path, modules) -> list[str]:
    """Modules no chapter gives a docstring (`export_doc:`)."""
    return [f"{module.chapters[0]}:{front_matter_line_of(root, module.chapters[0], 'export')}: the module "
            f"{module.name} has no docstring (rule: every module says what it holds and what it leaves "
            f"out). Fix: add `export_doc:` (the module's docstring) to the front matter of {module.chapters[0]}"
            for module in modules.values() if not module.docs]


def file_numbers(root: Path) -> list[str]:
    return [f"{chapter}:1: it is chapter {number} in _toc.yml (rule: book/NN_<topic>.md is chapter NN, as "
            f"docstrings and the introduction name it). Fix: rename it book/{number:02d}_<topic>.md "
            "(`git mv`) and its entry in _toc.yml"
            for number, chapter in enumerate(numbered_chapters(root), start=1)
            if not Path(chapter).name.startswith(f"{number:02d}_")]


INTRO = "book/intro.md"


def intro_links(root: Path) -> list[str]:
    if not (root / INTRO).is_file():
        return []
    intro = (root / INTRO).read_text(encoding="utf-8")
    lines = intro.splitlines()
    at = next((i for i, line in enumerate(lines, start=1) if line.startswith("## ") and "view" in line), 1)
    return [f"{INTRO}:{at}: the introduction does not link to {chapter} (rule: it lists every chapter). "
            f"Fix: add it, with a line on what it builds, to its list of chapters: "
            f"`N. **Title.** What it builds. ([Chapter N]({Path(chapter).name}))`"
            for chapter in numbered_chapters(root)
            if f"]({Path(chapter).name})" not in intro and f"]({Path(chapter).name}#" not in intro]


def page_title(root: Path, chapter: str) -> str:
    """The text of a page's first `# ` heading."""
    lines = (root / chapter).read_text(encoding="utf-8").splitlines()
    return next((m.group(2) for m in map(HEADING.match, lines) if m and m.group(1) == "#"), "")


def taught_in(root: Path, modules) -> list[str]:
    """Exported functions and classes whose docstring does not end with where they are taught."""
    from book import reference

    chapters = numbered_chapters(root)
    problems = []
    titles_of: dict[str, set[str]] = {}
    for module in modules.values():
        for block in module.blocks:
            number = chapters.index(block.chapter) + 1 if block.chapter in chapters else None
            if block.chapter not in titles_of:
                text = (root / block.chapter).read_text(encoding="utf-8")
                titles_of[block.chapter] = {m.group(2) for m in map(HEADING.match, text.splitlines()) if m} | {
                    h[2] for h in reference.heading_anchors(text)}
            for entry in reference.entries_of(block):  # the docstrings as the module has them
                if entry.kind == "data":
                    continue
                paragraphs = [p for p in re.split(r"\n\s*\n", entry.doc.strip()) if p.strip()]
                last = " ".join(paragraphs[-1].split()) if paragraphs else ""
                where = f"chapter {number}" if number else f'the appendix "{page_title(root, block.chapter)}"'
                match = re.fullmatch(r'Taught in (chapter \d+|the appendix "[^"]+"), "(.+)"\.', last)
                if match and match.group(1) == where and match.group(2) in titles_of[block.chapter]:
                    continue
                line = f'Taught in {where}, "{block.section}".'
                head = f"{block.chapter}:{block.line}: {module.name}.{entry.name}"
                problems.append(
                    f"{head} has no docstring (rule: every exported function and class says what it does; "
                    f"the exporter ends its docstring with `{line}`). Fix: give it one, its closing quotes on "
                    "a line of their own" if not entry.doc else
                    f"{head}: its exported docstring does not end with `{line}`, which tools/export.py adds. "
                    "Fix: `make export` (is the module out of date?)")
    return problems


GLUE_ROLE = re.compile(r"\{glue(:[a-z]+)?\}`")
EXPECTED_IN_HTML = "tests/support/pages.py"


def expected_in_html(root: Path) -> dict[str, int] | None:
    """The pages `EXPECTED_IN_HTML` names, each with how many numbers it lists (read from the
    test file's text, without running it); None where the repository has no such test."""
    path = root / EXPECTED_IN_HTML
    if not path.is_file():
        return None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "EXPECTED_IN_HTML" for t in targets) and \
                isinstance(node.value, ast.Dict):
            return {key.value: len(value.elts) if isinstance(value, (ast.List, ast.Tuple)) else 1
                    for key, value in zip(node.value.keys, node.value.values)
                    if isinstance(key, ast.Constant) and isinstance(key.value, str)}
    return None


def glued_numbers_checked(root: Path) -> list[str]:
    """Pages that glue numbers into their prose without `EXPECTED_IN_HTML` checking them."""
    expected = expected_in_html(root)
    if expected is None:
        return []
    pages = {Path(chapter).with_suffix(".html").as_posix(): chapter for chapter in toc_chapters(root)}
    problems = [f"{EXPECTED_IN_HTML}: EXPECTED_IN_HTML names {page}, which the book does not have. Fix: remove "
                "it (or correct the page's name)" for page in sorted(set(expected) - set(pages))]
    for page, chapter in pages.items():
        if not (root / chapter).is_file():
            continue
        lines = (root / chapter).read_text(encoding="utf-8").splitlines()
        glued = [n for n, line in enumerate(lines, start=1) if GLUE_ROLE.search(line)]
        if glued and not expected.get(page):
            problems.append(f"{chapter}:{glued[0]}: the page glues numbers into its prose ({len(glued)} lines) "
                            "that no test finds on the built page (rule: the tests check every quoted number). "
                            f"Fix: add \"{page}\": [the numbers its prose quotes, as the page shows them] to "
                            f"EXPECTED_IN_HTML in {EXPECTED_IN_HTML}")
    return problems


# Pages whose every sentence carries at most GLUED_PER_SENTENCE glued values. The others were
# written before the rule; add a page here once its sentences keep it.
SHORT_SENTENCES = {"book/10_bert.md", "book/11_training.md", "book/12_gpt.md",
                   "book/13_pretraining.md", "book/experiments_11.md", "book/experiments_12.md",
                   "book/experiments_13.md"}
GLUED_PER_SENTENCE = 3
FENCE = re.compile(r"^(`{3,}|~{3,})")


def prose_sentences(text: str) -> list[tuple[int, str]]:
    """(line, sentence) for each sentence of a page's prose: front matter, code cells and
    directives left out, each list item its own, a sentence ending at `.`, `!` or `?` before a
    capital."""
    lines = text.split("\n")
    start = lines.index("---", 1) + 1 if lines and lines[0] == "---" else 0
    kept, fence = [], None  # (line number, text), a blank line for each left out
    for number, line in enumerate(lines[start:], start=start + 1):
        if fence:
            fence = None if line.strip() == fence else fence
            kept.append((number, ""))
            continue
        match = FENCE.match(line)
        if match:
            fence = match.group(1)
            kept.append((number, ""))
            continue
        kept.append((number, line))
    items, current = [], []
    for number, line in kept:
        if not line.strip() or re.match(r"\s*(?:[-*]|\d+\.) ", line):
            items.append(current)
            current = [] if not line.strip() else [(number, line)]
        else:
            current.append((number, line))
    items.append(current)
    sentences = []
    for item in items:
        words = [(number, word) for number, line in item for word in line.split()]
        if not words:
            continue
        used = 0
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*\"(\[{])", " ".join(word for _, word in words)):
            if sentence:
                sentences.append((words[used][0], sentence))
                used += len(sentence.split())
    return sentences


def crowded_sentences(root: Path, pages: set[str] = SHORT_SENTENCES) -> list[str]:
    """Sentences of `pages` that carry more than GLUED_PER_SENTENCE glued values."""
    problems = []
    for page in sorted(pages):
        if not (root / page).is_file():
            continue
        for line, sentence in prose_sentences((root / page).read_text(encoding="utf-8")):
            glued = len(GLUE_ROLE.findall(sentence))
            if glued > GLUED_PER_SENTENCE:
                problems.append(f"{page}:{line}: a sentence carries {glued} glued values (rule: at most "
                                f"{GLUED_PER_SENTENCE} on the pages of SHORT_SENTENCES, a reader holds three "
                                f"figures). Fix: split it: {sentence[:120]}")
    return problems


NOTHING_ADDED = re.compile(r"adds? nothing to the package|exports? nothing|no new names", re.I)


def additions_prose(root: Path) -> list[str]:
    """Chapters whose words about what they add contradict the generated list of names."""
    from book import reference

    problems = []
    for chapter in numbered_chapters(root):
        text = (root / chapter).read_text(encoding="utf-8")
        start = text.find(f"## {ADDED_HEADING}")
        if start < 0:
            continue
        prose = text[start:].split(f"```{{{ADDITIONS_DIRECTIVE}}}\n```", 1)[-1]
        prose = "\n".join(line for line in prose.split("\n") if not line.startswith("#")) if prose else ""
        said = NOTHING_ADDED.search(" ".join(prose.split()))
        if said and reference.chapter_additions(root, chapter).strip() != reference.NO_ADDITIONS:
            line = next((n for n, l in enumerate(text.splitlines(), start=1)
                         if n > text[:start].count("\n") + 1 and said.group(0).split()[0] in l), 1)
            problems.append(f"{chapter}:{line}: the prose after the list of names says \"{said.group(0)}\", but "
                            "the chapter exports names (the generated list above it shows them). Fix: say what "
                            "it adds, or nothing")
    return problems


def layer_problems(root: Path) -> list[str]:
    from book.layers import layer_problems as problems

    return problems(root)


def import_circles(root: Path) -> list[str]:
    from book.layers import import_circles as circles

    return circles(root)


def cell_checks():
    from book import cell_conventions as cells

    return {
        "code width": cells.code_width,
        "visible cell length": cells.long_visible_cells,
        "taught and shown": cells.taught_but_folded,
        "checks apart from taught code": cells.checks_in_taught_cells,
        "figure alt text": cells.figure_alt_text,
        "taught in by hand": cells.taught_in_by_hand,
    }


# The conventions that read the exported modules: they get them as a second argument.
NEEDS_MODULES = {"module docstrings", "taught in", "own definitions"}


def conventions() -> dict[str, object]:
    from book import cell_conventions

    return {
        "structure": structure_problems,
        "file numbers": file_numbers,
        "introduction": intro_links,
        "module docstrings": module_docstrings,
        "taught in": taught_in,
        "glued numbers": glued_numbers_checked,
        "glued values per sentence": crowded_sentences,
        "additions prose": additions_prose,
        **cell_checks(),
        "own definitions": cell_conventions.own_definitions,
        "package layers": layer_problems,
        "import circles": import_circles,
    }


CONVENTIONS = ["structure", "file numbers", "introduction", "module docstrings", "taught in", "glued numbers",
               "glued values per sentence", "additions prose", "code width", "visible cell length", "taught and shown",
               "checks apart from taught code", "figure alt text", "taught in by hand", "own definitions",
               "package layers", "import circles"]


def all_problems(root: Path, names: Collection[str] | None = None) -> dict[str, list[str]]:
    """Every convention's problems (or those of the conventions `names`), by name. Those that
    read the exported modules are skipped, saying so, when the chapters cannot be exported (the
    export's own error names why)."""
    from book.cells import ExportError
    from book.reference import _collected

    checks = {name: check for name, check in conventions().items() if names is None or name in names}
    try:
        modules = _collected(root) if NEEDS_MODULES & set(checks) else None
    except ExportError:
        modules = None
    found = {}
    for name, check in checks.items():
        try:
            if name in NEEDS_MODULES:
                found[name] = check(root, modules) if modules is not None else []
            else:
                found[name] = check(root)
        except ExportError as err:  # a chapter jupytext cannot read: named once by the export
            found[name] = [] if modules is None else [str(err)]
    return found


def convention_problems(root: Path) -> list[str]:
    """Every convention's problems, one list, each with the file and line, the rule and the fix."""
    return [problem for problems in all_problems(root).values() for problem in problems]
