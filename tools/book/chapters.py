"""The exported cells of the book, grouped by the module they go to.

Each chapter listed in `_toc.yml` may name a module in its front matter (`export:
scratchformer.<module>`, sub-packages allowed). Its code cells tagged `export` go to that module; a
cell tagged `export:scratchformer.<name>` goes to the module it names. A top-level name may be
exported only once in the whole book. The docstring of every exported top-level function and
class gets a closing line saying where it is taught (`Taught in chapter N, "<heading>".`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import jupytext

from book.cells import EXPORT_TAG, ExportError, HEADING, MAGIC, cell_fence_lines, cell_module, cell_source_lines, check_module_name, check_tags, front_matter_line, numbered_chapters, read_myst, split_cell, toc_chapters


TAUGHT_IN_LINE = re.compile(r'\s*Taught in (chapter \d+|the appendix "[^"]*"), ".*"\.')


CLOSING_QUOTES = ('"""', "'''")


@dataclass
class Block:
    module: str  # e.g. "scratchformer.attention"
    chapter: str  # path relative to the book root, e.g. "book/04_self_attention.md"
    section: str
    line: int  # line of the cell's opening fence in the chapter
    body: str  # the cell without its top-level imports
    imports: list[str]
    names: list[str]
    # The chapter line of each line of `body`, and of each line of each import (None where the
    # cell's text could not be found verbatim in the chapter).
    body_lines: list[int | None] = field(default_factory=list)
    import_lines: list[list[int | None]] = field(default_factory=list)
    # Indexes of the lines of `body` that the exporter added: each docstring's closing
    # `Taught in ...` line and the blank line before it (`body_lines` gives them the line of
    # the closing quotes that follow them).
    added_lines: list[int] = field(default_factory=list)


@dataclass
class Module:
    name: str
    docs: list[str] = field(default_factory=list)
    chapters: list[str] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    doc_origins: list[tuple[str, int]] = field(default_factory=list)  # (chapter, line of `export_doc:`)


@dataclass(frozen=True)
class Origin:
    """Where one line of a generated module comes from."""

    chapter: str
    line: int  # 1-based line in the chapter
    kind: str  # "code", "cell", "import", "docstring", "section comment" or "taught in"
    block: int = -1  # index of the block in its module (code lines only)


def taught_in(number: int | None, title: str | None, section: str) -> str:
    """The line that ends the docstrings of a cell's functions and classes."""
    place = f"chapter {number}" if number is not None else f'the appendix "{title}"'
    return f'Taught in {place}, "{section}".'


def add_taught_in(block: Block, sentence: str | None, missing: str) -> None:
    """End the docstring of each top-level function and class of `block` with `sentence`.

    The line goes before the docstring's closing quotes, after a blank line, indented like
    them; a docstring that already ends with it is left as it is. Functions and classes
    without a docstring, and methods, are left alone. `sentence` is None where it cannot be
    written (`missing` says why); a docstring to end is then an error.
    """
    lines = block.body.split("\n")
    closing: list[int] = []
    for node in ast.parse(block.body).body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        doc = ast.get_docstring(node)
        if doc is None:
            continue
        where = f"{block.chapter}:{block.body_lines[node.lineno - 1] or block.line}"
        if sentence is None:
            raise ExportError(
                f"{where}: the exporter ends the docstring of '{node.name}' with the section that "
                f"teaches it (`Taught in ...`), but {missing}"
            )
        paragraphs = [p for p in re.split(r"\n\s*\n", doc.strip()) if p.strip()]
        if paragraphs and " ".join(paragraphs[-1].split()) == sentence:
            continue
        string = node.body[0]
        end = string.end_lineno - 1
        if string.lineno - 1 == end or lines[end].strip() not in CLOSING_QUOTES:
            raise ExportError(
                f"{where}: the docstring of '{node.name}' closes on a line of text: put its closing "
                f"quotes on a line of their own, where the exporter adds `{sentence}` before them"
            )
        closing.append(end)
    for shift, end in enumerate(closing):
        at = end + 2 * shift  # each earlier docstring has gained two lines
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        lines[at:at] = ["", indent + sentence]
        block.body_lines[at:at] = [block.body_lines[at]] * 2
        block.added_lines += [at, at + 1]
    block.body = "\n".join(lines)


