"""The conventions checker (tools/book/conventions.py and its siblings, which `make check` runs):
the book keeps every convention, and the checker catches each kind of problem, naming the file
and line, the rule and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import ROOT
from support.scratch import copy_repo, run_check

import book
from book import cell_conventions, conventions, layers


def test_the_book_keeps_every_convention() -> None:
    problems = conventions.all_problems(ROOT)
    assert list(problems) == conventions.CONVENTIONS
    assert not [p for found in problems.values() for p in found], "\n".join(
        p for found in problems.values() for p in found)


def problems_of(root: Path, name: str) -> list[str]:
    return conventions.all_problems(root, [name])[name]


NEW_CHAPTER = '''---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
export: scratchformer.sketch
---

# Sketch

```{code-cell} ipython3
:tags: [export]

def continue_text(prompt):
    return prompt


def stop_text(prompt):
    """Stop `prompt`.

    Taught in chapter 1, "Sketch".
    """
    return prompt
```

```{code-cell} ipython3
from myst_nb import glue

glue("answer", 42)
```

The answer is {glue:text}`answer`.

## What this chapter added

- `continue_text(prompt)`: continue a prompt.
'''


def add_last_chapter(root: Path, name: str, text: str) -> int:
    """Write `book/<name>.md` and list it after the numbered part's last chapter; its number."""
    (root / "book" / f"{name}.md").write_text(text, encoding="utf-8")
    last = book.numbered_chapters(root)[-1].removesuffix(".md")
    toc = root / "_toc.yml"
    toc.write_text(toc.read_text().replace(f"      - file: {last}\n",
                                           f"      - file: {last}\n      - file: book/{name}\n"))
    return len(book.numbered_chapters(root))


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A copy of the repository, with the test file that lists the glued numbers."""
    root = copy_repo(tmp_path)
    (root / conventions.EXPECTED_IN_HTML).parent.mkdir(parents=True)
    (root / conventions.EXPECTED_IN_HTML).write_text((ROOT / conventions.EXPECTED_IN_HTML).read_text())
    return root


def test_a_new_chapter_that_forgets_the_conventions_is_told_what_to_add(repository: Path) -> None:
    root = repository
    number = len(book.numbered_chapters(root)) + 1
    name = f"{number + 1:02d}_sketch"  # misnumbered on purpose
    assert add_last_chapter(root, name, NEW_CHAPTER) == number
    chapter = f"book/{name}.md"
    problems = conventions.all_problems(root)
    assert problems["module docstrings"] == [
        f"{chapter}:10: the module scratchformer.sketch has no docstring (rule: every module says what it holds "
        f"and what it leaves out). Fix: add `export_doc:` (the module's docstring) to the front matter of {chapter}"]
    assert problems["file numbers"] == [
        f"{chapter}:1: it is chapter {number} in _toc.yml (rule: book/NN_<topic>.md is chapter NN, as docstrings "
        f"and the introduction name it). Fix: rename it book/{number:02d}_<topic>.md (`git mv`) and its entry in "
        "_toc.yml"]
    (intro,) = problems["introduction"]
    assert intro.startswith("book/intro.md:") and f"does not link to {chapter}" in intro and "Fix:" in intro
    assert problems["taught in"] == [
        f"{chapter}:15: scratchformer.sketch.continue_text has no docstring (rule: every exported function and "
        f"class says what it does; the exporter ends its docstring with `Taught in chapter {number}, \"Sketch\".`). "
        "Fix: give it one, its closing quotes on a line of their own"]
    (by_hand,) = [p for p in problems["taught in by hand"] if p.startswith(chapter)]
    assert by_hand.startswith(f"{chapter}:25: a docstring says where its name is taught") and "Fix:" in by_hand
    (glued,) = problems["glued numbers"]
    assert glued.startswith(f"{chapter}:36: the page glues numbers") and f'"book/{name}.html": [' in glued
    structure = [p for p in problems["structure"] if p.startswith(chapter)]
    assert any("must close with the list of names it added to the package" in p for p in structure), structure
    assert any("does not open with the book's map" in p for p in structure), structure


WIDE_AND_SELF_IMPORTING = '''---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
export: scratchformer.sketch
---

# Sketch

```{code-cell} ipython3
:tags: [export]

def continue_text(prompt):
    """Continue `prompt`.
    """
    return prompt
```

```{code-cell} ipython3
from scratchformer.sketch import continue_text

print(continue_text("a prompt that makes this line wider than the ninety columns..."))  # 92
```
'''


def test_wide_code_and_reimported_definitions_are_named_with_their_lines(repository: Path) -> None:
    root = repository
    name = f"{len(book.numbered_chapters(root)) + 1:02d}_sketch"
    add_last_chapter(root, name, WIDE_AND_SELF_IMPORTING)
    width = problems_of(root, "code width")
    assert width == [f"book/{name}.md:27: a code line of 92 columns (rule: code fits the page's 90 columns, or "
                     "the reader scrolls sideways). Fix: break the line (inside brackets, or a long string into "
                     "two), or shorten a comment"]
    (own,) = problems_of(root, "own definitions")
    assert own.startswith(f"book/{name}.md:25: imports from the package what the chapter's own cells define "
                          "(scratchformer.sketch.continue_text)") and "Fix:" in own


def test_make_check_names_a_92_column_line(repository: Path) -> None:
    """What a contributor meets: `make check` (tools/export.py --check) fails on it, in seconds."""
    chapter = repository / "book" / "04_self_attention.md"
    text = chapter.read_text(encoding="utf-8")
    fence = "```{code-cell} ipython3\n"
    at = text.index(fence, text.index("\n## ")) + len(fence)
    line = text[:at].count("\n") + 1
    chapter.write_text(text[:at] + "wide = '" + "x" * 83 + "'\n" + text[at:], encoding="utf-8")
    result = run_check(repository)
    assert result.returncode == 1
    assert f"book/04_self_attention.md:{line}: a code line of 92 columns" in result.stderr, result.stderr


def test_prose_that_says_nothing_was_added_must_match_the_list(repository: Path) -> None:
    chapter = repository / "book" / "04_self_attention.md"
    chapter.write_text(chapter.read_text() + "\nThis chapter adds nothing to the package.\n")
    (problem,) = problems_of(repository, "additions prose")
    assert problem.startswith("book/04_self_attention.md:") and "says \"adds nothing to the package\"" in problem
    assert conventions.additions_prose(ROOT) == [], "chapter 5 exports nothing and may say so"


def test_the_layer_walk_sees_the_package_imports() -> None:
    assert "scratchformer.cli.gpt" in layers.package_imports(ROOT)["scratchformer.cli.commands"]


def test_an_upward_import_a_module_outside_the_layers_and_a_circle_are_named(tmp_path: Path) -> None:
    package = tmp_path / "src" / "scratchformer"
    for folder in ("nn", "models", "odd"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "nn" / "attention.py").write_text("from scratchformer.models.bert import BertConfig\n")
    (package / "models" / "bert.py").write_text("def f():\n    from scratchformer.nn import attention\n")
    (package / "odd" / "thing.py").write_text("")
    problems = layers.layer_problems(tmp_path)
    assert problems[0].startswith("src/scratchformer/odd/__init__.py: scratchformer.odd is in no layer")
    assert any(p.startswith("scratchformer.nn.attention (layer 1) imports scratchformer.models.bert (layer 3)")
               for p in problems), problems
    (circle,) = layers.import_circles(tmp_path)
    assert "scratchformer.models.bert -> scratchformer.nn.attention -> scratchformer.models.bert" in circle


def test_a_taught_name_in_a_folded_cell_and_a_check_in_a_shown_cell_are_named(repository: Path) -> None:
    chapter = repository / "book" / "12_gpt.md"
    text = chapter.read_text(encoding="utf-8")
    shown = "```{code-cell} ipython3\n:tags: [export]\n\nclass KVCache:"
    assert text.count(shown) == 1
    chapter.write_text(text.replace(shown, shown.replace("[export]", "[export, hide-input]")), encoding="utf-8")
    (problem,) = cell_conventions.taught_but_folded(repository)
    assert "book/12_gpt.md:" in problem and "KVCache is taught but its cell is folded" in problem
    assert cell_conventions.checks_in_taught_cells(repository) == []
    chapter.write_text(text + "\n```{code-cell} ipython3\nx = 1\nassert x\nglue_md('x', x)\n```\n", encoding="utf-8")
    (problem,) = cell_conventions.checks_in_taught_cells(repository)
    assert "a shown cell uses glue_md, assert" in problem


def test_a_long_visible_cell_in_a_teaching_chapter_is_named(repository: Path) -> None:
    chapter = repository / "book" / "11_training.md"
    long_cell = "```{code-cell} ipython3\n" + "x = 1\n" * 61 + "```\n"
    chapter.write_text(chapter.read_text(encoding="utf-8") + "\n" + long_cell, encoding="utf-8")
    (problem,) = cell_conventions.long_visible_cells(repository)
    assert "a visible code cell of 61 lines" in problem and "Fix:" in problem
    chapter.write_text(chapter.read_text(encoding="utf-8").replace(
        long_cell, long_cell.replace("ipython3\n", "ipython3\n:tags: [hide-input]\n\n")), encoding="utf-8")
    assert cell_conventions.long_visible_cells(repository) == []


FIGURE = "```{code-cell} ipython3\n%simport matplotlib.pyplot as plt\n\nplt.plot([1, 2])\nplt.show()\n```\n"


@pytest.mark.parametrize(("options", "problem"), [
    ("", "no alt text"),
    ("---\nmystnb:\n  image:\n    alt: loss.png\n---\n", "its alt text is a file name ('loss.png')"),
    ("---\nmystnb:\n  image:\n    alt: A curve\n---\n", "its alt text ('A curve') is too short"),
])
def test_a_figure_without_alt_text_is_named(repository: Path, options: str, problem: str) -> None:
    chapter = repository / "book" / "05_scaling.md"
    text = chapter.read_text(encoding="utf-8")
    chapter.write_text(text + "\n" + FIGURE % options, encoding="utf-8")
    line = len(text.splitlines()) + 2
    (found,) = cell_conventions.figure_alt_text(repository)
    assert found.startswith(f"book/05_scaling.md:{line}: the cell draws a figure but {problem}"), found
    assert "Fix:" in found


def test_an_interval_of_two_standard_errors_is_named(repository: Path) -> None:
    page = repository / "book" / "13_pretraining.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text + "\nPretraining pays if the gain is over 2 standard errors.\n", encoding="utf-8")
    (problem,) = [p for p in problems_of(repository, "structure") if "standard errors" in p]
    assert problem.startswith(f"book/13_pretraining.md:{len(text.splitlines()) + 2}:") and "t-interval" in problem
    page.write_text(text + "\nThe gain is 4.30 standard errors wide, 0.2 standard errors.\n", encoding="utf-8")
    assert not [p for p in problems_of(repository, "structure") if "standard errors" in p]


def test_a_sentence_with_four_glued_values_is_named(tmp_path: Path) -> None:
    page = tmp_path / "book" / "page.md"
    page.parent.mkdir()
    page.write_text("---\nkernelspec: {}\n---\n\n# A page\n\nIt scores {glue:md}`a`, "
                    "{glue:md}`b`, {glue:md}`c` and {glue:md}`d`. Then {glue:md}`e`, "
                    "{glue:md}`f` and {glue:md}`g`.\n\n- one {glue:md}`h`.\n- two\n\n"
                    "```{code-cell} ipython3\nprint('{glue:md}`i` {glue:md}`j` "
                    "{glue:md}`k` {glue:md}`l`')\n```\n", encoding="utf-8")
    problems = conventions.crowded_sentences(tmp_path, {"book/page.md"})
    assert len(problems) == 1 and "carries 4 glued values" in problems[0]
    assert problems[0].startswith("book/page.md:7: ") and "It scores" in problems[0] and "Fix:" in problems[0]
    page.write_text(page.read_text(encoding="utf-8").replace("and {glue:md}`d`.", "and d."),
                    encoding="utf-8")
    assert not conventions.crowded_sentences(tmp_path, {"book/page.md"})
