"""tools/book/ beyond the export: the conventions `make check` keeps without a build, the new
chapter scaffold, one chapter run alone, and `--where -` on a traceback through no generated module."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT
from support.scratch import CELL_A, chapter, copy_repo, make_book, make_numbered_book, run_check, run_export

import book
from book.conventions import convention_problems
from book.run import run_chapter
from book.scaffold import new_chapter

INTRO = "# Intro\n\n## The 1,000-foot view\n\n1. **Adding.** ([Chapter 1](a.md))\n\n## What you need to know\n"


def section(text: str, heading: str) -> str:
    """`text` without the section under `heading` (up to the next `## ` heading)."""
    start = text.index(f"\n{heading}\n")
    end = text.index("\n## ", start + 1)
    return text[:start] + text[end:]


@pytest.mark.slow  # a minute: `make prepare` on a copy of the repository; `make test` runs it
def test_a_scaffolded_chapter_passes_every_check_and_its_line_in_the_intro_needs_translating(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a copy of the repository committed to git, so that the new chapter is the change that
    `make prepare` runs alone. Its fast-test step runs the copy's tests: one, that the package
    imports with the new chapter in the book (the repository's own suite runs in `make test-fast`),
    in the step's own process (`TEST_WORKERS=0`: no pytest-xdist workers for one test).
    The scaffold links the chapter from the introduction, a translated page: its translation step
    names that line, which the Chinese catalogue lacks (it used to report the page 100% translated)."""
    root = copy_repo(tmp_path)
    for name in ("locales", "_templates"):
        shutil.copytree(ROOT / name, root / name)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    (root / "tests").mkdir()
    (root / "tests" / "test_package_imports.py").write_text(
        "import scratchformer\n\n\ndef test_the_package_imports():\n    assert scratchformer.__name__\n")
    for command in (["init", "-q"], ["add", "-A"],
                    ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(root), *command], check=True, capture_output=True)
    number = len(book.numbered_chapters(root)) + 1
    result = run_export(root, "new-chapter", str(number), "sketch", "A sketch")
    path = f"book/{number:02d}_sketch.md"
    assert result.returncode == 0 and f"wrote {path}\nwrote _toc.yml\nwrote book/intro.md\n" in result.stdout
    assert "its new line needs translating in locales/zh_CN/LC_MESSAGES/book/intro.po" in result.stdout
    assert book.numbered_chapters(root)[-1] == path
    assert convention_problems(root) == []  # every convention of book.conventions
    monkeypatch.setenv("TEST_WORKERS", "0")
    result = run_export(root, "--prepare")
    assert result.returncode == 1, result.stdout[-3000:]
    for step in ("export", "check", "fast tests"):
        assert f"=== prepare: {step}: ok" in result.stdout, result.stdout[-3000:]
    assert "1 passed" in result.stdout
    assert f"=== prepare: chapters changed since HEAD: book/intro.md, {path}\n" in result.stdout
    assert f"=== prepare: {path}: ran" in result.stdout
    summary = result.stdout[result.stdout.index("prepare: 1 step failed:"):]
    assert "- translations:" in summary
    line = f"**A sketch.** Say in a sentence what the chapter builds. ([Chapter {number}]({number:02d}_sketch.md))"
    assert "locales/zh_CN/LC_MESSAGES/book/intro.po: missing (English the catalogue does not have yet" in summary
    assert line in summary, summary[-3000:]


def scaffolded_small_book(tmp_path: Path) -> tuple[Path, str]:
    root = make_numbered_book(tmp_path, {"a": chapter(CELL_A)}, {})
    (root / "book" / "intro.md").write_text(INTRO)
    new_chapter(root, 2, "sketch", "A sketch")
    return root, "book/02_sketch.md"


@pytest.mark.parametrize(("change", "message"), [
    (lambda text: section(text, "## Summary"), "book/02_sketch.md: no `## Summary` section (rule: "),
    (lambda text: section(text, "## Exercises"), "book/02_sketch.md: no `## Exercises` section (rule: "),
    (lambda text: text.replace("**Exercise 4", "**Exercise four").replace("answer == 16", "answer > 0")
     .replace("tags: [hide-cell, solution]\n---\nanswer = 4", "tags: [hide-cell]\n---\nanswer = 4"),
     "3 exercises with a solution (rule: at least 4"),
    (lambda text: text.replace("- The fourth idea.\n", "").replace("- The third idea.\n", ""),
     "the summary has 2 points (rule: 4 to 6)"),
    (lambda text: text.replace("pipeline_map(", "print("), "does not open with the book's map (rule: "),
    (lambda text: text.replace("```{package-additions}\n```\n", ""),
     "book/02_sketch.md must close with the list of names it added to the package"),
])
def test_a_chapter_breaking_a_convention_fails_check_naming_the_rule(tmp_path: Path, change, message: str) -> None:
    root, path = scaffolded_small_book(tmp_path)
    assert [p for p in convention_problems(root) if p.startswith(path)] == []
    (root / path).write_text(change((root / path).read_text()))
    problems = [p for p in convention_problems(root) if path in p]
    assert any(message in p and "Fix:" in p for p in problems), problems


