"""The book's conventions, checked without building it, so that a new chapter that forgets one
fails here with a message that says what to add.

- a module's docstring comes from the front-matter key `export_doc` of a chapter feeding it;
- a chapter's file is numbered like the chapter (`book/NN_topic.md` is chapter NN);
- the introduction links every chapter;
- every exported function and class says where it is taught: its docstring ends with
  `Taught in chapter N, "<a heading of chapter N>".`;
- a chapter closes with "What this chapter added to the package", whose list of names is
  generated (the directive `package-additions`), never typed;
- a chapter that glues numbers into its prose has them checked in the built HTML
  (`EXPECTED_IN_HTML` in tests/test_book.py).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from test_book import EXPECTED_IN_HTML
from test_export import copy_repo

sys.path.insert(0, str(ROOT / "tools"))
import export  # noqa: E402
import reference  # noqa: E402

ADDED_HEADING = "What this chapter added to the package"
ADDED_SECTION = f"## {ADDED_HEADING}\n\n```{{{reference.ADDITIONS_DIRECTIVE}}}\n```\n"
GLUE_ROLE = re.compile(r"\{glue(:[a-z]+)?\}`")


def module_docstrings(root: Path) -> list[str]:
    return [
        f"{module.name}: add `export_doc:` (the module's docstring) to the front matter of {module.chapters[0]}"
        for module in export.collect(root).values() if not module.docs
    ]


def file_numbers(root: Path) -> list[str]:
    return [
        f"{chapter} is chapter {number} in _toc.yml: name it book/{number:02d}_<topic>.md "
        "(docstrings and the introduction refer to chapters by number)"
        for number, chapter in enumerate(export.numbered_chapters(root), start=1)
        if not Path(chapter).name.startswith(f"{number:02d}_")
    ]


def intro_links(root: Path) -> list[str]:
    intro = (root / "book" / "intro.md").read_text(encoding="utf-8")
    return [
        f"book/intro.md does not link to {chapter}: add it, with a line on what it builds, to the list "
        "of chapters in 'The 1,000-foot view'"
        for chapter in export.numbered_chapters(root)
        if f"]({Path(chapter).name})" not in intro and f"]({Path(chapter).name}#" not in intro
    ]


def closing_sections(root: Path) -> list[str]:
    problems = []
    for chapter in export.numbered_chapters(root):
        text = (root / chapter).read_text(encoding="utf-8")
        sections = [h for h in reference.heading_anchors(text) if h[1] == 2]
        if not (sections and sections[-1][2] == ADDED_HEADING and ADDED_SECTION in text):
            problems.append(
                f"{chapter} must close with the list of names it added to the package, generated from its "
                f"exported cells. Make its last section:\n\n{ADDED_SECTION}\n(prose may follow the directive)"
            )
    return problems


def taught_in(root: Path) -> list[str]:
    chapters = export.numbered_chapters(root)
    problems = []
    titles_of: dict[str, set[str]] = {}
    for module in export.collect(root).values():
        for block in module.blocks:
            number = chapters.index(block.chapter) + 1 if block.chapter in chapters else "N"
            if block.chapter not in titles_of:
                lines = (root / block.chapter).read_text(encoding="utf-8").splitlines()
                titles_of[block.chapter] = {m.group(2) for m in map(export.HEADING.match, lines) if m} | {
                    h[2] for h in reference.heading_anchors("\n".join(lines))}
            titles = titles_of[block.chapter]
            for entry in reference.entries_of(block):
                if entry.kind == "data":
                    continue
                paragraphs = [p for p in re.split(r"\n\s*\n", entry.doc.strip()) if p.strip()]
                last = " ".join(paragraphs[-1].split()) if paragraphs else ""
                match = re.fullmatch(r'Taught in chapter (\d+), "(.+)"\.', last)
                if not match or match.group(1) != str(number) or match.group(2) not in titles:
                    problems.append(
                        f"{module.name}.{entry.name} ({block.chapter}:{block.line}): end its docstring with "
                        f'the line\n    Taught in chapter {number}, "{block.section}".'
                    )
    return problems


def glued_numbers_checked(root: Path, expected: dict[str, list[str]]) -> list[str]:
    pages = {Path(chapter).with_suffix(".html").as_posix(): chapter for chapter in export.toc_chapters(root)}
    problems = [
        f"EXPECTED_IN_HTML in tests/test_book.py names {page}, which the book does not have"
        for page in sorted(set(expected) - set(pages))
    ]
    for page, chapter in pages.items():
        glued = len(GLUE_ROLE.findall((root / chapter).read_text(encoding="utf-8")))
        if glued and not expected.get(page):
            problems.append(
                f"{chapter} quotes {glued} glued values: add \"{page}\": [the numbers its prose quotes, as "
                "the page shows them] to EXPECTED_IN_HTML in tests/test_book.py"
            )
    return problems


def all_problems(root: Path, expected: dict[str, list[str]]) -> dict[str, list[str]]:
    return {
        "module docstrings": module_docstrings(root),
        "file numbers": file_numbers(root),
        "introduction": intro_links(root),
        "closing sections": closing_sections(root),
        "taught in": taught_in(root),
        "glued numbers": glued_numbers_checked(root, expected),
    }


CONVENTIONS = ["module docstrings", "file numbers", "introduction", "closing sections", "taught in", "glued numbers"]


@pytest.fixture(scope="module")
def repository_problems() -> dict[str, list[str]]:
    assert len(export.numbered_chapters(ROOT)) >= 10
    problems = all_problems(ROOT, EXPECTED_IN_HTML)
    assert sorted(problems) == sorted(CONVENTIONS)
    return problems


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_the_book_keeps_its_conventions(repository_problems: dict[str, list[str]], convention: str) -> None:
    problems = repository_problems[convention]
    assert not problems, "\n".join(problems)


NEW_CHAPTER = '''---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
export: scratchformer.gpt
---

# GPT

```{code-cell} ipython3
:tags: [export]

def generate(prompt):
    """Continue `prompt`."""
    return prompt
```

```{code-cell} ipython3
from myst_nb import glue

glue("answer", 42)
```

The answer is {glue:text}`answer`.

## What this chapter added

- `generate(prompt)`: continue a prompt.
'''


def test_a_new_chapter_that_forgets_the_conventions_is_told_what_to_add(tmp_path: Path) -> None:
    root = copy_repo(tmp_path)
    (root / "book" / "12_gpt.md").write_text(NEW_CHAPTER, encoding="utf-8")
    toc = root / "_toc.yml"
    toc.write_text(toc.read_text().replace(
        "      - file: book/10_bert_imdb\n", "      - file: book/10_bert_imdb\n      - file: book/12_gpt\n"))
    problems = all_problems(root, EXPECTED_IN_HTML)
    assert problems["module docstrings"] == [
        "scratchformer.gpt: add `export_doc:` (the module's docstring) to the front matter of book/12_gpt.md"
    ]
    assert problems["file numbers"] == [
        "book/12_gpt.md is chapter 11 in _toc.yml: name it book/11_<topic>.md "
        "(docstrings and the introduction refer to chapters by number)"
    ]
    assert problems["introduction"] and "book/intro.md does not link to book/12_gpt.md" in problems["introduction"][0]
    assert problems["closing sections"] and ADDED_SECTION in problems["closing sections"][0]
    assert problems["taught in"] == [
        'scratchformer.gpt.generate (book/12_gpt.md:15): end its docstring with the line\n'
        '    Taught in chapter 11, "GPT".'
    ]
    assert problems["glued numbers"] and '"book/12_gpt.html": [' in problems["glued numbers"][0]
