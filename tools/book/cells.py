"""Reading chapters: the toc, the code cells of a MyST chapter, their tags, their lines.

A chapter is read with jupytext; the exporter and the checks find each cell's opening fence and
the chapter line of each line of its source here, and refuse a tag that was meant to export but
is not an export tag (the cell would silently drop out of the package).
"""

from __future__ import annotations

import ast
import copy
import functools
import difflib
import re
from pathlib import Path

import jupytext
import yaml


PACKAGE = "scratchformer"


CODE_CELL_FENCE = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")


HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


MAGIC = re.compile(r"^\s*(%|!)")


EXPORT_TAG = re.compile(r"""^\s*(:tags:|tags:).*[\['",\s]export(:[\w.]+)?['"]?\s*[\],]""", re.M)


class ExportError(Exception):
    """A chapter cannot be exported; the message names the chapter and line."""


def toc_chapters(root: Path) -> list[str]:
    """Return the chapter files named in `_toc.yml`, in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key in ("root", "file"):
                if isinstance(node.get(key), str):
                    files.append(node[key])
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    resolved = []
    for name in files:
        path = name if name.endswith((".md", ".ipynb")) else name + ".md"
        if (root / path).suffix == ".md":
            resolved.append(path)
    return resolved


def numbered_chapters(root: Path) -> list[str]:
    """The chapters of the toc's numbered parts, in order: chapter N is item N - 1."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [
        entry["file"] if entry["file"].endswith(".md") else entry["file"] + ".md"
        for part in toc.get("parts", [])
        if part.get("numbered")
        for entry in part.get("chapters", [])
    ]


def cell_fence_lines(text: str) -> list[int]:
    """1-based line numbers of each `{code-cell}` fence, in order."""
    return [i for i, line in enumerate(text.splitlines(), start=1) if CODE_CELL_FENCE.match(line)]


def cell_source_lines(lines: list[str], fence_line: int, source: str) -> list[int | None]:
    """The chapter line (1-based) of each line of a code cell's source.

    jupytext keeps a cell's source verbatim between the option lines after the opening fence
    and the closing fence, so the source is the block of lines just before the closing fence
    (jupytext may have dropped blank lines at its end). Where the text cannot be found, the
    lines map to None and only the fence line is known.
    """
    src = source.splitlines()
    opening = CODE_CELL_FENCE.match(lines[fence_line - 1]) if 0 < fence_line <= len(lines) else None
    if opening is None:
        return [None] * len(src)
    marker = opening.group(1)
    close = next((i for i in range(fence_line, len(lines)) if lines[i].rstrip() == marker), None)
    if close is None:
        return [None] * len(src)
    end = close
    while end - len(src) >= fence_line:
        if lines[end - len(src):end] == src:
            return list(range(end - len(src) + 1, end + 1))
        if lines[end - 1].strip():
            break
        end -= 1
    return [None] * len(src)


def split_imports(source: str, where: str) -> tuple[str, list[str], list[str]]:
    """Separate a cell's top-level imports from the rest; list the names it defines."""
    body, imports, names, _, _ = split_cell(source, where)
    return body, imports, names


