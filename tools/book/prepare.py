"""`make prepare`: everything a change needs before it is committed, in one command.

Export the chapters, check the book (`--check`: src/ in step, notebooks, conventions, names in
the chapters, the package, the tests), run the fast tests (`make test-fast`'s selection), and run
each chapter that differs from git's HEAD (or is new) alone, as `make chapter` does. Every step
runs even when an earlier one failed, and the end lists every step that failed with its
problems, so one run shows everything to fix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from book.cells import toc_chapters
from book.run import run_chapter

TOOL = Path(__file__).resolve().parents[1] / "export.py"


def changed_chapters(root: Path) -> list[str]:
    """Chapters of the toc that differ from git's HEAD, or that git does not track yet."""
    def git(*args: str) -> list[str]:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        return done.stdout.split("\n") if done.returncode == 0 else []

    changed = set(git("diff", "--name-only", "HEAD", "--", "book")) | set(
        git("ls-files", "--others", "--exclude-standard", "--", "book"))
    return [chapter for chapter in toc_chapters(root) if chapter in changed]


def step(name: str, command: list[str], root: Path, failures: list[tuple[str, list[str]]]) -> None:
    """Run one step, its output shown as it comes; remember its last lines if it fails."""
    print(f"\n=== prepare: {name}: {' '.join(command)}", flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(done.stdout)
    print(f"=== prepare: {name}: {'failed' if done.returncode else 'ok'} "
          f"({time.perf_counter() - start:.0f} s)", flush=True)
    if done.returncode:
        lines = [line for line in done.stdout.strip().split("\n") if line.strip()]
        failures.append((name, lines[-25:]))


def prepare(root: Path) -> int:
    """Run every step; the exit status (1 when any failed)."""
    python = sys.executable
    workers = os.environ.get("TEST_WORKERS", "2")
    failures: list[tuple[str, list[str]]] = []
    step("export", [python, str(TOOL), "--root", str(root)], root, failures)
    step("check", [python, str(TOOL), "--check", "--root", str(root)], root, failures)
    step("fast tests", [python, "-m", "pytest", "-q", "-ra", "-m", "not book and not slow and not timing", "-n", workers],
         root, failures)
    chapters = changed_chapters(root)
    print(f"\n=== prepare: chapters changed since HEAD: {', '.join(chapters) or 'none'}", flush=True)
    for chapter in chapters:
        start = time.perf_counter()
        failure = run_chapter(root, chapter)
        print(f"=== prepare: {chapter}: {'failed' if failure else 'ran'} ({time.perf_counter() - start:.0f} s)")
        if failure:
            print("\n".join(reversed(failure)))
            failures.append((f"chapter {chapter}", [failure[0]]))
    if not failures:
        print("\nprepare: every step passed")
        return 0
    print(f"\nprepare: {len(failures)} step{'s' * (len(failures) != 1)} failed:")
    for name, lines in failures:
        print(f"- {name}:")
        for line in lines:
            print(f"    {line}")
    return 1
