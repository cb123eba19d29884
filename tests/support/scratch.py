"""Scratch books and copies of the repository, and the exporter run on them.

`make_book` writes a small book (its toc, an intro, chapters, an empty package); `chapter`
gives a chapter's text with its front matter; `copy_repo` copies what the exporter reads and
writes; `run_export` and `run_check` run tools/export.py on a book as a contributor does.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jupytext

import book
from support import ROOT

FRONT = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
{extra}---
"""


def chapter(body: str, module: str | None = "scratchformer.demo", doc: str | None = None) -> str:
    extra = ""
    if module:
        extra += f"export: {module}\n"
    if doc:
        extra += f"export_doc: {doc}\n"
    return FRONT.format(extra=extra) + textwrap.dedent(body)


def make_book(tmp_path: Path, chapters: dict[str, str]) -> Path:
    toc = "format: jb-book\nroot: book/intro\nchapters:\n" + "".join(
        f"  - file: book/{name}\n" for name in chapters
    )
    (tmp_path / "_toc.yml").write_text(toc)
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    for name, text in chapters.items():
        (tmp_path / "book" / f"{name}.md").write_text(text)
    (tmp_path / "src" / "scratchformer").mkdir(parents=True)
    return tmp_path


CELL_A = """
# A chapter

## Adding

```{code-cell} ipython3
:tags: [export]

import math

def add(a: int, b: int) -> int:
    return a + b
```

```{code-cell} ipython3
add(1, 2)
```
"""


def copy_repo(tmp_path: Path) -> Path:
    """A copy of what the exporter reads and writes (the chapters, the toc, src/, the tools)."""
    root = tmp_path / "repo"
    for name in ("_toc.yml", "jupytext.toml", "book", "src", "tools"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            root.mkdir(exist_ok=True)
            shutil.copy(source, root / name)
    return root


def run_export(root: Path, *args: str, python: list[str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*(python or [sys.executable]), str(ROOT / "tools" / "export.py"), *args, "--root", str(root)],
        capture_output=True, text=True,
    )


def run_check(root: Path) -> subprocess.CompletedProcess:
    return run_export(root, "--check")


def make_numbered_book(tmp_path: Path, chapters: dict[str, str], appendices: dict[str, str]) -> Path:
    """`make_book`, with `chapters` in a numbered part of the toc and `appendices` after it."""
    root = make_book(tmp_path, {**chapters, **appendices})
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: Chapters\n    numbered: true\n    chapters:\n"
        + "".join(f"      - file: book/{name}\n" for name in chapters)
        + "  - caption: Appendices\n    chapters:\n"
        + "".join(f"      - file: book/{name}\n" for name in appendices)
    )
    return root


def write_notebook(root: Path, name: str, edit: tuple[str, str] | None = None, paired: bool = False) -> Path:
    """The chapter `book/<name>.md` as a notebook beside it, as `jupytext --to ipynb` writes it."""
    md = root / "book" / f"{name}.md"
    notebook = jupytext.reads(md.read_text(), fmt="md:myst")
    if paired:
        notebook.metadata.setdefault("jupytext", {})["formats"] = "ipynb,md:myst"
    if edit:
        cell = next(c for c in notebook.cells if edit[0] in c.source)
        cell.source = cell.source.replace(*edit)
    path = md.with_suffix(".ipynb")
    jupytext.write(notebook, path)
    return path


def commit(root: Path) -> None:
    """Make `root` a git repository holding its files: the base a notebook's edits are told from."""
    for command in (["init", "-q"], ["add", "-A"],
                    ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(root), *command], check=True, capture_output=True)


def both_sides_changed(tmp_path: Path) -> tuple[Path, Path]:
    """A committed book whose chapter `a` and its notebook changed the same cell differently:
    the book's root and the chapter."""
    root = make_book(tmp_path, {"a": chapter(CELL_A)})
    book.export(root)
    commit(root)
    write_notebook(root, "a", ("return a + b", "return a + b + 1"))
    md = root / "book" / "a.md"
    md.write_text(md.read_text().replace("return a + b", "return b + a"))
    return root, md
