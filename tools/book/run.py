"""Run one chapter's code cells against the current package, as the book build would.

`make chapter N=4` (`tools/export.py --run-chapter 4`): the chapter is read with jupytext and
its cells run in order in a Jupyter kernel (nbclient), in the chapter's folder, as `make book`
runs them, but without building anything and without the build's cache. The first failing cell
stops the run (later cells depend on it) and is named by the chapter line of the failing line,
with the traceback, each line of a generated module in it followed by its chapter line. A cell
tagged `raises-exception` may raise, as in the book.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from book.cells import ExportError, cell_fence_lines, cell_source_lines, numbered_chapters, read_myst, toc_chapters
from book.where import with_chapter_lines

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CELL_LINE = re.compile(r"Cell In\[\d+\], line (\d+)")


def chapter_of(root: Path, which: str) -> str:
    """The chapter a contributor names: its number (`4`) or its file (`book/04_self_attention.md`)."""
    numbered = numbered_chapters(root)
    if which.isdigit():
        number = int(which)
        if not 1 <= number <= len(numbered):
            raise ExportError(f"there is no chapter {number}: the book has chapters 1 to {len(numbered)}")
        return numbered[number - 1]
    chapter = Path(which).as_posix()
    if chapter not in toc_chapters(root):
        raise ExportError(f"{which} is not a chapter listed in _toc.yml: give its number or its file, "
                          "e.g. 4 or book/04_self_attention.md")
    return chapter


def run_chapter(root: Path, chapter: str, timeout: int = 900) -> list[str]:
    """Run every code cell of `chapter`; return the failure ([] when every cell ran)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    text = (root / chapter).read_text(encoding="utf-8")
    lines = text.splitlines()
    notebook = read_myst(text, chapter)
    fences = cell_fence_lines(text)
    client = NotebookClient(nbformat.from_dict(notebook), timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str((root / chapter).parent)}})
    code_number = 0
    with client.setup_kernel():
        for index, cell in enumerate(client.nb.cells):
            if cell.cell_type != "code":
                continue
            fence = fences[code_number] if code_number < len(fences) else 1
            code_number += 1
            try:
                client.execute_cell(cell, index)
            except (CellExecutionError, CellTimeoutError) as err:
                report = ANSI.sub("", str(err))
                located = cell_source_lines(lines, fence, cell.source)
                found = CELL_LINE.findall(report)
                line = fence
                if found and 0 < int(found[-1]) <= len(located):
                    line = located[int(found[-1]) - 1] or fence
                last = [entry for entry in report.strip().splitlines() if entry.strip()][-1:]
                return [f"{chapter}:{line}: the cell that starts at line {fence} fails: "
                        f"{last[0] if last else type(err).__name__}",
                        with_chapter_lines(root, report.strip())]
    return []


def run(root: Path, which: str) -> int:
    """`--run-chapter`: run a chapter, print what failed (or how long it took); the exit status."""
    chapter = chapter_of(root, which)
    start = time.perf_counter()
    failure = run_chapter(root, chapter)
    seconds = time.perf_counter() - start
    if failure:
        print("\n\n".join(reversed(failure)))
        print(f"\nchapter: {failure[0]}")
        return 1
    print(f"chapter: every cell of {chapter} ran ({seconds:.1f} s)")
    return 0