def test_make_check_names_a_missing_summary(tmp_path: Path) -> None:
    root, path = scaffolded_small_book(tmp_path)
    (root / path).write_text(section((root / path).read_text(), "## Summary"))
    result = run_check(root)
    assert result.returncode == 1
    assert f"{path}: no `## Summary` section (rule: a chapter closes with a summary" in result.stderr


def test_the_scaffold_refuses_a_chapter_out_of_order(tmp_path: Path) -> None:
    root = make_numbered_book(tmp_path, {"a": chapter(CELL_A)}, {})
    (root / "book" / "intro.md").write_text(INTRO)
    result = run_export(root, "new-chapter", "5", "sketch", "A sketch")
    assert result.returncode == 2 and "a new chapter is number 2" in result.stderr
    assert not (root / "book" / "05_sketch.md").exists()


def test_an_exported_cell_must_import_what_it_uses(tmp_path: Path) -> None:
    body = CELL_A.replace("import math\n", "").replace("    return a + b", "    return math.floor(a + b)") + (
        "\n```{code-cell} ipython3\nimport math\n```\n")
    root = make_book(tmp_path, {"a": chapter(body)})
    fence = next(n for n, line in enumerate((root / "book" / "a.md").read_text().split("\n"), start=1)
                 if line.startswith("```{code-cell}"))
    (problem,) = [p for p in convention_problems(root) if "the exported cell uses" in p]
    assert problem.startswith(f"book/a.md:{fence}: the exported cell uses math, which only cells that are not "
                              "exported import (rule: an exported cell imports what it uses")
    assert problem.endswith("Fix: add to this cell `import math`")


FAILING = """
# A chapter

## Dividing

```{code-cell} ipython3
numerator = 1
ratio = numerator / 0
print(ratio)
```
"""


def test_a_failing_cell_is_named_by_its_chapter_line(tmp_path: Path) -> None:
    root = make_book(tmp_path, {"a": chapter(FAILING, module=None)})
    lines = (root / "book" / "a.md").read_text().split("\n")
    failure = run_chapter(root, "book/a.md")
    assert failure, "the cell fails"
    assert failure[0].startswith(f"book/a.md:{lines.index('ratio = numerator / 0') + 1}: the cell that starts at "
                                 f"line {lines.index('```{code-cell} ipython3') + 1} fails"), failure[0]
    assert "ZeroDivisionError" in failure[0]
    result = run_export(root, "--run-chapter", "book/a.md")
    assert result.returncode == 1 and "ZeroDivisionError" in result.stdout
    assert run_export(root, "--run-chapter", "7").returncode == 2


FAILING_INSIDE = """
# A chapter

## Dividing

```{code-cell} ipython3
def spread(x):
    y = x + 1
    return 1 / (y - y)
```

Some prose between the two cells.

```{code-cell} ipython3
first = 1
second = 2
third = 3
result = spread(first)
```
"""


def test_each_frame_of_a_failing_cell_is_named_by_its_own_cells_line(tmp_path: Path) -> None:
    """The error is raised in a function an earlier cell defines: its frame `Cell In[1], line 3`
    is that cell's line 3, not line 3 of the cell that failed."""
    root = make_book(tmp_path, {"a": chapter(FAILING_INSIDE)})
    book.export(root)
    lines = (root / "book" / "a.md").read_text().split("\n")
    raising, calling = lines.index("    return 1 / (y - y)") + 1, lines.index("result = spread(first)") + 1
    fence = lines.index("first = 1")  # the line above it, counted from 1
    result = run_export(root, "--run-chapter", "book/a.md")
    assert result.returncode == 1
    assert f"Cell In[1], line 3 [book/a.md:{raising}]" in result.stdout, result.stdout
    assert f"Cell In[2], line 4 [book/a.md:{calling}]" in result.stdout, result.stdout
    assert (f"chapter: book/a.md:{raising}: the cell that starts at line {fence} fails at line {calling}, in code "
            f"defined at line {raising}: ZeroDivisionError") in result.stdout, result.stdout
    assert "without encryption" not in result.stdout + result.stderr, "the kernel's log is not the chapter's"
    assert "src/ is out of date" not in result.stdout


