"""Export the book's tagged code cells into the `scratchformer` package.

Each chapter listed in `_toc.yml` may name a module in its front matter
(`export: scratchformer.attention`). Its code cells tagged `export` are written to
that module; a cell tagged `export:scratchformer.<name>` is written to the module it
names instead, so one chapter can feed several modules. Modules are written in
`_toc.yml` order, each block preceded by a comment naming the chapter file and the
section heading it sits under. Top-level imports are gathered, without repeats, at
the top of the module. An optional front-matter key `export_doc` holds text for the
module's docstring: a string for the front-matter module, or a mapping from module
name to text when the chapter feeds several (chapters exporting into the same module
add their paragraphs in order). A top-level name may be exported only once in the
whole book, whichever module it goes to.

The docstring of every exported top-level function and class ends, in the module, with a
line saying where it is taught, which the chapters do not repeat:
`Taught in chapter N, "<the heading the cell sits under>".`, or in an unnumbered page
`Taught in the appendix "<the page's title>", "<the heading>".` (N counts the chapters of
the numbered parts of `_toc.yml`). It goes before the docstring's closing quotes, which
must therefore sit on a line of their own.

Each generated module records a fingerprint of its text in its header. A module whose
text no longer matches its fingerprint was edited by hand: the exporter refuses to
overwrite it and names the chapter line to edit instead.

A tag that looks like an export tag but is not one (`exports`, `Export`, `export: name`, the
option `:tag:` for `:tags:`) is refused: the cell would silently drop out of the package. So is
an export while a notebook beside a chapter (`book/NN_topic.ipynb`) holds edits the chapter
lacks: the exporter reads only the `.md`.

`--check` lists, in one pass, every problem it finds before it fails: the diff between src/ and
the chapters; notebooks out of step with their chapters (both sides' changes, and a command that
loses neither) and merge conflict markers left in chapters; Markdown files in the chapters'
folders that `_toc.yml` does not list and `_config.yml` does not exclude; a leftover `formats:`
pairing in a chapter's front matter; every convention of the book (`book.conventions`);
undefined names in every chapter's code cells (`book.chapter_lint`); and, in the package as the
chapters generate it, modules that fail to import, imports from the package of names it does
not define, and undefined names (pyflakes) in src/, tests/, benchmarks/, scratchbook/ and tools/.
Each line of a generated module it names is followed by the chapter line it
comes from, which `--where` prints.

    python tools/export.py           # write src/scratchformer/*.py
    python tools/export.py --check   # exit 1 listing every problem (a diff if src/ is out of date)
    python tools/export.py --update  # carry hand edits of generated modules back into the chapters
    python tools/export.py --force   # overwrite generated modules even if edited by hand
    python tools/export.py --where src/scratchformer/attention.py:268   # -> book/08_multi_head.md:407
    ... 2>&1 | python tools/export.py --where -   # a traceback, with the chapter line of each generated line
    python tools/export.py --merge-notebook book/04_self_attention.ipynb   # both sides' edits into the chapter
    python tools/export.py --run-chapter 4   # run chapter 4's cells against the package (make chapter N=4)
    python tools/export.py --prepare         # export, check, fast tests, changed chapters (make prepare)
    python tools/export.py new-chapter 14 attention_maps "Reading attention maps"   # the scaffold

Run it with the project's virtual environment (`make export`, or `.venv/bin/python
tools/export.py` after `make venv`): it needs jupytext and PyYAML.

What this deliberately does not handle: notebooks in formats other than MyST
Markdown, re-exports through `__init__.py` (that file is written by hand), and, for
`--update`, edits outside the code of exported cells (imports, docstrings from the
front matter, the header, lines between two cells, the `Taught in` lines). `--update` also
writes the carried edit into a notebook beside the chapter (keeping its outputs), and refuses
while that notebook is out of step with the chapter.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from book.cells import ExportError, toc_chapters
from book.conventions import CONVENTIONS, convention_problems
from book.package_lint import package_problems
from book.pages import conflict_markers, leftover_pairings, stray_pages
from book.render import generated
from book import scaffold
from book.prepare import prepare
from book.run import run
from book.sync import merge_notebook, stale_notebooks
from book.update import UpdateIncomplete, hand_edited_modules, update
from book.where import where
from book.write import FORCE_HINT, UPDATE_HINT, check, export


def book_root(text: str) -> Path:
    """An argparse type: the folder of a book, holding its `_toc.yml`."""
    root = Path(text)
    if not (root / "_toc.yml").is_file():
        raise argparse.ArgumentTypeError(f"{text} is not the root of a book: it holds no _toc.yml")
    return root


def check_problems(root: Path, wanted: dict[Path, str] | None = None) -> list[str]:
    """Everything `--check` refuses besides a diff, each with the file (and line) to fix."""
    chapters = toc_chapters(root)
    wanted = generated(root) if wanted is None else wanted
    return [*stale_notebooks(root, chapters), *conflict_markers(root, chapters), *stray_pages(root, chapters),
            *leftover_pairings(root, chapters), *convention_problems(root),
            *package_problems(root, wanted, chapters)]


def new_chapter_command(argv: list[str]) -> int:
    """`new-chapter N SLUG TITLE`: write a new chapter that passes every check."""
    parser = argparse.ArgumentParser(prog="tools/export.py new-chapter", description=scaffold.__doc__.splitlines()[0])
    parser.add_argument("number", type=int, help="its number: one more than the last chapter's")
    parser.add_argument("slug", help="the file's name after the number: book/NN_<slug>.md")
    parser.add_argument("title", help="the chapter's title")
    parser.add_argument("--step", default="prediction", help="the step of the book's map it highlights")
    parser.add_argument("--root", type=book_root, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args(argv)
    try:
        written = scaffold.new_chapter(args.root, args.number, args.slug, args.title, args.step)
    except ExportError as err:
        print(f"new-chapter: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(args.root).as_posix()}")
    print(f"Now write the chapter; `make check` and `make chapter N={args.number}` check it as you go.")
    translated = sorted(args.root.glob("locales/*/LC_MESSAGES/book/intro.po"))
    for catalogue in translated:
        print(f"book/intro.md is translated: its new line needs translating in "
              f"{catalogue.relative_to(args.root).as_posix()} (`make translations` adds it; `make check` "
              "names it until then)")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["new-chapter"]:
        return new_chapter_command(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail with a diff if src/ is out of date")
    mode.add_argument("--force", action="store_true",
                      help="overwrite generated modules even where they were edited by hand (the edits are lost)")
    mode.add_argument("--update", action="store_true",
                      help="carry hand edits of generated modules back into the chapter cells they came from")
    mode.add_argument("--where", metavar="FILE:LINE", nargs="+",
                      help="print the chapter line that a line of a generated module comes from "
                           "(src/scratchformer/attention.py:268 -> book/07_dropout.md:390); `-` reads a "
                           "traceback from stdin and adds the chapter line to each generated line in it")
    mode.add_argument("--merge-notebook", metavar="NOTEBOOK",
                      help="write into the chapter beside NOTEBOOK (book/NN_topic.ipynb) the edits of both "
                           "(a three-way merge of their cells; cells both changed are kept in both versions, "
                           "between conflict markers), then bring the notebook in step with it")
    mode.add_argument("--prepare", action="store_true",
                      help="export, check, the fast tests and every chapter changed since git's HEAD, "
                           "listing every failure at the end (`make prepare`)")
    mode.add_argument("--run-chapter", metavar="N",
                      help="run chapter N's code cells (its number, or its file) against the current package "
                           "and name the chapter line of a failing cell (`make chapter N=4`)")
    parser.add_argument("--root", type=book_root, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args(argv)
    try:
        if args.where:
            return where(args.root, args.where)
        if args.prepare:
            return prepare(args.root)
        if args.run_chapter:
            return run(args.root, args.run_chapter)
        if args.merge_notebook:
            for line in merge_notebook(args.root, args.merge_notebook):
                print(f"merge: {line}")
            return 0
        if args.check:
            try:
                wanted = generated(args.root)
            except ExportError as err:  # the chapters do not export: list what else is wrong with them
                chapters = toc_chapters(args.root)
                problems = [str(err), *conflict_markers(args.root, chapters), *stale_notebooks(args.root, chapters),
                            *convention_problems(args.root)]
                print(f"export --check: the chapters cannot be exported; {len(problems)} problem"
                      f"{'s' * (len(problems) != 1)}:", file=sys.stderr)
                for line in problems:
                    print(f"  {line}", file=sys.stderr)
                return 2  # as the export itself refuses
            diff = check(args.root, wanted)
            failed = False
            if diff:
                sys.stdout.write(diff)
                edited = [p.relative_to(args.root).as_posix() for p in hand_edited_modules(args.root)]
                if edited:
                    print(f"\nsrc/ differs from the chapters ({', '.join(edited)} edited by hand): carry the "
                          f"edit into the chapters with {UPDATE_HINT} (it lists what it cannot carry, with "
                          "the chapter line to edit instead), or make it in the chapter, then run `make export`.",
                          file=sys.stderr)
                else:
                    print("\nsrc/ differs from the chapters: run `make export`.", file=sys.stderr)
                failed = True
            else:
                print("export --check: src/ matches the chapters")
            problems = check_problems(args.root, wanted)
            if problems:
                print(f"export --check: {len(problems)} problem{'s' * (len(problems) != 1)}"
                      + (" (in the package as the chapters generate it)" if diff else "") + ":", file=sys.stderr)
                for line in problems:
                    print(f"  {line}", file=sys.stderr)
                failed = True
            else:
                print(f"export --check: no stale notebook or stray page; every page keeps the book's "
                      f"{len(CONVENTIONS)} conventions (tools/book/conventions.py); the package imports, and the "
                      "chapters' code cells, src/, tests/, benchmarks/, scratchbook/ and tools/ use no undefined name")
            return 1 if failed else 0
        if args.update:
            try:
                carried = update(args.root)
            except UpdateIncomplete as err:
                for line in err.carried:
                    print(f"carried back: {line}")
                print(f"export --update: {err}\nMake those in the chapters by hand (the module keeps them until "
                      f"the chapters generate them), or discard them with {FORCE_HINT}.", file=sys.stderr)
                return 2
            for line in carried:
                print(f"carried back: {line}")
            if not carried:
                print("no generated module was edited by hand: nothing to carry back")
        for line in stray_pages(args.root, toc_chapters(args.root)):
            print(f"warning: {line}", file=sys.stderr)
        for path in export(args.root, force=args.force):
            rel = path.relative_to(args.root)
            if path.exists():
                print(f"wrote {rel}")
            else:
                print(f"removed {rel} (no chapter in _toc.yml exports into it any more)")
        return 0
    except ExportError as err:
        print(f"export: {err}", file=sys.stderr)
        return 2
