"""`tools/export.py new-chapter N slug "Title"`: a new chapter that passes every check at once.

It writes `book/NN_slug.md` with the front matter of the others, the map, a first section, a
summary, exercises with folded solutions that assert, and the closing list of names; lists it
in `_toc.yml` after the last numbered chapter; and links it from the introduction's list of
chapters. The text it writes says, in each place, what to write there. The chapter exports
nothing until a cell is tagged `export` and the front matter names the module (`export:`).
"""

from __future__ import annotations

import re
from pathlib import Path

from book.cells import ExportError, numbered_chapters
from book.conventions import ADDED_SECTION, MIN_EXERCISES, map_cell
from book.files import write_atomic

FRONT_MATTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
INTRO_LIST_END = "\n## What you need to know"


def exercise(number: int) -> str:
    return f"""**Exercise {number} (write it).** Ask the reader to compute, predict or change something the
chapter showed; the solution below runs when the book builds and asserts its answer.

```{{code-cell}} ipython3
---
mystnb:
  code_prompt_hide: Hide the solution
  code_prompt_show: Show the solution
tags: [hide-cell, solution]
---
answer = {number} * {number}  # the solution of exercise {number}: replace it
assert answer == {number * number}
```
"""


def chapter_text(number: int, title: str, step: str) -> str:
    exercises = "\n".join(exercise(n) for n in range(1, MIN_EXERCISES + 1))
    return f"""{FRONT_MATTER}
# {title}

{map_cell(number, step, title.lower())}
Say in a paragraph what this chapter builds and why the previous chapter needs it.

## A first section

Teach the idea with a small worked example before the production code; print the shapes.

```{{code-cell}} ipython3
example = [1, 2, 3]
print(len(example))
```

## Summary

- The first idea of the chapter, in one sentence.
- The second idea.
- The third idea.
- The fourth idea.

## Exercises

{exercises}
{ADDED_SECTION}"""


def add_to_toc(toc: str, previous: str | None, entry: str) -> str:
    """`_toc.yml` with `entry` listed after the numbered part's last chapter `previous`."""
    if previous is None:
        raise ExportError("_toc.yml has no numbered part to add the chapter to")
    line = re.search(rf"^(\s*)- file: {re.escape(previous.removesuffix('.md'))}\s*$", toc, re.M)
    if not line:
        raise ExportError(f"_toc.yml does not list {previous} as `- file: ...` on a line of its own: "
                          "add the new chapter after it by hand")
    return toc[:line.end()] + f"\n{line.group(1)}- file: {entry}" + toc[line.end():]


def add_to_intro(intro: str, number: int, name: str, title: str) -> str:
    """The introduction with a numbered item linking the new chapter, at the end of its list."""
    end = intro.find(INTRO_LIST_END)
    if end < 0:
        raise ExportError(f"book/intro.md has no `{INTRO_LIST_END.strip()}` section after its list of chapters: "
                          f"link [Chapter {number}]({name}.md) from the list by hand")
    items = [int(n) for n in re.findall(r"^(\d+)\. ", intro[:end], re.M)]
    item = (max(items) + 1) if items else 1
    line = (f"{item}. **{title}.** Say in a sentence what the chapter builds. "
            f"([Chapter {number}]({name}.md))\n")
    body = intro[:end].rstrip("\n") + "\n" + line
    return body + intro[end:]


def new_chapter(root: Path, number: int, slug: str, title: str, step: str = "prediction") -> list[Path]:
    """Write chapter `number`; return the files written or changed."""
    numbered = numbered_chapters(root)
    if number != len(numbered) + 1:
        raise ExportError(f"the book has chapters 1 to {len(numbered)}: a new chapter is number {len(numbered) + 1} "
                          "(to put one between two others, renumber the files after it by hand)")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", slug):
        raise ExportError(f"'{slug}' cannot name a chapter file: use lower case letters, digits and _ "
                          "(book/NN_<slug>.md)")
    if not title.strip() or "\n" in title:
        raise ExportError("give the chapter a title of one line")
    name = f"{number:02d}_{slug}"
    path = root / "book" / f"{name}.md"
    if path.exists():
        raise ExportError(f"{path.relative_to(root).as_posix()} exists already")
    toc, intro = root / "_toc.yml", root / "book" / "intro.md"
    new_toc = add_to_toc(toc.read_text(encoding="utf-8"), numbered[-1] if numbered else None, f"book/{name}")
    new_intro = add_to_intro(intro.read_text(encoding="utf-8"), number, name, title.strip())
    write_atomic(path, chapter_text(number, title.strip(), step))
    write_atomic(toc, new_toc)
    write_atomic(intro, new_intro)
    return [path, toc, intro]
