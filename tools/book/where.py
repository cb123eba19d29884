"""Where a generated line comes from: `--where FILE:LINE`, and tracebacks annotated with chapter lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from book.chapters import Origin
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


def where(root: Path, places: list[str]) -> int:
    """`--where`: print the chapter line of each FILE:LINE (or annotate a traceback read from stdin)."""
    if places == ["-"]:
        sys.stdout.write(with_chapter_lines(root, sys.stdin.read()))
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
