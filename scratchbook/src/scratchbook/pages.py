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


# A value that is numbers only: digits, signs, points, %, ±, separators, parentheses, and "to" or
# "and" between numbers ("+0.52 (-0.16 to +1.20)", "0.75 and 0.61", "22,500").
NUMBERS_ONLY = re.compile(r"[-+−\d.,%± ()]*(?:(?<=\d) (?:to|and) (?=[-+−\d])[-+−\d.,%± ()]*)*")


def chinese_numbers(text: str) -> str:
    """A value of numbers (`NUMBERS_ONLY`) as a Chinese sentence writes it: no thousands
    separator (25000), 到 for "to", 和 for "and", 、 between the items of a list, full-width
    parentheses around words (an interval: "+0.52（-0.16 到 +1.20）"). Any other text is
    returned as it is.

    Described in the appendix "Running it for real"; the Chinese edition's typography is
    locales/zh_CN/GLOSSARY.md's."""
    if not NUMBERS_ONLY.fullmatch(text):
        return text
    chinese = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    chinese = chinese.replace(" to ", " 到 ").replace(" and ", " 和 ")
    chinese = re.sub(r", (?![^()]*\))", "、", chinese)  # a list, not inside an interval
    if "到" in chinese or "和" in chinese:
        chinese = re.sub(r" ?\(([^()]*)\)", r"（\1）", chinese)
    return chinese


def chinese_spacing(text: str) -> str:
    """`text` with the half-width space the Chinese edition puts between Chinese characters and
    Latin letters or digits ("有 1000 个标签", "而且 ELECTRA 还更差"; locales/zh_CN/GLOSSARY.md).

    Described in the appendix "Running it for real"."""
    return re.sub(r"(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9+\-−])|(?<=[A-Za-z0-9%])(?=[\u4e00-\u9fff])",
                  " ", text)


def glue_count(name: str, count: int) -> None:
    """Glue a whole number for the prose, where it is rendered as Markdown: as an English sentence
    writes it (25,000), and under `<name>_zh` as a Chinese one does (25000; locales/zh_CN/
    GLOSSARY.md).

    Described in the appendix "Running it for real"."""
    glue_md(name, f"{count:,}")
    glue_md(f"{name}_zh", f"{count}")


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
