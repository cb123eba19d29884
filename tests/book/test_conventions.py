"""The book's conventions, checked without building it, so that a new chapter that forgets one
fails here with a message that says what to add.

- a module's docstring comes from the front-matter key `export_doc` of a chapter feeding it;
- a chapter's file is numbered like the chapter (`book/NN_topic.md` is chapter NN);
- the introduction links every chapter;
- every exported function and class says where it is taught: it has a docstring, which
  tools/export.py ends in the module with `Taught in chapter N, "<a heading of chapter N>".`
  (in an appendix: `Taught in the appendix "<its title>", "<a heading>".`);
- a chapter never writes that line into a docstring itself: on the page it would only repeat
  the heading above the cell;
- a chapter closes with "What this chapter added to the package", whose list of names is
  generated (the directive `package-additions`), never typed;
- a chapter that glues numbers into its prose has them checked in the built HTML
  (`EXPECTED_IN_HTML` in tests/book/test_book.py); on the pages of `SHORT_SENTENCES`, no
  sentence carries more than three glued values (a reader holds three figures, not thirteen);
- code on the page fits 90 columns: every line of every code cell, options included;
- a chapter runs its own definitions: it never imports from the package a name that one of its
  own exported cells defines (a reader's edit to that cell would be silently ignored);
- a code cell that draws a figure (calls `plt.show`, `plt.subplots`, `plt.figure`, the book's
  diagrams, or a function of the chapter that does) says what the figure shows in its metadata
  (`mystnb: image: alt:`), a sentence or more, not a file name: MyST-NB gives the `<img>` that
  text, and without it the page gives the image's path to a reader who cannot see it;
- the prose after the generated list of names agrees with it: a chapter that exports something
  never says it adds nothing to the package (and one that exports nothing, that it adds names).

Chapters written before the last two conventions may be listed in `WIDER_THAN_90_COLUMNS` and
`IMPORTING_THEIR_OWN_DEFINITIONS` until they are fixed; the test fails once a listed chapter
keeps the convention, so that the lists only shrink.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from test_book import EXPECTED_IN_HTML
from test_export import copy_repo

sys.path.insert(0, str(ROOT / "tools"))
import book  # noqa: E402
from book import reference  # noqa: E402

ADDED_HEADING = "What this chapter added to the package"
CODE_WIDTH = 90
# Chapters 10-13, and the appendix that teaches the counting models they measure against, teach
# the idea on the page and fold the machinery: no code cell a reader sees without opening it is
# longer than this.
VISIBLE_CELL_LINES = 60
TEACHING_CHAPTERS = re.compile(r"book/(1[0-3]_|counting\.md$)")
FOLDING_TAGS = re.compile(r"^(:tags:|tags:).*\b(hide-input|hide-cell|remove-input|remove-cell)\b")
CODE_CELL = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")
TAUGHT_IN_BY_HAND = ("Taught in chapter", "Taught in the appendix")
# Chapters that do not keep a convention yet. Empty these sets as the chapters are fixed.
WIDER_THAN_90_COLUMNS: set[str] = set()
IMPORTING_THEIR_OWN_DEFINITIONS: set[str] = set()
ADDED_SECTION = f"## {ADDED_HEADING}\n\n```{{{reference.ADDITIONS_DIRECTIVE}}}\n```\n"
GLUE_ROLE = re.compile(r"\{glue(:[a-z]+)?\}`")
# Pages whose every sentence carries at most GLUED_PER_SENTENCE glued values. The others were
# written before the rule; add a page here once its sentences keep it.
SHORT_SENTENCES = {"book/11_training.md", "book/experiments_11.md"}
GLUED_PER_SENTENCE = 3
FENCE = re.compile(r"^(`{3,}|~{3,})")


def module_docstrings(root: Path) -> list[str]:
    return [
        f"{module.name}: add `export_doc:` (the module's docstring) to the front matter of {module.chapters[0]}"
        for module in book.collect(root).values() if not module.docs
    ]


def file_numbers(root: Path) -> list[str]:
    return [
        f"{chapter} is chapter {number} in _toc.yml: name it book/{number:02d}_<topic>.md "
        "(docstrings and the introduction refer to chapters by number)"
        for number, chapter in enumerate(book.numbered_chapters(root), start=1)
        if not Path(chapter).name.startswith(f"{number:02d}_")
    ]


def intro_links(root: Path) -> list[str]:
    intro = (root / "book" / "intro.md").read_text(encoding="utf-8")
    return [
        f"book/intro.md does not link to {chapter}: add it, with a line on what it builds, to the list "
        "of chapters in 'The 1,000-foot view'"
        for chapter in book.numbered_chapters(root)
        if f"]({Path(chapter).name})" not in intro and f"]({Path(chapter).name}#" not in intro
    ]


def closing_sections(root: Path) -> list[str]:
    problems = []
    for chapter in book.numbered_chapters(root):
        text = (root / chapter).read_text(encoding="utf-8")
        sections = [h for h in reference.heading_anchors(text) if h[1] == 2]
        if not (sections and sections[-1][2] == ADDED_HEADING and ADDED_SECTION in text):
            problems.append(
                f"{chapter} must close with the list of names it added to the package, generated from its "
                f"exported cells. Make its last section:\n\n{ADDED_SECTION}\n(prose may follow the directive)"
            )
    return problems


def page_title(root: Path, chapter: str) -> str:
    """The text of a page's first `# ` heading."""
    lines = (root / chapter).read_text(encoding="utf-8").splitlines()
    return next(m.group(2) for m in map(book.HEADING.match, lines) if m and m.group(1) == "#")


