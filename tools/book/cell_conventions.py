"""The conventions of the chapters' code cells, checked from the text (part of `book.conventions`).

Each message names the chapter line, the rule and the fix:

- code on the page fits 90 columns: every line of every code cell, options included;
- chapters 10-13 and the counting appendix show no unfolded code cell longer than 60 lines, and
  define what they teach (`TAUGHT`) in cells the page shows, never in folded ones;
- the book's plumbing (`glue`, `glue_md`, `markdown_table`, `assert`) never sits in a shown cell:
  it goes in a removed cell after the taught code;
- a chapter runs its own definitions: it never imports from the package a name one of its own
  exported cells defines (a reader's edit to that cell would be silently ignored);
- a cell that draws a figure says what it shows (`mystnb: image: alt:`, a sentence, not a file
  name): MyST-NB gives the `<img>` that text;
- a chapter never writes the `Taught in ...` line into a docstring: the exporter adds it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from book.cells import PACKAGE, cell_fence_lines, cell_source_lines, read_myst, toc_chapters

CODE_WIDTH = 90
# Chapters 10-13, and the appendix that teaches the counting models they measure against, teach
# the idea on the page and fold the machinery: no code cell a reader sees without opening it is
# longer than this.
VISIBLE_CELL_LINES = 60
TEACHING_CHAPTERS = re.compile(r"book/(1[0-3]_|counting\.md$)")
FOLDING_TAGS = re.compile(r"^(:tags:|tags:).*\b(hide-input|hide-cell|remove-input|remove-cell)\b")
CODE_CELL = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")
TAUGHT_IN_BY_HAND = ("Taught in chapter", "Taught in the appendix")
# What chapters 10-13 and the counting appendix teach, by name: each is defined in a code cell
# the page shows, never in a folded or removed one (DESIGN.md, "Conventions": what the prose
# teaches is shown).
TAUGHT = {
    "book/10_bert.md": ["frame_tokens", "BertConfig", "BertEmbedding", "BertEncoder",
                        "BertForSequenceClassification"],
    "book/11_training.md": ["evaluate", "training_step", "make_optimizer", "lr_multiplier",
                            "token_contributions", "reading_contributions"],
    "book/counting.md": ["fit_majority", "count_features", "fit_bag_of_words", "log_count_ratio",
                         "fit_nbsvm", "add_k_bigram"],
    "book/12_gpt.md": ["GPTConfig", "GPTModel", "token_stream", "next_token_loss",
                       "next_token_probabilities", "generate", "KVCache", "attend_with_cache",
                       "block_with_cache"],
    "book/13_pretraining.md": ["mask_tokens", "BertForMaskedLM", "masked_lm_loss",
                               "ElectraPretrainer", "pretraining_step", "GPTClassifier",
                               "fine_tune", "classification_accuracy"],
}
# The book's own plumbing, never part of a taught cell: it goes in a removed cell after it.
CHECK_CALLS = {"glue", "glue_md", "markdown_table"}
# Calls that put a figure into a cell's output.
DRAWING_CALLS = {"plt.show", "plt.subplots", "plt.figure", "plt.imshow", "plt.plot",
                 "pipeline_map", "shape_diagram"}
ALT_MIN_WORDS = 8
FILE_NAME = re.compile(r"(^|[\\/])[^\s]*\.(png|svg|jpe?g|gif)$|^\.\./_images/", re.IGNORECASE)
ALT_TEXT_FIX = ("Fix: say in the cell's options what its figure shows (its axes, what it compares, the "
                "point it makes), as the chapters' maps do: `mystnb:` / `  image:` / "
                "`    alt: 'Loss against training steps: ...'`")


def chapter_text(root: Path, chapter: str) -> str:
    return (root / chapter).read_text(encoding="utf-8")


def code_cells(text: str) -> list[tuple[int, list[str]]]:
    """(line of the opening fence, lines up to the closing fence) of each code cell."""
    cells, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = CODE_CELL.match(lines[i])
        if not match:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == match.group(1)), len(lines))
        cells.append((i + 1, lines[i + 1:end]))
        i = end + 1
    return cells


def long_code_lines(root: Path, chapter: str) -> list[tuple[int, int]]:
    """(chapter line, width) of each line of a code cell wider than CODE_WIDTH."""
    return [(fence + offset, len(line))
            for fence, body in code_cells(chapter_text(root, chapter))
            for offset, line in enumerate(body, start=1) if len(line) > CODE_WIDTH]


def code_width(root: Path) -> list[str]:
    return [f"{chapter}:{line}: a code line of {width} columns (rule: code fits the page's {CODE_WIDTH} "
            "columns, or the reader scrolls sideways). Fix: break the line (inside brackets, or a long "
            "string into two), or shorten a comment"
            for chapter in toc_chapters(root) for line, width in long_code_lines(root, chapter)]


def is_folded(body: list[str]) -> bool:
    return any(FOLDING_TAGS.match(line) for line in body[:12])


def long_visible_cells(root: Path) -> list[str]:
    """Each unfolded code cell of chapters 10-13 and the counting appendix that is too long."""
    return [f"{chapter}:{fence}: a visible code cell of {len(body)} lines (rule: at most "
            f"{VISIBLE_CELL_LINES} in chapters 10-13 and the counting appendix). Fix: fold what the prose "
            "does not teach (`:tags: [hide-input]`), or split the cell"
            for chapter in toc_chapters(root) if TEACHING_CHAPTERS.match(chapter)
            for fence, body in code_cells(chapter_text(root, chapter))
            if not is_folded(body) and len(body) > VISIBLE_CELL_LINES]


def cell_source(body: list[str]) -> str:
    """A cell's code without its options (`:tags:` lines or a `---` block)."""
    start = 0
    if body and body[0].strip() == "---":
        start = body.index("---", 1) + 1
    while start < len(body) and body[start].startswith(":"):
        start += 1
    return "\n".join(body[start:])


