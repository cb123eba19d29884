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


def glue_md(name: str, text: str, zh: str | None = None) -> None:
    """Glue a piece of text for the prose, where it is rendered as Markdown; with `zh`, the
    Chinese edition's wording of the same value too, as `<name>_zh`.

    Described in the appendix "Running it for real"."""
    from myst_nb import glue

    glue(name, Markdown(text), display=False)
    if zh is not None:
        glue(f"{name}_zh", Markdown(zh), display=False)


NUMBER = r"[+-]?\d+(?:\.\d+)?%?"
# The forms the records' figures take in English, and the same figures in a Chinese sentence.
CHINESE_FORMS = [
    (re.compile(rf"({NUMBER}) points \((\d+)% interval ({NUMBER}) to ({NUMBER}), (\d+) "
                r"degrees? of freedom\)"), r"\1 个百分点（\2% 区间为 \3 到 \4，自由度为 \5）"),
    (re.compile(rf"({NUMBER}) points \((\d+)% bootstrap interval ({NUMBER}) to ({NUMBER})\)"),
     r"\1 个百分点（\2% 自助法区间为 \3 到 \4）"),
    (re.compile(r", an interval that holds zero"), "，区间包含零"),
    (re.compile(rf"(\d+) of (\d+) \(({NUMBER}), (\d+)% interval ({NUMBER}) to ({NUMBER})\)"),
     r"\2 个中的 \1 个（\3，\4% 区间为 \5 到 \6）"),
    (re.compile(r"\b(\d+) of (?:the )?(\d+)\b"), r"\2 个中的 \1 个"),
    (re.compile(rf"({NUMBER}) for (\d+)(, )?"), lambda m: f"{m[2]} 句为 {m[1]}"
     + ("；" if m[3] else "")),
    (re.compile(rf"^({NUMBER}) (to|and) ({NUMBER})$"),
     lambda m: f"{m[1]} {'到' if m[2] == 'to' else '和'} {m[3]}"),
]


def in_chinese(text: str) -> str:
    """A glued figure as a Chinese sentence holds it: an interval in points, a count out of a
    total, a range, a pair of numbers, each in the edition's words (`-0.65 个百分点（95% 区间为
    -1.01 到 -0.29，自由度为 2）`, `24 个中的 23 个`), and every number without the English
    thousands separator (25000, not 25,000). Text in no such form is returned as it is (less
    the separators): a test of the built pages finds an English word left in a Chinese
    paragraph.

    Described in the appendix "Running it for real"."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    for pattern, chinese in CHINESE_FORMS:
        text = pattern.sub(chinese, text)
    return text


def glue_figures(figures: dict[str, str]) -> None:
    """Glue each of a record's figures (`glue_md`), and its Chinese form (`in_chinese`) as
    `<name>_zh` where that differs, unless `figures` words it in Chinese itself (a
    `<name>_zh` of its own, glued as it is).

    Described in the appendix "Running it for real"."""
    for name, text in figures.items():
        chinese = in_chinese(text)
        worded = f"{name}_zh" in figures
        glue_md(name, text, chinese if chinese != text and not worded else None)


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