def taught_in(root: Path) -> list[str]:
    chapters = book.numbered_chapters(root)
    problems = []
    titles_of: dict[str, set[str]] = {}
    for module in book.collect(root).values():
        for block in module.blocks:
            number = chapters.index(block.chapter) + 1 if block.chapter in chapters else None
            if block.chapter not in titles_of:
                lines = (root / block.chapter).read_text(encoding="utf-8").splitlines()
                titles_of[block.chapter] = {m.group(2) for m in map(book.HEADING.match, lines) if m} | {
                    h[2] for h in reference.heading_anchors("\n".join(lines))}
            titles = titles_of[block.chapter]
            for entry in reference.entries_of(block):  # the docstrings as the module has them
                if entry.kind == "data":
                    continue
                paragraphs = [p for p in re.split(r"\n\s*\n", entry.doc.strip()) if p.strip()]
                last = " ".join(paragraphs[-1].split()) if paragraphs else ""
                where = f"chapter {number}" if number else f'the appendix "{page_title(root, block.chapter)}"'
                match = re.fullmatch(r'Taught in (chapter \d+|the appendix "[^"]+"), "(.+)"\.', last)
                if not match or match.group(1) != where or match.group(2) not in titles:
                    name = f"{module.name}.{entry.name} ({block.chapter}:{block.line})"
                    line = f'\n    Taught in {where}, "{block.section}".'
                    problems.append(
                        f"{name}: give it a docstring; tools/export.py ends it with the line{line}"
                        if not entry.doc else
                        f"{name}: its exported docstring does not end with the line{line}\n"
                        "which tools/export.py adds (is the module out of date? `make export`)"
                    )
    return problems


