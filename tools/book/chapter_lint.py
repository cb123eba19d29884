"""Every code cell of every chapter, exported or not, checked for names that do not exist.

A chapter's code cells are joined in order, as the kernel runs them, and checked with pyflakes:
an undefined name (a rename the chapter's later cells, or a later chapter, did not follow) is
named with its chapter line. A cell's IPython magics and shell escapes are read as `pass`; a
cell magic (`%%...`) leaves its cell out. Imports of the package's names are listed for the
import check of `book.package_lint`, which names those the package does not define; each line
that uses such a name is then named too, so that one run lists every line a rename left behind.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from book.cells import MAGIC, PACKAGE, cell_fence_lines, cell_source_lines, read_myst

# Names IPython gives every cell besides Python's builtins.
IPYTHON_NAMES = {"display", "get_ipython", "In", "Out", "exit", "quit"}
UNDEFINED = ("UndefinedName", "UndefinedLocal", "UndefinedExport")
MISSING_IMPORT = re.compile(r"^(?P<chapter>\S+\.md):(?P<line>\d+): imports '(?P<name>\w+)' from (?P<module>[\w.]+)")


@dataclass
class ChapterCode:
    """A chapter's code cells joined in order, and the chapter line of each joined line."""

    chapter: str
    code: str = ""
    lines: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # cells that do not parse
    exported: set[int] = field(default_factory=set)  # joined lines of exported cells
    cells: list[tuple[int, int, int]] = field(default_factory=list)  # (first, end) joined lines, fence

    def parse(self) -> ast.Module:
        """The joined code parsed; a cell that does not parse is named and left out (blanked)."""
        lines = self.code.split("\n")
        while True:
            try:
                return ast.parse("\n".join(lines))
            except SyntaxError as err:
                number = min(max(err.lineno or 1, 1), len(lines))
                first, end, fence = next(((a, b, f) for a, b, f in self.cells if a < number <= b),
                                         (number - 1, number, self.lines[number - 1]))
                self.problems.append(f"{self.chapter_line(number) if err.lineno else f'{self.chapter}:{fence}'}: "
                                     f"the cell that starts at line {fence} does not parse: {err.msg}")
                lines[first:end] = [""] * (end - first)

    @functools.cached_property
    def tree(self) -> ast.Module:
        return self.parse()

    def chapter_line(self, line: int) -> str:
        return f"{self.chapter}:{self.lines[min(max(line, 1), len(self.lines)) - 1] if self.lines else 1}"


def chapter_code(root: Path, chapter: str) -> ChapterCode:
    """The code the kernel runs for `chapter`, cell after cell."""
    text = (root / chapter).read_text(encoding="utf-8")
    chapter_lines = text.splitlines()
    fences = cell_fence_lines(text)
    found = ChapterCode(chapter)
    code: list[str] = []
    cells = [cell for cell in read_myst(text, chapter).cells if cell.cell_type == "code"]
    for cell, fence in zip(cells, fences):
        source = cell.source.split("\n")
        if source and source[0].lstrip().startswith("%%"):
            continue
        located = cell_source_lines(chapter_lines, fence, cell.source)
        python = [re.sub(r"^(\s*).*$", r"\1pass", line) if MAGIC.match(line) else line for line in source]
        found.cells.append((len(code), len(code) + len(python), fence))
        if any(tag == "export" or tag.startswith("export:") for tag in cell.metadata.get("tags", [])):
            found.exported.update(range(len(code) + 1, len(code) + len(python) + 1))
        code += python
        found.lines += [line or fence for line in (located + [None] * len(python))[:len(python)]]
    found.code = "\n".join(code) + "\n"
    found.tree  # noqa: B018 (parsed now, so that its problems are listed with the chapter's)
    return found


def undefined_names(found: ChapterCode, package_names: set[str] = frozenset()) -> list[str]:
    """pyflakes' undefined names in a chapter's joined code, with chapter lines.

    A function of an exported cell may call a name the package defines that a later chapter
    teaches (chapter 4's attention calls chapter 6's masked softmax): in the package it is
    defined, and on the page the call waits for that chapter. Such a name in such a body passes.
    """
    from pyflakes import checker

    tree = found.tree
    bodies = {line for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
              for line in range(node.body[0].lineno, node.end_lineno + 1)}
    flakes = checker.Checker(tree, filename=found.chapter, builtins=IPYTHON_NAMES)
    return [f"{found.chapter_line(message.lineno)}: {message.message % message.message_args}"
            for message in sorted(flakes.messages, key=lambda m: m.lineno)
            if type(message).__name__ in UNDEFINED
            and not (message.message_args[0] in package_names and message.lineno in bodies
                     and message.lineno in found.exported)]


def package_imports(found: ChapterCode) -> list[tuple[str, str, str]]:
    """(chapter line, module, name) of each `from scratchformer... import name` in the chapter's code."""
    imports = []
    for node in ast.walk(found.tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE and not node.level:
            imports += [(found.chapter_line(node.lineno), node.module, alias.asname or alias.name)
                        for alias in node.names if alias.name != "*"]
    return imports


def uses(found: ChapterCode, name: str, after: int) -> list[int]:
    """Chapter lines after chapter line `after` that use `name`."""
    lines = {found.lines[node.lineno - 1] for node in ast.walk(found.tree)
             if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)}
    return sorted(line for line in lines if line > after)


def uses_of_missing_imports(codes: dict[str, ChapterCode], problems: list[str]) -> list[str]:
    """For each chapter import the package check refused, every line of the chapter using that name."""
    more = []
    for problem in problems:
        match = MISSING_IMPORT.match(problem)
        if not match or match.group("chapter") not in codes:
            continue
        name, line = match.group("name"), int(match.group("line"))
        more += [f"{match.group('chapter')}:{use}: uses '{name}', imported at line {line} from "
                 f"{match.group('module')}, which does not define it" for use in uses(codes[match.group("chapter")],
                                                                              name, line)]
    return more
