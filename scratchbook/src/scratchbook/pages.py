"""What every chapter's page needs around its recorded results: a Markdown table (its cells
escaped where they hold tokens or generated text) and a piece of text glued into the prose.
Reading a record is `scratchbook.record.Record.read`.

Needs IPython (and MyST-NB for `glue_md`), both dependencies of this package; it does not
handle pages built outside a checkout of the book.
"""

from __future__ import annotations

import re

from IPython.display import Markdown


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