def split_cell(source: str, where: str, located: list[int | None] | None = None
               ) -> tuple[str, list[str], list[str], list[int], list[list[int]]]:
    """`split_imports`, plus the 0-based source line of each body line and of each import line.

    `where` is `chapter:fence line`; `located`, the chapter line of each line of the source,
    names the line of a syntax error."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        number = err.lineno or 1
        line = located[number - 1] if located and 0 < number <= len(located) else None
        chapter, fence = where.rsplit(":", 1)
        at = f"{chapter}:{line}" if line else where
        raise ExportError(f"{at}: the exported cell that starts at line {fence} does not parse: {err.msg}"
                          + ("" if line else f" (its line {number})")) from err
    lines = source.splitlines()
    import_lines: set[int] = set()
    imports: list[str] = []
    import_index: list[list[int]] = []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            span = range(node.lineno - 1, node.end_lineno)
            import_lines.update(span)
            imports.append("\n".join(lines[i] for i in span))
            import_index.append(list(span))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    kept = [i for i in range(len(lines)) if i not in import_lines]
    # Blank lines at either end go, as `"\n".join(...).strip("\n")` would drop them.
    while kept and lines[kept[0]] == "":
        kept.pop(0)
    while kept and lines[kept[-1]] == "":
        kept.pop()
    body = "\n".join(lines[i] for i in kept)
    return body, imports, names, kept, import_index


def check_module_name(name: object, where: str, what: str) -> str:
    """Return `name` if it is a module inside the package, else refuse naming `where`."""
    if not isinstance(name, str) or not re.fullmatch(rf"{PACKAGE}(\.[A-Za-z_][A-Za-z0-9_]*)+", name):
        raise ExportError(f"{where}: {what} '{name}' must name a module inside '{PACKAGE}'")
    return name


def cell_module(tags: list[str], default: str | None, where: str) -> str | None:
    """The module a code cell exports into (None for a cell that is not exported)."""
    targets = [tag for tag in tags if tag == "export" or tag.startswith("export:")]
    if not targets:
        return None
    if len(targets) > 1:
        raise ExportError(f"{where}: cell has more than one export tag {targets}; a cell goes to one module")
    if targets[0] == "export":
        if not default:
            chapter = where.rsplit(":", 1)[0]
            raise ExportError(
                f"{where}: cell is tagged 'export' but the chapter's front matter has no 'export:' key, "
                "so there is no module to write it to. Add `export: scratchformer.<module>` to the front "
                f"matter of {chapter}, or tag the cell `export:scratchformer.<module>`. If the chapter "
                "went through a notebook (jupytext --to ipynb and back) without the repository's "
                "jupytext.toml, jupytext dropped the keys `export:` and `export_doc:`: restore them "
                f"from git (`git diff {chapter}`)."
            )
        return default
    return check_module_name(targets[0].removeprefix("export:"), where, "tag 'export:' module")


TAGS_OPTION = re.compile(r"^\s*:?(\w+):\s*(.*)$")


@functools.lru_cache(maxsize=64)
def parsed_myst(text: str):
    """jupytext's reading of a chapter's text (cached: a check reads each chapter several times)."""
    return jupytext.reads(text, fmt="md:myst")


def read_myst(text: str, chapter: str):
    """The chapter as a notebook; a cell option jupytext cannot read is refused naming its line."""
    try:
        return copy.deepcopy(parsed_myst(text))
    except Exception as err:  # nbformat's validation error, YAML errors
        for number, line in enumerate(text.splitlines(), start=1):
            match = TAGS_OPTION.match(line)
            if not match or match.group(1).lower() not in ("tags", "tag"):
                continue
            try:
                value = yaml.safe_load(match.group(2))
            except yaml.YAMLError:
                value = None
            if not (isinstance(value, list) and all(isinstance(tag, str) for tag in value)):
                raise ExportError(
                    f"{chapter}:{number}: `{line.strip()}` is not a list of tags: write "
                    "`:tags: [export]` or `:tags: [export:scratchformer.<module>]` (no space after "
                    "the colon: `export: name` is read as a mapping)"
                ) from err
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ExportError(f"{chapter}: jupytext cannot read the chapter: {first}") from err


def looks_like_export(tag: str) -> bool:
    """Whether a tag that is not `export` or `export:<module>` was probably meant to be one."""
    head = re.sub(r"[^a-z]", "", tag.split(":", 1)[0].lower())
    return head.startswith("expor") or difflib.SequenceMatcher(None, head, "export").ratio() >= 0.8


def check_tags(metadata: dict, where: str) -> None:
    """Refuse a misspelt export tag, or a misspelt `tags` option, which would drop the cell silently."""
    for key in metadata:
        if key != "tags" and difflib.SequenceMatcher(None, key.lower(), "tags").ratio() >= 0.75:
            raise ExportError(
                f"{where}: the cell has an option `{key}:`, which is not `tags:`, so its tags "
                f"{metadata[key]!r} are ignored (and an `export` among them would leave the cell out "
                "of the package): write `:tags: [...]`"
            )
    tags = metadata.get("tags", [])
    if not isinstance(tags, list):
        raise ExportError(f"{where}: the cell's tags {tags!r} are not a list: write `:tags: [export]`")
    for tag in tags:
        if tag == "export" or (tag.startswith("export:") and tag != "export:"):
            continue
        if looks_like_export(tag):
            raise ExportError(
                f"{where}: the cell is tagged {tag!r}, which is not an export tag, so the cell would be "
                "left out of the package: write `export` (into the front matter's module) or "
                "`export:scratchformer.<module>`, lower case, no spaces"
            )


def front_matter_line(lines: list[str], key: str) -> int:
    """1-based line of a top-level front-matter key (1, the opening `---`, if it is not found)."""
    return next((i for i, line in enumerate(lines, start=1) if line.startswith(f"{key}:")), 1)
