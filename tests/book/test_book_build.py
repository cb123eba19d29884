"""How the book build treats failing chapters and notebooks, on a scratch book of three short pages.

The scratch book takes from the repository's `_config.yml` what decides these behaviours (the
execution settings, `exclude_patterns`, `only_build_toc_files`) and is built with the Makefile's
own `jupyter-book build` flags and tools/book/rebuild.py. A build takes seconds, not the book's
minutes, but it is still a book build: `make test` runs these, `make test-fast` does not.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support import ROOT, book_environment

from book.parallel import execution_jobs
from support.scratch import FRONT as CHAPTER_FRONT

pytestmark = [pytest.mark.book, pytest.mark.own_build]

FRONT = CHAPTER_FRONT.format(extra="")  # a chapter's front matter, exporting nothing


def page(title: str, code: str) -> str:
    return FRONT + f"\n# {title}\n\n```{{code-cell}} ipython3\n{code}\n```\n"


def build_flags() -> list[str]:
    """The flags `make book` passes to `jupyter-book build` (the Makefile's JUPYTER_BOOK)."""
    line = next(line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith("JUPYTER_BOOK :="))
    words = shlex.split(line.split(":=", 1)[1])
    return words[words.index("build") + 1:]


def scratch_book(tmp_path: Path, exclude_notebooks: bool = True) -> Path:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    excluded = [p for p in config["exclude_patterns"] if exclude_notebooks or p != "**.ipynb"]
    scratch = {
        "title": "scratch",
        "only_build_toc_files": config["only_build_toc_files"],
        "exclude_patterns": excluded,
        "execute": config["execute"],
        "sphinx": {
            "local_extensions": {"book.rebuild": str(ROOT / "tools"),
                                 "book.parallel": str(ROOT / "tools")},
            "config": {key: value for key, value in config["sphinx"]["config"].items()
                       if key.startswith("nb_execution")},
        },
    }
    root = tmp_path / "scratch"
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text(yaml.safe_dump(scratch))
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n"
        + "".join(f"  - file: book/{name}\n" for name in ("first", "second", "third")))
    (root / "book" / "intro.md").write_text("# Intro\n")
    for name in ("first", "second", "third"):
        (root / "book" / f"{name}.md").write_text(page(name.title(), f"print('{name} page runs')"))
    return root


def build(root: Path, **environ: str) -> subprocess.CompletedProcess:
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    return subprocess.run([str(jupyter_book), "build", *build_flags(), str(root)],
                          capture_output=True, text=True, cwd=root,
                          env={**book_environment(), **environ})


def html(root: Path, name: str) -> str:
    return (root / "_build" / "html" / "book" / f"{name}.html").read_text()


def test_the_build_lists_every_failing_chapter_then_fails(tmp_path: Path) -> None:
    root = scratch_book(tmp_path)
    (root / "book" / "first.md").write_text(page("First", "raise ValueError('first chapter breaks')"))
    (root / "book" / "third.md").write_text(page("Third", "raise KeyError('third chapter breaks')"))
    result = build(root)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "first chapter breaks" in output and "third chapter breaks" in output, output[-6000:]
    assert re.search(r"book/first\.md.*Executing notebook failed", output), output[-6000:]
    assert re.search(r"book/third\.md.*Executing notebook failed", output), output[-6000:]
    assert "cells failed to run in 2 pages: book/first.md, book/third.md" in output, output[-3000:]
    # The next build, with nothing changed, runs the failed chapters again: still red.
    again = build(root)
    assert again.returncode != 0 and "third chapter breaks" in again.stdout + again.stderr


def notebook_beside(root: Path, name: str, text: str) -> None:
    import jupytext

    notebook = jupytext.reads(page(name.title(), f"print('{text}')"), fmt="md:myst")
    jupytext.write(notebook, root / "book" / f"{name}.ipynb")


def test_a_notebook_beside_a_chapter_never_becomes_the_page(tmp_path: Path) -> None:
    root = scratch_book(tmp_path)
    notebook_beside(root, "second", "stale notebook text")
    result = build(root)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    assert "second page runs" in html(root, "second")
    assert "stale notebook text" not in html(root, "second")


def test_a_deleted_notebook_leaves_no_stale_page(tmp_path: Path) -> None:
    # Without the exclusion (as before it), the notebook was the page; once it is deleted the
    # .md, older than the last read, must be read again.
    root = scratch_book(tmp_path, exclude_notebooks=False)
    notebook_beside(root, "second", "stale notebook text")
    first = build(root)
    assert "stale notebook text" in html(root, "second"), (first.stdout + first.stderr)[-4000:]
    (root / "book" / "second.ipynb").unlink()
    result = build(root)
    assert "second page runs" in html(root, "second"), (result.stdout + result.stderr)[-4000:]
    assert "stale notebook text" not in html(root, "second")


