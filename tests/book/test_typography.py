"""The Chinese edition's typography and terms (locales/zh_CN/GLOSSARY.md), in every catalogue that
exists, without building the book: a space between Chinese and Latin text, full-width
punctuation, no space beside it, no English thousands separators, the glossary's words, one form
of the exercise heads; and a translation renders its emphasis (Markdown does not close `**`
between a full-width stop and a Chinese character, and then shows the stars)."""

from __future__ import annotations


import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from support import ROOT

import translations
from book import typography

LANGUAGE = "zh_CN"
CATALOGUES = translations.catalogues(ROOT, LANGUAGE)
TERMS = typography.read_terms(ROOT / "locales" / LANGUAGE / "GLOSSARY.md")


@pytest.mark.parametrize("docname", sorted(CATALOGUES))
def test_catalogues_follow_the_editions_typography_and_glossary(docname: str) -> None:
    found = translations.typography_problems(ROOT, LANGUAGE, [CATALOGUES[docname]])
    assert not found, (f"{len(found)} places (tools/translations.py typography --fix "
                       f"{CATALOGUES[docname].relative_to(ROOT)} mends the spaces):\n" + "\n".join(found))


def rules(message: str) -> list[str]:
    return [problem.rule.split(" (")[0] for problem in typography.problems(message, TERMS)]


@pytest.mark.parametrize("message, expected", [
    # the space between Chinese and Latin text, markup included
    ("第4章", ["no space between Chinese and Latin text"] * 2),
    ("第 4 章的 `scaled_dot_product_attention` 用 $\\sqrt{d_k}$ 缩放", []),
    ("共{glue:text}`n`个", ["no space between Chinese and Latin text"] * 2),
    ("得到 {glue:text}`answer_zh` 的结果", []),  # a glued Chinese phrase
    ("用**BPE**算法", ["no space between Chinese and Latin text"] * 2),
    ("见[第 4 章](04_self_attention.md)。", []),
    ("见{numref}`fig-map`", []),  # renders 图 4.1
    ("由{cite:t}`vaswani2017attention`提出", ["no space between Chinese and Latin text"] * 2),
    ("得到 (5, 8) 的矩阵", []),  # a shape is notation
    # full-width punctuation, and no space beside it
    ("用 Mac 。", ["a space beside full-width punctuation"]),
    ("词元, 然后", ["half-width ',' in a Chinese sentence"]),
    ("两个轴(词元，特征)", ["half-width '(' in a Chinese sentence", "half-width ')' in a Chinese sentence"]),
    ("“play” + “ground”和“ Building”", []),
    ("如“Attention” {cite:p}`vaswani2017attention` 所说", []),
    # numbers
    ("共 25,000 条", ["an English thousands separator in a Chinese sentence"]),
    ("共 {glue:text}`n:,` 条", ["a glued number with English thousands separators"]),
    ("共 {glue:text}`a.md::n` 条", ["a glue from another page needs a format"]),
    ("共 25000 条，占 15%。", []),
    ("用 ... 省略", ["'...' in a Chinese sentence"]),
    # the glossary's words and forms
    ("下面的单元用热图画出词元 id", ["'下面的单元': the glossary's word is '下面的单元格'",
                                  "'热图': the glossary's word is '热力图'",
                                  "'id': the glossary's word is 'ID'"]),
    ("下面的单元格用热力图画出词元 ID；`ids` 是代码", []),
    ("高斯误差线性单元（GELU）", []),
    ("**练习1（手算）** 用", ["an exercise head is written **练习 1（手算）**。",
                           "no space between Chinese and Latin text", "a space beside full-width punctuation"]),
    ("**练习 1（手算）**。用纸和笔", []),
    ("$B$", []),  # not Chinese
])
def test_the_rules_catch_what_they_name_and_pass_the_rest(message: str, expected: list[str]) -> None:
    assert rules(message) == expected


def test_fix_spacing_adds_spaces_outside_the_markup_and_removes_those_beside_punctuation() -> None:
    assert typography.fix_spacing("第4章用**BPE**和`ids`，共{glue:text}`n`个 。") == \
        "第 4 章用 **BPE** 和 `ids`，共 {glue:text}`n` 个。"
    assert typography.fix_spacing("“ Building”和 $x$") == "“ Building”和 $x$"


def test_the_glossary_lists_the_forms_it_does_not_use() -> None:
    avoided = {term.avoid: term.use for term in TERMS}
    assert {"热图": "热力图", "电影评论": "影评", "id": "ID", "代码单元": "代码单元格"}.items() <= avoided.items()


MARKDOWN = MarkdownIt("commonmark").use(dollarmath_plugin)


def shown_stars(text: str) -> int:
    """How many `*` a Markdown text shows as text (emphasis that did not open or close)."""
    return sum(child.content.count("*") for token in MARKDOWN.parse(text) for child in token.children or []
               if child.type == "text")


@pytest.mark.parametrize("docname", sorted(CATALOGUES))
def test_translations_render_their_emphasis(docname: str) -> None:
    broken = [message.string[:100] for message in translations.read_catalogue(CATALOGUES[docname])
              if message.id and message.string and shown_stars(message.string) > shown_stars(message.id)]
    assert not broken, broken
    assert shown_stars("**词。**最直接") == 4 and shown_stars("**词**。最直接") == 0


def test_every_toggle_a_chapter_words_has_the_chinese_editions_words() -> None:
    """A chapter's own toggle words (`code_prompt_show: Show the solution`) are shown in Chinese
    on the Chinese pages (tools/book/i18n.py), so each must have its Chinese words."""
    import re

    from book.i18n import PROMPTS

    used = {match.group(1).strip() for chapter in sorted((ROOT / "book").glob("*.md"))
            for match in re.finditer(r"^\s*code_prompt_(?:show|hide):\s*(.+)$",
                                     chapter.read_text(encoding="utf-8"), re.M)}
    assert "Show the solution" in used
    missing = sorted(used - set(PROMPTS[LANGUAGE]))
    assert not missing, f"add their Chinese words to PROMPTS in tools/book/i18n.py: {missing}"
    assert all(typography.is_chinese(words) for words in PROMPTS[LANGUAGE].values())


CJK_FONTS = {"PingFang SC", "Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "Microsoft YaHei"}
LATIN_FONTS = {"Liberation Sans", "DejaVu Sans", "Arial", "Helvetica Neue", "Roboto", "Segoe UI"}


def test_chinese_pages_draw_latin_text_with_a_latin_font() -> None:
    """On a Chinese page, a CJK font listed first also draws the Latin text, and its ’ is full
    width ("couldn’ t"): every Latin font a Linux, Mac or Windows reader has comes before
    the CJK fonts, which draw only what the Latin fonts lack, and no generic family before them
    (on a page in Chinese, sans-serif is a CJK font)."""
    import re

    css = (ROOT / "_static" / "scratchformer.css").read_text(encoding="utf-8")
    rule = re.search(r'html\[lang\|="zh"\]\s*\{([^}]*)\}', css).group(1)
    stack = re.search(r"--pst-font-family-base:([^;]*);", rule).group(1)
    families = [family.strip().strip('"') for family in stack.split(",")]
    first_cjk = min(families.index(font) for font in CJK_FONTS if font in families)
    assert {"Liberation Sans", "DejaVu Sans"} <= set(families[:first_cjk]), families
    assert not {"sans-serif", "system-ui", "serif"} & set(families[:first_cjk]), families
    assert families[-1] == "sans-serif"