def teaching_cells(root: Path, every_page: bool = False) -> list[tuple[str, int, str, bool]]:
    """(chapter, line, code, folded) of each code cell of chapters 10-13 and the counting
    appendix (of every page of the book with `every_page`)."""
    return [(chapter, fence, cell_source(body), is_folded(body))
            for chapter in toc_chapters(root) if every_page or TEACHING_CHAPTERS.match(chapter)
            for fence, body in code_cells(chapter_text(root, chapter))]


def taught_but_folded(root: Path) -> list[str]:
    """Names in TAUGHT that a chapter defines only in a folded or removed cell, or not at all."""
    shown: dict[str, set[str]] = {}
    folded_at: dict[tuple[str, str], int] = {}
    for chapter, fence, source, folded in teaching_cells(root):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                if folded:
                    folded_at[(chapter, node.name)] = fence
                else:
                    shown.setdefault(chapter, set()).add(node.name)
    problems = []
    for chapter, names in TAUGHT.items():
        if not (root / chapter).is_file():
            continue
        for name in names:
            if name in shown.get(chapter, set()):
                continue
            if (chapter, name) in folded_at:
                problems.append(f"{chapter}:{folded_at[(chapter, name)]}: {name} is taught but its cell is "
                                "folded (rule: what the prose teaches is shown). Fix: show it, and move what the "
                                "prose does not teach (checks, plumbing) into a folded cell or the package")
            else:
                problems.append(f"{chapter}:1: {name} is listed as taught but no cell defines it. Fix: define "
                                "it in a shown cell, or remove it from TAUGHT in tools/book/cell_conventions.py")
    return problems


