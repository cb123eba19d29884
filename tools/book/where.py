"""Where a generated line comes from: `--where FILE:LINE`, and tracebacks annotated with chapter lines.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from book.cells import CODE_CELL_FENCE, PACKAGE, toc_chapters
from book.chapters import Origin, collect
from book.render import origins


GENERATED_LINE = re.compile(
    r"""(?P<path>(?:[^\s"':]*/)?src/scratchformer/[\w/]+\.py)(?P<sep>:|", line )(?P<line>\d+)""")


def chapter_line(root: Path, module: str | Path, line: int,
                 found: dict[Path, list[tuple[str, Origin | None]]] | None = None) -> str | None:
    """The chapter line (`book/07_dropout.md:390`) that line `line` of a generated module comes from.

    None for a module no chapter generates. A line of the header, or a blank line between two
    cells, maps to the nearest line above it that comes from a chapter.
    """
    path = Path(module)
    path = (path if path.is_absolute() else root / path).resolve()
    found = origins(root) if found is None else found
    lines = next((v for k, v in found.items() if k.resolve() == path), None)
    if lines is None:
        return None
    index = min(max(line, 1), len(lines)) - 1
    origin = next((o for _, o in reversed(lines[:index + 1]) if o), None) \
        or next((o for _, o in lines[index:] if o), None)
    return f"{origin.chapter}:{origin.line}" if origin else None


def with_chapter_lines(root: Path, text: str,
                       found: dict[Path, list[tuple[str, Origin | None]]] | None = None) -> str:
    """`text` (a traceback, a checker's report) with each generated line followed by its chapter line."""
    cache: dict[str, dict] = {}

    def replace(match: re.Match) -> str:
        if "found" not in cache:
            cache["found"] = origins(root) if found is None else found
        rel = match.group("path")
        rel = rel[rel.index("src/scratchformer/"):]
        where = chapter_line(root, rel, int(match.group("line")), cache["found"])
        return match.group(0) + (f" [{where}]" if where else "")

    return GENERATED_LINE.sub(replace, text)


TEST_FRAME = re.compile(r"""(?P<path>[^\s"':\[\]]+\.py)(?::|", line )(?P<line>\d+)""")
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e-?\d+)?(?![\w.])")


def definition_lines(root: Path) -> dict[str, str]:
    """Each exported top-level name -> the chapter line that defines it."""
    found = {}
    for module in collect(root).values():
        for block in module.blocks:
            for text, line in zip(block.body.split("\n"), block.body_lines):
                match = re.match(r"(?:async def|def|class) (\w+)|(\w+)\s*(?::[^=]*)?=", text)
                name = match and (match.group(1) or match.group(2))
                if name in block.names and name not in found:
                    found[name] = f"{block.chapter}:{line or block.line}"
    return found


def chapter_lines_holding(root: Path, literal: str) -> list[str]:
    """Chapter lines of code cells that write the number `literal` (a worked value they assert or show)."""
    places = []
    for chapter in toc_chapters(root):
        text = (root / chapter).read_text(encoding="utf-8")
        inside = False
        for number, line in enumerate(text.split("\n"), start=1):
            if CODE_CELL_FENCE.match(line) or (inside and line.startswith("```")):
                inside = not inside
            elif inside and re.search(rf"(?<![\w.]){re.escape(literal)}(?![\w])", line):
                places.append(f"{chapter}:{number}")
    return places


def tested_places(root: Path, text: str) -> list[str]:
    """For each test line in a traceback: the chapter lines defining the package names its test
    uses, and those holding the numbers its failing line checks."""
    notes = []
    definitions: dict[str, str] | None = None
    for match in dict.fromkeys(m.group("path", "line") for m in TEST_FRAME.finditer(text)):
        path, line = Path(match[0]), int(match[1])
        path = path if path.is_absolute() else next(
            (base / path for base in (root, Path.cwd()) if (base / path).is_file()), root / path)
        if "site-packages" in path.parts or f"src/{PACKAGE}/" in path.as_posix() or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        imported = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                    and (node.module or "").split(".")[0] == PACKAGE for alias in node.names}
        test = next((node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and node.lineno <= line <= node.end_lineno), None)
        used = sorted({n.id for n in ast.walk(test or tree) if isinstance(n, ast.Name) and n.id in imported})
        definitions = definition_lines(root) if definitions is None else definitions
        names = [f"{name} ({definitions[name]})" for name in used if name in definitions]
        values = [f"{value} ({', '.join(places[:3])})" for value in dict.fromkeys(NUMBER.findall(
            source.split("\n")[line - 1])) if (places := chapter_lines_holding(root, value))]
        head = f"{rel}:{line}" + (f" ({test.name})" if test else "")
        if names:
            notes.append(f"{head} checks names the chapters define: {', '.join(names)}")
        if values:
            notes.append(f"{head} checks values the chapters compute: {', '.join(values)}")
    return notes


def where(root: Path, places: list[str]) -> int:
    """`--where`: print the chapter line of each FILE:LINE (or annotate a traceback read from stdin)."""
    if places == ["-"]:
        text = sys.stdin.read()
        sys.stdout.write(with_chapter_lines(root, text))
        if not GENERATED_LINE.search(text):
            notes = tested_places(root, text)
            print("\nexport --where: no line of this traceback is in a module the chapters generate "
                  f"(src/{PACKAGE}/...)" + (":" if notes else ", and none is in a test that uses the package's "
                                            "names: nothing to map to a chapter"))
            for note in notes:
                print(f"  {note}")
        return 0
    found = origins(root)
    status = 0
    for place in places:
        match = re.fullmatch(r"(.+?):(\d+)", place)
        answer = chapter_line(root, match.group(1), int(match.group(2)), found) if match else None
        if answer is None:
            print(f"export --where: {place} is not a line of a module the chapters generate "
                  "(give it as src/scratchformer/<module>.py:<line>)", file=sys.stderr)
            status = 2
        else:
            print(answer)
    return status