def taught_in_by_hand(root: Path) -> list[str]:
    """Chapters whose code cells write `Taught in ...` into a docstring (the exporter adds it)."""
    import jupytext

    problems = []
    for chapter in book.toc_chapters(root):
        text = (root / chapter).read_text(encoding="utf-8")
        lines = text.splitlines()
        cells = [c for c in jupytext.reads(text, fmt="md:myst").cells if c.cell_type == "code"]
        found = []
        for cell, fence in zip(cells, book.cell_fence_lines(text)):
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:  # magics; a cell with them is not exported
                continue
            source = cell.source.splitlines()
            located = book.cell_source_lines(lines, fence, cell.source)
            for node in ast.walk(tree):
                if not (isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                        and ast.get_docstring(node) is not None):
                    continue
                string = node.body[0]
                found += [f"{chapter}:{located[i] or fence}" for i in range(string.lineno - 1, string.end_lineno)
                          if source[i].strip().lstrip("\"'").startswith(TAUGHT_IN_BY_HAND)]
        if found:
            problems.append(
                f"{chapter} writes into docstrings the line saying where a name is taught, which "
                "tools/export.py adds itself, from the heading above the cell, when it writes the "
                "module: remove each such line and the blank line before it, keeping the closing "
                f"quotes on a line of their own ({', '.join(found)})"
            )
    return problems


def glued_numbers_checked(root: Path, expected: dict[str, list[str]]) -> list[str]:
    pages = {Path(chapter).with_suffix(".html").as_posix(): chapter for chapter in book.toc_chapters(root)}
    problems = [
        f"EXPECTED_IN_HTML in tests/book/test_book.py names {page}, which the book does not have"
        for page in sorted(set(expected) - set(pages))
    ]
    for page, chapter in pages.items():
        glued = len(GLUE_ROLE.findall((root / chapter).read_text(encoding="utf-8")))
        if glued and not expected.get(page):
            problems.append(
                f"{chapter} quotes {glued} glued values: add \"{page}\": [the numbers its prose quotes, as "
                "the page shows them] to EXPECTED_IN_HTML in tests/book/test_book.py"
            )
    return problems


def prose_sentences(text: str) -> list[str]:
    """The sentences of a page's prose: front matter, code cells and directives left out,
    each list item its own, a sentence ending at `.`, `!` or `?` before a capital."""
    lines = text.split("\n")
    if lines and lines[0] == "---":
        lines = lines[lines.index("---", 1) + 1:]
    kept, fence = [], None
    for line in lines:
        if fence:
            fence = None if line.strip() == fence else fence
            continue
        match = FENCE.match(line)
        if match:
            fence = match.group(1)
            continue
        kept.append(line)
    sentences = []
    for paragraph in re.split(r"\n\s*\n", "\n".join(kept)):
        for item in re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", paragraph):
            sentences += re.split(r"(?<=[.!?])\s+(?=[A-Z*\"(\[{])", " ".join(item.split()))
    return [sentence for sentence in sentences if sentence]


def crowded_sentences(root: Path, pages: set[str] = SHORT_SENTENCES) -> list[str]:
    """Sentences of `pages` that carry more than GLUED_PER_SENTENCE glued values."""
    problems = []
    for page in sorted(pages):
        for sentence in prose_sentences((root / page).read_text(encoding="utf-8")):
            glued = len(GLUE_ROLE.findall(sentence))
            if glued > GLUED_PER_SENTENCE:
                problems.append(f"{page}: a sentence carries {glued} glued values (at most "
                                f"{GLUED_PER_SENTENCE}): split it: {sentence[:120]}")
    return problems


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


def long_code_lines(root: Path, chapter: str) -> list[str]:
    """`chapter:line (width)` for each line of a code cell wider than CODE_WIDTH."""
    return [
        f"{chapter}:{fence + offset} ({len(line)} columns)"
        for fence, body in code_cells((root / chapter).read_text(encoding="utf-8"))
        for offset, line in enumerate(body, start=1) if len(line) > CODE_WIDTH
    ]


def code_width(root: Path, exceptions: set[str] = WIDER_THAN_90_COLUMNS) -> list[str]:
    problems = []
    for chapter in book.toc_chapters(root):
        long_lines = long_code_lines(root, chapter)
        if long_lines and chapter not in exceptions:
            problems.append(f"{chapter}: code lines wider than {CODE_WIDTH} columns (the page shows "
                            f"{CODE_WIDTH}): " + ", ".join(long_lines))
        elif chapter in exceptions and not long_lines:
            problems.append(f"{chapter} keeps its code within {CODE_WIDTH} columns now: remove it from "
                            "WIDER_THAN_90_COLUMNS in tests/book/test_conventions.py")
    return problems