def read_chapter(root: Path, chapter: str) -> tuple[str | None, dict[str, str], list[Block], int]:
    """Return (front-matter module, docstring text per module, exported blocks, line of `export_doc:`)."""
    path = root / chapter
    if not path.is_file():
        raise ExportError(f"_toc.yml names '{chapter}', which does not exist")
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    notebook = read_myst(text, chapter)
    module = notebook.metadata.get("export")
    if module is not None:
        check_module_name(module, chapter, "front matter 'export:'")
    fences = cell_fence_lines(text)
    numbered = numbered_chapters(root)
    number = numbered.index(chapter) + 1 if chapter in numbered else None
    title: str | None = None  # the page's first `# ` heading
    section = "(before the first heading)"
    headed = False
    blocks: list[Block] = []
    code_index = 0
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                match = HEADING.match(line)
                if match:
                    section, headed = match.group(2), True
                    if title is None and match.group(1) == "#":
                        title = match.group(2)
            continue
        if cell.cell_type != "code":
            continue
        line = fences[code_index] if code_index < len(fences) else 0
        code_index += 1
        where = f"{chapter}:{line}"
        check_tags(cell.metadata, where)
        target = cell_module(cell.metadata.get("tags", []), module, where)
        if target is None:
            continue
        for offset, source_line in enumerate(cell.source.splitlines(), start=1):
            if MAGIC.match(source_line):
                raise ExportError(
                    f"{where}: exported cell has an IPython magic or shell escape on its line {offset}: "
                    f"{source_line.strip()!r}"
                )
        located = cell_source_lines(lines, line, cell.source)
        body, imports, names, kept, import_index = split_cell(cell.source, where, located)
        block = Block(
            target, chapter, section, line, body, imports, names,
            body_lines=[located[i] for i in kept],
            import_lines=[[located[i] for i in span] for span in import_index],
        )
        if not headed:
            add_taught_in(block, None, "its cell sits under no heading: add one above it")
        elif number is None and title is None:
            add_taught_in(block, None, f"{chapter} has no title (a `# ` heading) to name it by")
        else:
            add_taught_in(block, taught_in(number, title, section), "")
        blocks.append(block)
    docs = chapter_docs(chapter, notebook.metadata.get("export_doc"), module, blocks)
    return module, docs, blocks, front_matter_line(lines, "export_doc")


def chapter_docs(chapter: str, doc: object, module: str | None, blocks: list[Block]) -> dict[str, str]:
    """Docstring text per module from front matter `export_doc` (a string or a mapping)."""
    if not doc:
        return {}
    if not isinstance(doc, dict):
        return {module: str(doc).strip()} if module else {}
    fed = {block.module for block in blocks} | ({module} if module else set())
    docs = {}
    for name, text in doc.items():
        check_module_name(name, chapter, "front matter 'export_doc' key")
        if name not in fed:
            raise ExportError(
                f"{chapter}: front matter 'export_doc' documents '{name}', but no cell of the chapter exports into it"
            )
        docs[name] = str(text).strip()
    return docs


def unlisted_markdown(root: Path, listed: list[str]) -> list[Path]:
    """Markdown files in the folders of the toc's chapters that the toc does not list
    (hidden folders, `_build` and `node_modules` left out)."""
    listed_set = set(listed)
    found = []
    for folder in sorted({(root / chapter).parent for chapter in listed}):
        candidates = folder.glob("*.md") if folder == root else folder.rglob("*.md")
        for path in sorted(candidates):
            rel = path.relative_to(root).as_posix()
            parts = path.relative_to(root).parts
            if rel in listed_set or any(p.startswith((".", "_")) or p == "node_modules" for p in parts[:-1]):
                continue
            found.append(path)
    return found


def chapters_outside_toc(root: Path, listed: list[str]) -> list[tuple[str, int]]:
    """Markdown files beside the toc's chapters that have cells tagged for export: (path, line)."""
    found = []
    for path in unlisted_markdown(root, listed):
        text = path.read_text(encoding="utf-8", errors="replace")
        if not EXPORT_TAG.search(text):  # a cheap test first; jupytext decides
            continue
        fences = cell_fence_lines(text)
        cells = [c for c in jupytext.reads(text, fmt="md:myst").cells if c.cell_type == "code"]
        for cell, line in zip(cells, fences):
            if any(tag == "export" or tag.startswith("export:") for tag in cell.metadata.get("tags", [])):
                found.append((path.relative_to(root).as_posix(), line))
                break
    return found


def collect(root: Path) -> dict[str, Module]:
    """Read every chapter and group its exported blocks by module, refusing duplicate names."""
    chapters = toc_chapters(root)
    outside = chapters_outside_toc(root, chapters)
    if outside:
        chapter, line = outside[0]
        raise ExportError(
            f"{chapter}:{line}: the chapter has cells tagged 'export' but is not listed in _toc.yml, and the "
            "exporter reads only the chapters _toc.yml lists: add it to _toc.yml (or remove its export tags)"
        )
    modules: dict[str, Module] = {}
    defined_at: dict[str, str] = {}
    for chapter in chapters:
        module_name, docs, blocks, doc_line = read_chapter(root, chapter)
        fed = [block.module for block in blocks] + ([module_name] if module_name else [])  # reading order
        for name in dict.fromkeys(fed):
            module = modules.setdefault(name, Module(name))
            module.chapters.append(chapter)
            if docs.get(name):
                module.docs.append(docs[name])
                module.doc_origins.append((chapter, doc_line))
        for block in blocks:
            for name in block.names:
                here = f"{block.chapter}:{block.line}"
                if name in defined_at:
                    raise ExportError(f"{here}: '{name}' is exported twice (first at {defined_at[name]})")
                defined_at[name] = here
            modules[block.module].blocks.append(block)
    return modules