def call_name(node: ast.Call) -> str:
    """`plt.show` for plt.show(), `show_weights` for show_weights(...)."""
    func, parts = node.func, []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def checks_in_taught_cells(root: Path) -> list[str]:
    """Shown cells of every page that call glue/glue_md/markdown_table or hold an assert."""
    problems = []
    for chapter, fence, source, folded in teaching_cells(root, every_page=True):
        if folded:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        calls = {call_name(node) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        found = sorted(calls & CHECK_CALLS)
        if any(isinstance(node, ast.Assert) for node in ast.walk(tree)):
            found.append("assert")
        if found:
            problems.append(f"{chapter}:{fence}: a shown cell uses {', '.join(found)} (rule: the book's checks "
                            "and glue stay apart from the taught code). Fix: put them in a cell of their own "
                            "after it, tagged remove-cell (remove-input for a table the page shows)")
    return problems


def exported(cell) -> bool:
    return any(t == "export" or t.startswith("export:") for t in cell.metadata.get("tags", []))


def own_definitions(root: Path, modules) -> list[str]:
    """Lines of a chapter that import from the package a name the chapter's own exported cells define."""
    defined: dict[str, set[tuple[str, str]]] = {}
    for module in modules.values():
        for block in module.blocks:
            defined.setdefault(block.chapter, set()).update((module.name, name) for name in block.names)
    problems = []
    for chapter in toc_chapters(root):
        if chapter not in defined:
            continue
        text = chapter_text(root, chapter)
        lines = text.splitlines()
        cells = [c for c in read_myst(text, chapter).cells if c.cell_type == "code"]
        for cell, fence in zip(cells, cell_fence_lines(text)):
            if exported(cell):
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:  # magics; such a cell imports nothing we check
                continue
            located = cell_source_lines(lines, fence, cell.source)
            for node in tree.body:
                if not (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE):
                    continue
                names = [a.name for a in node.names if (node.module, a.name) in defined[chapter]]
                if names:
                    line = located[node.lineno - 1] or fence
                    problems.append(
                        f"{chapter}:{line}: imports from the package what the chapter's own cells define "
                        f"({', '.join(f'{node.module}.{n}' for n in names)}), so a reader's edit to those cells "
                        "would be ignored (rule: a chapter runs its own definitions). Fix: use the chapter's "
                        "definitions (the tests compare them with the package) and drop the import")
    return problems


def top_level_calls(tree: ast.Module) -> set[str]:
    """Names called by a cell's own statements, not inside the functions it defines."""
    names: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            names.add(call_name(node))
        pending.extend(ast.iter_child_nodes(node))
    return names


def drawing_cells(notebook) -> list[int]:
    """Indices of the code cells that draw a figure: they call a drawing function, or a
    function of the chapter that calls one (such as chapter 4's `show_weights`)."""
    trees = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            try:
                trees[index] = ast.parse(cell.source)
            except SyntaxError:  # magics: such a cell draws nothing we check
                continue
    drawing = set(DRAWING_CALLS)
    functions = {node.name: {call_name(c) for c in ast.walk(node) if isinstance(c, ast.Call)}
                 for tree in trees.values() for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    while True:  # helpers of helpers
        more = {name for name, calls in functions.items() if calls & drawing} - drawing
        if not more:
            break
        drawing |= more
    return [index for index, tree in trees.items() if top_level_calls(tree) & drawing]


def alt_text_problem(alt: object) -> str | None:
    """What is wrong with a figure's alt text (None when it says what the figure shows)."""
    if not isinstance(alt, str) or not alt.strip():
        return "no alt text"
    if FILE_NAME.search(alt.strip()):
        return f"its alt text is a file name ({alt!r})"
    if len(alt.split()) < ALT_MIN_WORDS:
        return f"its alt text ({alt!r}) is too short to say what the figure shows"
    return None


def figure_alt_text(root: Path) -> list[str]:
    problems = []
    for chapter in toc_chapters(root):
        text = chapter_text(root, chapter)
        notebook = read_myst(text, chapter)
        fences = cell_fence_lines(text)
        code_indices = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
        for index in drawing_cells(notebook):
            metadata = notebook.cells[index].metadata.get("mystnb", {})
            problem = alt_text_problem((metadata.get("image") or {}).get("alt"))
            if problem:
                problems.append(f"{chapter}:{fences[code_indices.index(index)]}: the cell draws a figure but "
                                f"{problem} (rule: every figure says what it shows). {ALT_TEXT_FIX}")
    return problems


def taught_in_by_hand(root: Path) -> list[str]:
    """Lines of code cells that write `Taught in ...` into a docstring (the exporter adds it)."""
    problems = []
    for chapter in toc_chapters(root):
        text = chapter_text(root, chapter)
        lines = text.splitlines()
        cells = [c for c in read_myst(text, chapter).cells if c.cell_type == "code"]
        for cell, fence in zip(cells, cell_fence_lines(text)):
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:  # magics; a cell with them is not exported
                continue
            source = cell.source.splitlines()
            located = cell_source_lines(lines, fence, cell.source)
            for node in ast.walk(tree):
                if not (isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                        and ast.get_docstring(node) is not None):
                    continue
                string = node.body[0]
                problems += [
                    f"{chapter}:{located[i] or fence}: a docstring says where its name is taught, which "
                    "tools/export.py adds itself from the heading above the cell (rule: the chapter does not "
                    "repeat it). Fix: remove the line and the blank line before it, keeping the closing "
                    "quotes on a line of their own"
                    for i in range(string.lineno - 1, string.end_lineno)
                    if source[i].strip().lstrip("\"'").startswith(TAUGHT_IN_BY_HAND)]
    return problems
