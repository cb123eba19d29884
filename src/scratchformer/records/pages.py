"""What every chapter's page needs around its recorded results: where they are, reading one,
a Markdown table (its cells escaped where they hold tokens or generated text), a piece of text
glued into the prose.

Written by hand, not exported. Needs IPython (and MyST-NB for `glue_md`), both installed with
the book's requirements (`pip install .[book]`); it does not handle pages built outside the
repository (the records live in `book/results/`, which the package does not install).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from IPython.display import Markdown


def book_root(starts: list[Path] | None = None) -> Path:
    """The repository's root (the folder holding `_toc.yml`), found from the working directory
    or from the package when it is installed in editable mode.

    Described in the appendix "Running it for real"."""
    import scratchformer

    starts = starts or [Path.cwd(), Path(scratchformer.__file__).resolve().parent]
    root = next((p for start in starts for p in [start, *start.parents]
                 if (p / "_toc.yml").exists()), None)
    if root is None:
        raise FileNotFoundError("run this chapter inside the scratchformer repository: "
                                "its recorded results are in book/results/")
    return root


def markdown_table(header: list[str], rows: list[list[object]]) -> Markdown:
    """A Markdown table of `rows` under `header`, for a page to display.

    Described in the appendix "Running it for real"."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def glue_md(name: str, text: str) -> None:
    """Glue a piece of text for the prose, where it is rendered as Markdown.

    Described in the appendix "Running it for real"."""
    from myst_nb import glue

    glue(name, Markdown(text), display=False)


def read_record(results: Path, name: str) -> dict:
    """The JSON record `name` in the results folder `results`.

    Described in chapter 11, section "The full CPU run"; every page reads its records so."""
    path = Path(results) / name
    if not path.is_file():
        raise FileNotFoundError(f"no record at {path}: the chapter reads its recorded runs there")
    return json.loads(path.read_text())


class Code(str):
    """Text to show as code in a table cell (a token, with its spaces).

    Described in chapter 12, section "One stream, cut into windows"; chapter 13 uses it too."""


def table_cell(value: object) -> str:
    """A value as one Markdown table cell, shown as is, never read as Markdown.

    Described in chapter 12, section "One stream, cut into windows"; chapter 13 uses it too."""
    if isinstance(value, Code):
        shown = value.replace("`", "'").replace("|", "\\|").replace("\n", "↵")
        return f"`{shown}`"
    text = " ".join(str(value).split())  # a cell is one line
    return re.sub(r"([][\\`*_<>#|~])", r"\\\1", text)  # escape Markdown's marks


def escaped_table(header: list[str], rows: list[list[object]]) -> Markdown:
    """`markdown_table` with every cell escaped by `table_cell` (tokens, generated text).

    Described in chapter 12, section "One stream, cut into windows"; chapter 13 uses it too."""
    return markdown_table(header, [[table_cell(cell) for cell in row] for row in rows])