def long_visible_cells(root: Path) -> list[str]:
    """`chapter:line (lines)` for each unfolded code cell of chapters 10-13 and the counting
    appendix that is too long."""
    problems = []
    for chapter in book.toc_chapters(root):
        if not TEACHING_CHAPTERS.match(chapter):
            continue
        for fence, body in code_cells((root / chapter).read_text(encoding="utf-8")):
            folded = any(FOLDING_TAGS.match(line) for line in body[:12])
            if not folded and len(body) > VISIBLE_CELL_LINES:
                problems.append(f"{chapter}:{fence} is a visible code cell of {len(body)} lines "
                                f"(at most {VISIBLE_CELL_LINES}): fold it (hide-input) or split it")
    return problems


# What chapters 10-13 and the counting appendix teach, by name: each is defined in a code cell
# the page shows, never in a folded or removed one (DESIGN.md, "Conventions": what the prose
# teaches is shown).
TAUGHT = {
    "book/10_bert.md": ["frame_tokens", "BertConfig", "BertEmbedding", "BertEncoder",
                        "BertForSequenceClassification"],
    "book/11_training.md": ["evaluate", "training_step", "make_optimizer", "lr_multiplier",
                            "token_contributions", "reading_contributions", "review_windows",
                            "whole_review_logits",
                            "t_quantile", "paired_difference"],
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
    cells = []
    for chapter in book.toc_chapters(root):
        if every_page or TEACHING_CHAPTERS.match(chapter):
            for fence, body in code_cells((root / chapter).read_text(encoding="utf-8")):
                folded = any(FOLDING_TAGS.match(line) for line in body[:12])
                cells.append((chapter, fence, cell_source(body), folded))
    return cells


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
        for name in names:
            if name in shown.get(chapter, set()):
                continue
            if (chapter, name) in folded_at:
                problems.append(f"{chapter}:{folded_at[(chapter, name)]}: {name} is taught but its "
                                "cell is folded; show it, and move what the prose does not teach "
                                "(checks, plumbing) into a folded cell or the package")
            else:
                problems.append(f"{chapter}: {name} is listed as taught but no cell defines it")
    return problems


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
            problems.append(f"{chapter}:{fence}: a shown cell uses {', '.join(found)}; put them in "
                            "a cell of their own after it, tagged remove-cell (remove-input for a "
                            "table the page shows)")
    return problems


def imported_names(source: str) -> list[tuple[str, str]]:
    """(module, name) of each `from scratchformer... import name` at the top level of a cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # magics; such a cell imports nothing we check
        return []
    return [(node.module, alias.name) for node in tree.body
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(book.PACKAGE)
            for alias in node.names]


def own_definitions(root: Path, exceptions: set[str] = IMPORTING_THEIR_OWN_DEFINITIONS) -> list[str]:
    import jupytext

    defined: dict[str, set[tuple[str, str]]] = {}
    for module in book.collect(root).values():
        for block in module.blocks:
            defined.setdefault(block.chapter, set()).update((module.name, name) for name in block.names)
    problems = []
    for chapter in book.toc_chapters(root):
        notebook = jupytext.reads((root / chapter).read_text(encoding="utf-8"), fmt="md:myst")
        reimported = sorted({
            f"{module}.{name}" for cell in notebook.cells if cell.cell_type == "code"
            if not any(t == "export" or t.startswith("export:") for t in cell.metadata.get("tags", []))
            for module, name in imported_names(cell.source) if (module, name) in defined.get(chapter, set())
        })
        if reimported and chapter not in exceptions:
            problems.append(f"{chapter} imports from the package what its own cells define, so a reader's "
                            f"edit to those cells would be ignored: {', '.join(reimported)}; use the "
                            "chapter's definitions (tests compare them with the package)")
        elif chapter in exceptions and not reimported:
            problems.append(f"{chapter} runs its own definitions now: remove it from "
                            "IMPORTING_THEIR_OWN_DEFINITIONS in tests/book/test_conventions.py")
    return problems


# Calls that put a figure into a cell's output.
DRAWING_CALLS = {"plt.show", "plt.subplots", "plt.figure", "plt.imshow", "plt.plot",
                 "pipeline_map", "shape_diagram"}
ALT_MIN_WORDS = 8
FILE_NAME = re.compile(r"(^|[\\/])[^\s]*\.(png|svg|jpe?g|gif)$|^\.\./_images/", re.IGNORECASE)


def call_name(node: ast.Call) -> str:
    """`plt.show` for plt.show(), `show_weights` for show_weights(...)."""
    func, parts = node.func, []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


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
    if not isinstance(alt, str) or not alt.strip():
        return "no alt text"
    if FILE_NAME.search(alt.strip()):
        return f"its alt text is a file name ({alt!r})"
    if len(alt.split()) < ALT_MIN_WORDS:
        return f"its alt text ({alt!r}) is too short to say what the figure shows"
    return None


def figure_alt_text(root: Path) -> list[str]:
    import jupytext

    problems = []
    for chapter in book.toc_chapters(root):
        text = (root / chapter).read_text(encoding="utf-8")
        notebook = jupytext.reads(text, fmt="md:myst")
        fences = book.cell_fence_lines(text)
        code_indices = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
        for index in drawing_cells(notebook):
            metadata = notebook.cells[index].metadata.get("mystnb", {})
            alt = (metadata.get("image") or {}).get("alt")
            problem = alt_text_problem(alt)
            if problem:
                problems.append(f"{chapter}:{fences[code_indices.index(index)]}: the cell draws a "
                                f"figure but {problem}")
    if problems:
        problems.append(
            "Say in each such cell's options what its figure shows (its axes, what it compares, "
            "the point it makes), as the chapters' maps do:\n---\nmystnb:\n  image:\n    alt: "
            "'Loss against training steps: ...'\ntags: [hide-input]\n---")
    return problems


NOTHING_ADDED = re.compile(r"adds? nothing to the package|exports? nothing|no new names", re.I)


def additions_prose(root: Path) -> list[str]:
    """Chapters whose words about what they add contradict the generated list of names."""
    problems = []
    for chapter in book.numbered_chapters(root):
        text = (root / chapter).read_text(encoding="utf-8")
        start = text.find(f"## {ADDED_HEADING}")
        if start < 0:
            continue
        prose = text[start:].split(f"```{{{reference.ADDITIONS_DIRECTIVE}}}\n```", 1)[-1]
        prose = "\n".join(line for line in prose.split("\n") if not line.startswith("#")) if prose else ""
        adds = reference.chapter_additions(root, chapter).strip() != reference.NO_ADDITIONS
        said = NOTHING_ADDED.search(" ".join(prose.split()))
        if adds and said:
            problems.append(f"{chapter}: the prose after the list of names says \"{said.group(0)}\", but "
                            "the chapter exports names (the generated list above it shows them)")
    return problems


def all_problems(root: Path, expected: dict[str, list[str]]) -> dict[str, list[str]]:
    return {
        "module docstrings": module_docstrings(root),
        "file numbers": file_numbers(root),
        "introduction": intro_links(root),
        "closing sections": closing_sections(root),
        "taught in": taught_in(root),
        "taught in by hand": taught_in_by_hand(root),
        "glued numbers": glued_numbers_checked(root, expected),
        "glued values per sentence": crowded_sentences(root),
        "code width": code_width(root),
        "visible cell length": long_visible_cells(root),
        "taught and shown": taught_but_folded(root),
        "checks apart from taught code": checks_in_taught_cells(root),
        "own definitions": own_definitions(root),
        "figure alt text": figure_alt_text(root),
        "additions prose": additions_prose(root),
    }


CONVENTIONS = ["module docstrings", "file numbers", "introduction", "closing sections", "taught in",
               "taught in by hand", "glued numbers", "glued values per sentence", "code width", "visible cell length",
               "taught and shown", "checks apart from taught code",
               "own definitions",
               "figure alt text", "additions prose"]


@pytest.fixture(scope="module")
def repository_problems() -> dict[str, list[str]]:
    assert len(book.numbered_chapters(ROOT)) >= 10
    problems = all_problems(ROOT, EXPECTED_IN_HTML)
    assert sorted(problems) == sorted(CONVENTIONS)
    return problems


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_the_book_keeps_its_conventions(repository_problems: dict[str, list[str]], convention: str) -> None:
    problems = repository_problems[convention]
    assert not problems, "\n".join(problems)


NEW_CHAPTER = '''---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
export: scratchformer.sketch
---

# Sketch

```{code-cell} ipython3
:tags: [export]

def continue_text(prompt):
    return prompt


def stop_text(prompt):
    """Stop `prompt`.

    Taught in chapter 1, "Sketch".
    """
    return prompt
```

```{code-cell} ipython3
from myst_nb import glue

glue("answer", 42)
```

The answer is {glue:text}`answer`.

## What this chapter added

- `continue_text(prompt)`: continue a prompt.
'''


def add_last_chapter(root: Path, name: str, text: str) -> int:
    """Write `book/<name>.md` and list it after the numbered part's last chapter; its number."""
    (root / "book" / f"{name}.md").write_text(text, encoding="utf-8")
    last = book.numbered_chapters(root)[-1].removesuffix(".md")
    toc = root / "_toc.yml"
    toc.write_text(toc.read_text().replace(f"      - file: {last}\n",
                                           f"      - file: {last}\n      - file: book/{name}\n"))
    return len(book.numbered_chapters(root))


def test_a_new_chapter_that_forgets_the_conventions_is_told_what_to_add(tmp_path: Path) -> None:
    root = copy_repo(tmp_path)
    number = len(book.numbered_chapters(root)) + 1
    name = f"{number + 1:02d}_sketch"  # misnumbered on purpose
    assert add_last_chapter(root, name, NEW_CHAPTER) == number
    problems = all_problems(root, EXPECTED_IN_HTML)
    assert problems["module docstrings"] == [
        f"scratchformer.sketch: add `export_doc:` (the module's docstring) to the front matter of book/{name}.md"
    ]
    assert problems["file numbers"] == [
        f"book/{name}.md is chapter {number} in _toc.yml: name it book/{number:02d}_<topic>.md "
        "(docstrings and the introduction refer to chapters by number)"
    ]
    assert problems["introduction"] and f"book/intro.md does not link to book/{name}.md" in problems["introduction"][0]
    assert problems["closing sections"] and ADDED_SECTION in problems["closing sections"][0]
    assert problems["taught in"] == [
        f'scratchformer.sketch.continue_text (book/{name}.md:15): give it a docstring; tools/export.py ends '
        f'it with the line\n    Taught in chapter {number}, "Sketch".'
    ]
    (by_hand,) = [p for p in problems["taught in by hand"] if p.startswith(f"book/{name}.md ")]
    assert by_hand.startswith(f"book/{name}.md writes into docstrings the line saying where a name is taught")
    assert by_hand.endswith(f"(book/{name}.md:25)")
    assert problems["glued numbers"] and f'"book/{name}.html": [' in problems["glued numbers"][0]


WIDE_AND_SELF_IMPORTING = '''---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
export: scratchformer.sketch
---

# Sketch

```{code-cell} ipython3
:tags: [export]

def continue_text(prompt):
    """Continue `prompt`.
    """
    return prompt
```

```{code-cell} ipython3
from scratchformer.sketch import continue_text

print(continue_text("a prompt that makes this line of code wider than the ninety columns of a page"))
```
'''


def test_wide_code_and_reimported_definitions_are_named(tmp_path: Path) -> None:
    root = copy_repo(tmp_path)
    name = f"{len(book.numbered_chapters(root)) + 1:02d}_sketch"
    add_last_chapter(root, name, WIDE_AND_SELF_IMPORTING)
    width = code_width(root)
    assert any(p.startswith(f"book/{name}.md: code lines wider than 90") and f"book/{name}.md:27 (" in p
               for p in width), width
    own = own_definitions(root)
    assert any(p.startswith(f"book/{name}.md imports from the package")
               and "scratchformer.sketch.continue_text" in p for p in own), own


def test_a_fixed_chapter_must_leave_the_list_of_exceptions(tmp_path: Path) -> None:
    root = copy_repo(tmp_path)
    fixed = "book/02_embeddings.md"
    assert not long_code_lines(root, fixed)
    assert [p for p in code_width(root, exceptions={fixed}) if p.startswith(fixed)] == [
        f"{fixed} keeps its code within 90 columns now: remove it from WIDER_THAN_90_COLUMNS in "
        "tests/book/test_conventions.py"
    ]


def test_prose_that_says_nothing_was_added_must_match_the_list(tmp_path: Path) -> None:
    root = copy_repo(tmp_path)
    chapter = root / "book" / "04_self_attention.md"
    chapter.write_text(chapter.read_text() + "\nThis chapter adds nothing to the package.\n")
    problems = additions_prose(root)
    assert problems == ["book/04_self_attention.md: the prose after the list of names says \"adds nothing "
                        "to the package\", but the chapter exports names (the generated list above it "
                        "shows them)"], problems
    assert additions_prose(ROOT) == [], "chapter 5 exports nothing and may say so"


# The package's layers, bottom first: a module may import its own sub-package and the layers
# below its own, never one beside or above it (DESIGN.md, "the package's imports run one way").
LAYERS = [{"io"}, {"tokenize", "nn"}, {"data"}, {"models"}, {"runs"}, {"measure"}, {"train"},
          {"web"}, {"cli"}]
# The one module beside the layers: the package's door (`__init__`, its version only).
OUTSIDE_LAYERS = {"scratchformer"}


def package_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module of the package -> the package modules it imports, at any depth of its
    code (a function's deferred import counts as much as one at the top)."""
    package = root / "src" / "scratchformer"

    def module_of(path: Path) -> str:
        parts = path.relative_to(package.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {module_of(path): path for path in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def layer_of(module: str) -> int | None:
    package = module.split(".")[1] if module.count(".") else ""
    return next((i for i, layer in enumerate(LAYERS) if package in layer), None)


def layer_problems(root: Path = ROOT) -> list[str]:
    """Modules in no layer, and imports that run up or sideways between layers."""
    graph = package_imports(root)
    problems = [f"{m} is in no layer (add its folder to LAYERS)" for m in sorted(graph)
                if m not in OUTSIDE_LAYERS and layer_of(m) is None]
    for module, targets in sorted(graph.items()):
        if module in OUTSIDE_LAYERS or layer_of(module) is None:
            continue
        for target in sorted(targets):
            same_package = target.split(".")[:2] == module.split(".")[:2]
            if target in OUTSIDE_LAYERS or same_package:
                continue
            if layer_of(target) >= layer_of(module):
                problems.append(f"{module} (layer {layer_of(module)}) imports {target} "
                                f"(layer {layer_of(target)})")
    return problems


def test_every_module_sits_in_a_layer_and_imports_only_downward() -> None:
    assert "scratchformer.cli.gpt" in package_imports()["scratchformer.cli.commands"], "the walk sees imports"
    problems = layer_problems()
    assert not problems, "\n".join(problems)


def test_the_layer_test_sees_an_upward_import(tmp_path: Path) -> None:
    root = copy_repo(tmp_path)
    module = root / "src" / "scratchformer" / "nn" / "attention.py"
    module.write_text(module.read_text() + "\nfrom scratchformer.models.bert import BertConfig\n")
    assert layer_problems(root) == [
        "scratchformer.nn.attention (layer 1) imports scratchformer.models.bert (layer 3)"]


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = {m: targets - {"scratchformer"}
             for m, targets in package_imports().items() if m not in OUTSIDE_LAYERS}

    def circle_from(start: str, path: list[str]) -> list[str] | None:
        for following in sorted(graph[path[-1]]):
            if following == start:
                return [*path, start]
            if following not in path:
                found = circle_from(start, [*path, following])
                if found:
                    return found
        return None

    circles = [c for m in sorted(graph) if (c := circle_from(m, [m]))]
    assert not circles, "modules that import each other: " + " -> ".join(circles[0])


def test_a_taught_name_in_a_folded_cell_and_a_check_in_a_shown_cell_are_named(tmp_path: Path) -> None:
    root = copy_repo(tmp_path)
    chapter = root / "book" / "12_gpt.md"
    text = chapter.read_text(encoding="utf-8")
    shown = "```{code-cell} ipython3\n:tags: [export]\n\nclass KVCache:"
    assert text.count(shown) == 1
    chapter.write_text(text.replace(shown, shown.replace("[export]", "[export, hide-input]")),
                       encoding="utf-8")
    (problem,) = taught_but_folded(root)
    assert "book/12_gpt.md:" in problem and "KVCache is taught but its cell is folded" in problem
    assert checks_in_taught_cells(root) == []
    chapter.write_text(text + "\n```{code-cell} ipython3\nx = 1\nassert x\nglue_md('x', x)\n```\n",
                       encoding="utf-8")
    (problem,) = checks_in_taught_cells(root)
    assert "a shown cell uses glue_md, assert" in problem


def test_a_long_visible_cell_in_a_teaching_chapter_is_named(tmp_path: Path) -> None:
    root = copy_repo(tmp_path)
    chapter = root / "book" / "11_training.md"
    long_cell = "```{code-cell} ipython3\n" + "x = 1\n" * 61 + "```\n"
    chapter.write_text(chapter.read_text(encoding="utf-8") + "\n" + long_cell, encoding="utf-8")
    problems = long_visible_cells(root)
    assert len(problems) == 1 and "61 lines" in problems[0], problems
    chapter.write_text(chapter.read_text(encoding="utf-8").replace(
        long_cell, long_cell.replace("ipython3\n", "ipython3\n:tags: [hide-input]\n\n")),
        encoding="utf-8")
    assert long_visible_cells(root) == []


def test_an_interval_of_two_standard_errors_is_named(tmp_path: Path) -> None:
    from book.conventions import convention_problems

    root = copy_repo(tmp_path)
    page = root / "book" / "13_pretraining.md"
    text = page.read_text(encoding="utf-8")
    assert not [p for p in convention_problems(root) if "standard errors" in p]
    page.write_text(text + "\nPretraining pays if the gain is over 2 standard errors.\n",
                    encoding="utf-8")
    (problem,) = [p for p in convention_problems(root) if "standard errors" in p]
    assert problem.startswith("book/13_pretraining.md:") and "t-interval" in problem
    page.write_text(text + "\nThe gain is 4.30 standard errors wide, 0.2 standard errors.\n",
                    encoding="utf-8")
    assert not [p for p in convention_problems(root) if "standard errors" in p]


def test_a_sentence_with_four_glued_values_is_named(tmp_path: Path) -> None:
    page = tmp_path / "book" / "page.md"
    page.parent.mkdir()
    page.write_text("---\nkernelspec: {}\n---\n\n# A page\n\nIt scores {glue:md}`a`, "
                    "{glue:md}`b`, {glue:md}`c` and {glue:md}`d`. Then {glue:md}`e`, "
                    "{glue:md}`f` and {glue:md}`g`.\n\n- one {glue:md}`h`.\n- two\n\n"
                    "```{code-cell} ipython3\nprint('{glue:md}`i` {glue:md}`j` "
                    "{glue:md}`k` {glue:md}`l`')\n```\n", encoding="utf-8")
    problems = crowded_sentences(tmp_path, {"book/page.md"})
    assert len(problems) == 1 and "carries 4 glued values" in problems[0]
    assert "It scores" in problems[0]