def test_a_failing_chapter_fails_even_a_build_without_warnings_as_errors(tmp_path: Path) -> None:
    root = scratch_book(tmp_path)
    (root / "book" / "second.md").write_text(page("Second", "raise ValueError('second chapter breaks')"))
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run([str(jupyter_book), "build", str(root)], capture_output=True, text=True, cwd=root,
                            env=book_environment())
    assert result.returncode != 0, (result.stdout + result.stderr)[-3000:]
    assert "cells failed to run in 1 page: book/second.md" in result.stdout + result.stderr


SPANS = "spans.txt"  # each scratch page appends when its cell started and ended


def timed_page(name: str, seconds: float) -> str:
    return page(name.title(), (
        "import os, time\n"
        "started = time.time()\n"
        f"time.sleep({seconds})\n"
        f"print('{name} page runs')\n"
        f"with open({SPANS!r}, 'a') as spans:\n"
        f"    spans.write(f'{name} {{started}} {{time.time()}} {{os.getpid()}} "
        f"{{os.environ.get(\"OMP_NUM_THREADS\")}}\\n')"))


def test_chapters_the_cache_lacks_run_two_at_a_time_then_come_from_the_cache(
        tmp_path: Path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: BOOK_JOBS is capped at the machine's cores")
    root = scratch_book(tmp_path)
    for name in ("first", "second", "third"):
        (root / "book" / f"{name}.md").write_text(timed_page(name, 3))
    result = build(root, BOOK_JOBS="2")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    # the two kernels share the cores (one thread each on two cores, not two that spin-wait),
    # unless the environment already sets their threads
    threads = int(book_environment().get("OMP_NUM_THREADS") or max(1, os.cpu_count() // 2))
    assert (f"executing 3 pages, 2 at a time ({threads} thread{'' if threads == 1 else 's'} each): "
            "book/first, book/second, book/third") in output, output[-6000:]
    # Each page ran once, before Sphinx read it; reading took its outputs from the cache.
    assert "Executing notebook" not in output, output[-6000:]
    assert output.count("Using cached notebook") == 3, output[-6000:]
    assert "without encryption" not in output, output[-6000:]  # the kernels' log stays quiet
    lines = [line.split() for line in (root / "book" / SPANS).read_text().splitlines()]
    spans = {name: (float(start), float(end), pid) for name, start, end, pid, _ in lines}
    assert sorted(spans) == ["first", "second", "third"]
    assert {kernel_threads for *_, kernel_threads in lines} == {str(threads)}
    # the last two pages first, side by side, in two kernels
    second, third = spans["second"], spans["third"]
    assert second[2] != third[2] and second[0] < third[1] and third[0] < second[1], spans
    assert spans["first"][0] >= min(second[1], third[1]) - 0.5, spans
    for name in spans:
        assert f"{name} page runs" in html(root, name)


def test_one_job_leaves_execution_to_the_pages_reading(tmp_path: Path) -> None:
    root = scratch_book(tmp_path)
    result = build(root, BOOK_JOBS="1")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "at a time" not in output and output.count("Executing notebook") == 3, output[-6000:]
    assert "second page runs" in html(root, "second")


def test_a_bad_book_jobs_is_named() -> None:
    assert execution_jobs({}) == min(2, os.cpu_count() or 1)
    assert execution_jobs({"BOOK_JOBS": "64"}) == os.cpu_count()
    for bad in ("two", "0", "-1"):
        with pytest.raises(ValueError, match="BOOK_JOBS"):
            execution_jobs({"BOOK_JOBS": bad})


def test_a_worker_that_dies_leaves_its_pages_to_the_build(tmp_path: Path) -> None:
    if not Path("/proc/self/cmdline").exists() or (os.cpu_count() or 1) < 2:
        pytest.skip("needs Linux's /proc and two cores")
    root = scratch_book(tmp_path)
    # Kills the process that started its kernel when that is a worker of tools/book/parallel.py
    # (a multiprocessing child), not when it is the build itself.
    (root / "book" / "second.md").write_text(page("Second", (
        "import os, signal\n"
        "parent = open(f'/proc/{os.getppid()}/cmdline', 'rb').read()\n"
        "if b'multiprocessing' in parent:\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n"
        "print('second page runs')")))
    result = build(root, BOOK_JOBS="2")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert re.search(r"book/\w+ failed here \(BrokenProcessPool", output), output[-6000:]
    assert "second page runs" in html(root, "second")
