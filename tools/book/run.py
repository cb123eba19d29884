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
CELL_LINE = re.compile(r"Cell In\[(\d+)\], line (\d+)")


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


def frame_lines(report: str, chapter: str, cells: dict[int, tuple[int, list[int | None]]]) -> tuple[str, list[int]]:
    """`report` with each `Cell In[k], line n` frame followed by its chapter line, found in the cell
    the kernel ran as `In[k]` (`cells`: k -> the cell's fence line and the chapter line of each of its
    lines); and the chapter lines of those frames, outermost first."""
    found: list[int] = []

    def mark(match: re.Match) -> str:
        count, number = int(match.group(1)), int(match.group(2))
        if count not in cells:
            return match.group(0)
        fence, located = cells[count]
        line = (located[number - 1] if 0 < number <= len(located) else None) or fence
        found.append(line)
        return f"{match.group(0)} [{chapter}:{line}]"

    return CELL_LINE.sub(mark, report), found


def run_chapter(root: Path, chapter: str, timeout: int = 900) -> list[str]:
    """Run every code cell of `chapter`; return the failure ([] when every cell ran): the line
    naming where it failed, then the traceback with the chapter line of each of its frames."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    text = (root / chapter).read_text(encoding="utf-8")
    lines = text.splitlines()
    notebook = read_myst(text, chapter)
    fences = cell_fence_lines(text)
    client = NotebookClient(nbformat.from_dict(notebook), timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str((root / chapter).parent)}},
                            # the kernel's own log (its warning that a local connection is not
                            # encrypted, on every start) is not the chapter's output
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
    ran: dict[int, tuple[int, list[int | None]]] = {}  # the kernel's In[k] -> that cell's lines
    code_number = 0
    with client.setup_kernel():
        for index, cell in enumerate(client.nb.cells):
            if cell.cell_type != "code":
                continue
            fence = fences[code_number] if code_number < len(fences) else 1
            code_number += 1
            located = cell_source_lines(lines, fence, cell.source)
            try:
                client.execute_cell(cell, index)
            except (CellExecutionError, CellTimeoutError) as err:
                if cell.get("execution_count"):
                    ran[cell["execution_count"]] = (fence, located)
                report, frames = frame_lines(ANSI.sub("", str(err)), chapter, ran)
                last = [entry for entry in report.strip().splitlines() if entry.strip()][-1:]
                error = last[0] if last else type(err).__name__
                own = [line for line in frames if line in located]
                line = frames[-1] if frames else fence
                head = f"{chapter}:{line}: the cell that starts at line {fence} fails: {error}"
                if frames and line not in located:
                    head = (f"{chapter}:{line}: the cell that starts at line {fence} fails"
                            + (f" at line {own[-1]}" if own else "") + f", in code defined at line {line}: {error}")
                return [head, with_chapter_lines(root, report.strip())]
            if cell.get("execution_count"):
                ran[cell["execution_count"]] = (fence, located)
    return []


def stale_package(root: Path) -> str | None:
    """A warning when src/ is not what the chapters generate (the chapter would import the old code)."""
    from book.render import generated
    from book.write import check

    try:
        diff = check(root, generated(root))
    except ExportError as err:
        return f"warning: the chapters cannot be exported ({err}); the chapter imports the package as src/ has it"
    if not diff:
        return None
    files = sorted({line[4:].split(" (in src/)")[0] for line in diff.splitlines() if line.startswith("--- ")})
    return (f"warning: src/ is out of date ({', '.join(files)} {'differs' if len(files) == 1 else 'differ'} "
            "from the chapters): where the chapter "
            "imports from scratchformer it gets the old code. Run `make export` first.")


def run(root: Path, which: str) -> int:
    """`--run-chapter`: run a chapter, print what failed (or how long it took); the exit status."""
    chapter = chapter_of(root, which)
    warning = stale_package(root)
    if warning:
        print(warning, flush=True)
    start = time.perf_counter()
    failure = run_chapter(root, chapter)
    seconds = time.perf_counter() - start
    if failure:
        print("\n\n".join(reversed(failure)))
        print(f"\nchapter: {failure[0]}")
        if warning:
            print(f"chapter: {warning}")
        return 1
    print(f"chapter: every cell of {chapter} ran ({seconds:.1f} s)")
    return 0