def test_make_chapter_warns_when_src_is_out_of_date(tmp_path: Path) -> None:
    root = make_book(tmp_path, {"a": chapter(CELL_A)})
    book.export(root)
    md = root / "book" / "a.md"
    md.write_text(md.read_text().replace("return a + b", "return a + b + 1"))
    result = run_export(root, "--run-chapter", "book/a.md")
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("warning: src/ is out of date (src/scratchformer/demo.py differs from the chapters): where the chapter "
            "imports from scratchformer it gets the old code. Run `make export` first.") in result.stdout


def test_where_on_a_traceback_through_no_generated_module_names_what_the_test_checks(tmp_path: Path) -> None:
    root = make_book(tmp_path, {"a": chapter(CELL_A)})
    book.export(root)
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text(
        "from scratchformer.demo import add\n\n\ndef test_x():\n    assert add(1, 2) == 4.5\n")
    definition = (root / "book" / "a.md").read_text().split("\n").index("def add(a: int, b: int) -> int:") + 1

    def where(traceback: str) -> str:
        return subprocess.run([sys.executable, str(ROOT / "tools" / "export.py"), "--where", "-", "--root", str(root)],
                              input=traceback, capture_output=True, text=True).stdout

    out = where("tests/test_x.py:5: in test_x\n    assert add(1, 2) == 4.5\nE   AssertionError\n")
    assert "no line of this traceback is in a module the chapters generate" in out
    assert re.search(rf"tests/test_x\.py:5 \(test_x\) checks names the chapters define: add \(book/a\.md:{definition}\)",
                     out), out
    assert "nothing to map to a chapter" in where("Traceback: something else\n")


PREPARED_TESTS = """import pytest

LONG = "a reason longer than any terminal line: " + "every word of it matters " * 12


def test_add():
    assert 1 + 2 == 4


def test_long_reason():
    assert not LONG, LONG


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
def test_on_a_gpu(device):
    pytest.skip("no CUDA device on this machine")


def test_without_data():
    pytest.skip("no IMDB")


@pytest.mark.parametrize("n", range(30))
def test_passes(n):
    assert n >= 0
"""


def test_prepare_runs_every_step_and_lists_every_failure_in_full(tmp_path: Path) -> None:
    root = make_book(tmp_path, {"a": chapter(CELL_A)})
    book.export(root)
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text(PREPARED_TESTS)
    for command in (["init", "-q"], ["add", "-A"],
                    ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(root), *command], check=True, capture_output=True)
    md = root / "book" / "a.md"
    md.write_text(md.read_text() + "\n```{code-cell} ipython3\nadd(1, undefined_name)\n```\n")
    result = run_export(root, "--prepare")
    assert result.returncode == 1, result.stdout[-3000:]
    summary = result.stdout[result.stdout.index("prepare: 3 steps failed:"):]
    line = md.read_text().split("\n").index("add(1, undefined_name)") + 1
    assert "- check:" in summary and f"book/a.md:{line}: undefined name 'undefined_name'" in summary
    assert ("- fast tests (2 failed, 30 passed, 3 skipped: 2 no CUDA device on this machine, 1 no IMDB):"
            in summary), summary
    assert "tests/test_a.py::test_add\n" in summary and "assert (1 + 2) == 4" in summary
    long_reason = "a reason longer than any terminal line: " + "every word of it matters " * 12
    assert "tests/test_a.py::test_long_reason" in summary and long_reason.strip() in summary, summary
    assert "- chapter book/a.md:" in summary and f"book/a.md:{line}: the cell that starts at" in summary
    assert "=== prepare: export: ok" in result.stdout
    assert "SKIPPED" not in result.stdout, "the expected skips are counted, not listed"
    assert "3 skipped: 2 no CUDA device on this machine, 1 no IMDB" in result.stdout


def test_prepare_shows_a_steps_output_as_it_comes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step waits for a file that only the line it printed first makes appear: without streaming,
    it would wait in vain (and say so)."""
    from book import prepare

    signal = tmp_path / "seen"
    script = ("import pathlib, sys, time\nprint('first line', flush=True)\n"
              f"for _ in range(300):\n    if pathlib.Path({str(signal)!r}).exists():\n"
              "        print('the first line was shown while the step ran'); sys.exit(0)\n    time.sleep(0.1)\n"
              "print('the first line was held back until the step ended')\n")

    class Screen:
        def write(self, text: str) -> None:
            if "first line" in text:
                signal.touch()

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", Screen())
    status, lines = prepare.stream([sys.executable, "-c", script], tmp_path)
    monkeypatch.undo()
    assert status == 0 and lines[-1] == "the first line was shown while the step ran", lines
