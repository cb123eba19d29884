"""`make prepare`: everything a change needs before it is committed, in one command.

Export the chapters, check the book as `make check` does (`--check`: src/ in step, notebooks,
conventions, names in the chapters, the package, the tests; then the translated pages'
catalogues against their English), run the fast tests (`make test-fast`'s
selection), and run each chapter that differs from git's HEAD (or is new) alone, as `make
chapter` does. Every step runs even when an earlier one failed, and its output is shown as it
comes. The expected skips (a CUDA test on a machine without CUDA) are counted in one line, not
listed. The end lists every step that failed with every reason in full (each failing test with
its error), so one run shows everything to fix.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

from book.cells import toc_chapters
from book.run import run_chapter

TOOL = Path(__file__).resolve().parents[1] / "export.py"
TRANSLATIONS = TOOL.with_name("translations.py")
FAST_TESTS = "not book and not slow and not timing and not check"


def changed_chapters(root: Path) -> list[str]:
    """Chapters of the toc that differ from git's HEAD, or that git does not track yet."""
    def git(*args: str) -> list[str]:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        return done.stdout.split("\n") if done.returncode == 0 else []

    changed = set(git("diff", "--name-only", "HEAD", "--", "book")) | set(
        git("ls-files", "--others", "--exclude-standard", "--", "book"))
    return [chapter for chapter in toc_chapters(root) if chapter in changed]


def stream(command: list[str], root: Path) -> tuple[int, list[str]]:
    """Run `command`, printing each line of its output (stdout and stderr) as it comes; its exit
    status and lines."""
    lines: list[str] = []
    with subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1, env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
        assert process.stdout is not None
        for line in process.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            lines.append(line.rstrip("\n"))
    return process.returncode, lines


def test_results(report: Path) -> tuple[list[tuple[str, list[str]]], Counter, int]:
    """From pytest's JUnit XML report: each failing test (its id, its reason in full), the skips
    counted by reason, and how many tests passed."""
    failures: list[tuple[str, list[str]]] = []
    skips: Counter = Counter()
    passed = 0
    try:
        tree = ElementTree.parse(report)
    except (OSError, ElementTree.ParseError):
        return failures, skips, passed
    for case in tree.iter("testcase"):
        name = f"{case.get('file') or case.get('classname', '')}::{case.get('name', '')}"
        problems = [child for child in case if child.tag in ("failure", "error")]
        skipped = [child for child in case if child.tag == "skipped"]
        if problems:
            for problem in problems:
                failures.append((name + (" (error)" if problem.tag == "error" else ""), reason(problem)))
        elif skipped:
            message = skipped[0].get("message", "") or "no reason given"
            skips[message.removeprefix("Skipped: ").strip()] += 1
        else:
            passed += 1
    return failures, skips, passed


CRASH = re.compile(r"^\S+\.py:\d+: \w")


def reason(problem: ElementTree.Element) -> list[str]:
    """A failing test's reason in full: the lines of its traceback that say what failed (pytest's
    `E` lines, every one), then where (the last `file.py:line: Error` line)."""
    text = (problem.text or "").splitlines()
    told = [line for line in text if line.startswith("E ")] or [problem.get("message", "")]
    where = [line for line in text if CRASH.match(line)]
    return told + where[-1:]


def skip_line(skips: Counter) -> str:
    """`197 skipped: 196 no CUDA device on this machine, 1 no IMDB` (one line for every skip)."""
    if not skips:
        return "no test skipped"
    parts = ", ".join(f"{count} {why}" for why, count in skips.most_common())
    return f"{sum(skips.values())} skipped: {parts}"


def step(name: str, command: list[str], root: Path, failures: list[tuple[str, list[str]]]) -> None:
    """Run one step, its output shown as it comes; remember every line of it if it fails."""
    print(f"\n=== prepare: {name}: {' '.join(command)}", flush=True)
    start = time.perf_counter()
    status, lines = stream(command, root)
    print(f"=== prepare: {name}: {'failed' if status else 'ok'} ({time.perf_counter() - start:.0f} s)", flush=True)
    if status:
        failures.append((name, [line for line in lines if line.strip()]))


def tests_step(root: Path, workers: str, failures: list[tuple[str, list[str]]]) -> None:
    """The fast tests: failures and errors listed in full at the end, skips counted by reason."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "tests.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-rfE", "-m", FAST_TESTS, "-n", workers,
                   f"--junitxml={report}", "-o", "junit_family=xunit1"]
        print(f"\n=== prepare: fast tests: {' '.join(command[:-2])}", flush=True)
        start = time.perf_counter()
        status, lines = stream(command, root)
        failed, skips, passed = test_results(report)
    print(f"=== prepare: fast tests: {'failed' if status else 'ok'} ({time.perf_counter() - start:.0f} s): "
          f"{passed} passed, {len(failed)} failed, {skip_line(skips)}", flush=True)
    if status:
        reasons = [line for test, why in failed for line in [test, *(f"  {w}" for w in why)]]
        failures.append((f"fast tests ({len(failed)} failed, {passed} passed, {skip_line(skips)})",
                         reasons or [line for line in lines if line.strip() and set(line) - set(".sFEx[]% 0123456789")]))


def prepare(root: Path) -> int:
    """Run every step; the exit status (1 when any failed)."""
    python = sys.executable
    workers = os.environ.get("TEST_WORKERS", "2")
    failures: list[tuple[str, list[str]]] = []
    step("export", [python, str(TOOL), "--root", str(root)], root, failures)
    step("check", [python, str(TOOL), "--check", "--root", str(root)], root, failures)
    step("translations", [python, str(TRANSLATIONS), "--root", str(root), "check"], root, failures)
    tests_step(root, workers, failures)
    chapters = changed_chapters(root)
    print(f"\n=== prepare: chapters changed since HEAD: {', '.join(chapters) or 'none'}", flush=True)
    for chapter in chapters:
        start = time.perf_counter()
        failure = run_chapter(root, chapter)
        print(f"=== prepare: {chapter}: {'failed' if failure else 'ran'} ({time.perf_counter() - start:.0f} s)",
              flush=True)
        if failure:
            print("\n".join(reversed(failure)), flush=True)
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
