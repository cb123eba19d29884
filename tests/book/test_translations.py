"""The Chinese edition: its catalogues are complete and keep the English markup; built (with the
English one, as `make book` builds both), every translated page shows the English page's glued
values, links to the same page in English, keeps the English sections' ids, and nothing is
left to translate; the untranslated pages say so; the search index knows Chinese words.

A scratch book checks the glue of a translated paragraph on its own, in seconds: a
`{glue:text}` role in a translation used to render empty ("No key 'w' found in glue data for
this document").
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from support import ROOT, ZH_DIR, book_environment
from support.pages import book_pages

import translations

LANGUAGE = "zh_CN"
CATALOGUES = translations.catalogues(ROOT, LANGUAGE)
TRANSLATED_PAGES = [f"{docname}.html" for docname in CATALOGUES]
UNTRANSLATED_NOTICE = "本页尚未译成中文，以下是英文原文。"

# Markup a translation keeps verbatim, found in this order (each is taken out of the text before
# the next is looked for): roles (glue, citations, references), formulas, code spans, link
# targets, bare links.
KEPT = [
    re.compile(r"\{[a-z:]+\}`[^`]*`"),
    re.compile(r"\$\$.+?\$\$|\$[^$]+\$", re.S),
    re.compile(r"`[^`]+`"),
    re.compile(r"\]\(([^)]+)\)"),
    re.compile(r"<https?://[^>]+>"),
]


# A cross-reference's own words are prose (`{ref}`the source's <sources>``): only its target is kept.
LINK_WORDS = re.compile(r"^(\{[a-z:]+\}`)[^`<]*(<[^>`]+>`)$")


def kept_markup(text: str) -> Counter:
    found: Counter = Counter()
    for pattern in KEPT:
        found.update(LINK_WORDS.sub(r"\1\2", match.group(0)) for match in pattern.finditer(text))
        text = pattern.sub(" ", text)
    return found


def without_thousands(role: str) -> str:
    """A glue role without the `,` of its format: `{glue:text}`n:,`` -> `{glue:text}`n``
    (`{glue:text}`n:d`` too: a glue from another page needs a format, `page.md::n:d`)."""
    match = re.fullmatch(r"(\{glue:text\}`[^`]*?)(:[^:`]*)`", role)
    if not match:
        return role
    spec = match.group(2).replace(",", "")
    return f"{match.group(1)}{spec if spec not in (':', ':d') else ''}`"


def without_separators(value: str) -> str:
    """A glued number without its thousands separators: a Chinese sentence writes 25000."""
    return re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", value)


def test_the_chinese_edition_translates_the_intro_and_the_first_chapters() -> None:
    assert {"book/intro", "book/04_self_attention"} <= set(CATALOGUES), sorted(CATALOGUES)


@pytest.mark.parametrize("docname", sorted(CATALOGUES))
def test_every_message_of_a_translated_page_is_translated(docname: str) -> None:
    catalogue = translations.read_catalogue(CATALOGUES[docname])
    fuzzy = [m.id for m in catalogue if m.id and m.fuzzy]
    empty = [m.id for m in catalogue if m.id and not m.string]
    assert not fuzzy and not empty, (
        f"{docname}: {len(fuzzy)} fuzzy and {len(empty)} untranslated messages (make translations "
        f"lists them): {(fuzzy + empty)[:5]}")


@pytest.mark.parametrize("docname", sorted(CATALOGUES))
def test_translations_keep_glue_math_code_and_links_verbatim(docname: str) -> None:
    """The numbers come from the glue roles: a translation must keep each of them (and the
    formulas, code and link targets) exactly. A glued English phrase may be replaced by the
    chapter's Chinese wording of the same fact, `<key>_zh` (as text or Markdown); a
    cross-reference's words are translated, its target kept; a translation may add a code span
    or a formula of its own (a name or a symbol the Chinese sentence needs), never a role."""
    changed = []
    for message in translations.read_catalogue(CATALOGUES[docname]):
        if not message.id or not message.string:
            continue
        english, chinese = kept_markup(message.id), kept_markup(message.string)
        # A Chinese sentence writes 25000, not 25,000: a glued number may drop its format's `,`.
        english, chinese = (Counter({without_thousands(item): count for item, count in found.items()})
                            for found in (english, chinese))
        for role in list(chinese):
            match = re.fullmatch(r"\{glue:(\w+)\}`(\w+)_zh(:[^`]*)?`", role)
            if match:  # its Chinese wording may be Markdown (words in italics) where the English is text
                kind, key, spec = match.groups()
                roles = [f"{{glue:{k}}}`{key}{spec or ''}`" for k in (kind, "text", "md")]
                english[next((r for r in roles if english[r] > 0), roles[0])] -= chinese.pop(role)
        lost, added = english - chinese, chinese - english
        if lost or any(item.startswith("{") for item in added):
            changed.append(f"{message.id[:80]!r}: lost {sorted((english - chinese).elements())}, "
                           f"added {sorted((chinese - english).elements())}")
    assert not changed, "\n".join(changed)


def test_the_package_reference_keeps_its_generated_listing_out_of_the_catalogue() -> None:
    """The reference's modules (the sections a `py:module` directive opens, generated from the
    package) stay in English in every edition, like the lists that close the chapters: the
    page's catalogue holds only its own prose, not a message per docstring."""
    from docutils import nodes

    from book.i18n_glue import in_module_reference

    module = nodes.section("", nodes.title("", "scratchformer.nn.attention"),
                           nodes.target("", "", ids=["module-scratchformer.nn.attention"]))
    docstring = nodes.paragraph("", "Attention, as chapter 4 builds it.")
    module += docstring
    intro = nodes.paragraph("", "Every name the chapters export.")
    page = nodes.section("", nodes.title("", "Package reference"), intro, module)
    assert in_module_reference(docstring) and in_module_reference(module[0])
    assert not in_module_reference(intro) and not in_module_reference(page[0])
    if "book/reference" in CATALOGUES:
        prose = " ".join((ROOT / "book" / "reference.md").read_text(encoding="utf-8").split())
        foreign = [m.id for m in translations.read_catalogue(CATALOGUES["book/reference"])
                   if m.id and " ".join(m.id.split()) not in prose]
        assert not foreign, foreign[:5]


def test_glossary_is_linked_from_the_readme() -> None:
    glossary = ROOT / "locales" / LANGUAGE / "GLOSSARY.md"
    assert glossary.is_file()
    assert "locales/zh_CN/GLOSSARY.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    rows = [line for line in glossary.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    assert any("词元" in row for row in rows) and any("自注意力" in row for row in rows)


class PageParser(HTMLParser):
    """Glued values by key, section ids and the language link of one built page."""

    def __init__(self) -> None:
        super().__init__()
        self.glued: dict[str, list[str]] = {}
        self.sections: list[str] = []
        self.language_link: str | None = None
        self.open_glue: list[list] = []  # [key, depth, text parts]
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = (values.get("class") or "").split()
        if tag not in ("br", "img", "meta", "link", "input", "hr", "wbr"):
            self.depth += 1
        if tag == "section" and values.get("id"):
            self.sections.append(values["id"])
        if tag == "a" and "language-switch-link" in classes:
            self.language_link = values.get("href")
        keys = [c.removeprefix("glue-key-") for c in classes if c.startswith("glue-key-")]
        if keys and not self.open_glue:
            self.open_glue.append([keys[0], self.depth, []])

    def handle_endtag(self, tag: str) -> None:
        if self.open_glue and self.depth == self.open_glue[-1][1]:
            key, _, parts = self.open_glue.pop()
            self.glued.setdefault(key, []).append(" ".join("".join(parts).split()))
        if tag not in ("br", "img", "meta", "link", "input", "hr", "wbr"):
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.open_glue:
            self.open_glue[-1][2].append(data)


def parsed(path: Path) -> PageParser:
    parser = PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.mark.book
@pytest.mark.parametrize("page", TRANSLATED_PAGES)
def test_translated_pages_show_the_english_pages_glued_values(html_dir: Path, page: str) -> None:
    # the same numbers, which a Chinese sentence writes without thousands separators
    english, chinese = ({key: [without_separators(value) for value in values] for key, values in glued.items()}
                        for glued in (parsed(html_dir / page).glued, parsed(html_dir / ZH_DIR / page).glued))
    problems = []
    for key, values in english.items():
        if f"{key}_zh" in chinese:  # the same fact in the chapter's Chinese words
            if len(chinese[f"{key}_zh"]) != len(values) or not all(chinese[f"{key}_zh"]):
                problems.append(f"{key}_zh: {chinese[f'{key}_zh']} for {values}")
        elif sorted(chinese.get(key, [])) != sorted(values):
            problems.append(f"{key}: {chinese.get(key, [])} on the Chinese page, {values} on the English")
    extra = [key for key in chinese if key not in english and not (key.endswith("_zh") and key[:-3] in english)]
    assert not problems and not extra, "\n".join(problems + [f"only on the Chinese page: {extra}"])
    source = (ROOT / page).with_suffix(".md").read_text(encoding="utf-8")
    assert sum(map(len, english.values())) > 0 or "{glue" not in source  # the parser found them


@pytest.mark.book
def test_nothing_is_left_to_translate_on_the_translated_pages(html_dir: Path) -> None:
    """What the build found on the translated pages that their catalogues do not translate
    (an English edit not yet in the catalogues: `make translations`)."""
    report = json.loads((ROOT / "_build" / "zh" / "translation-report.json").read_text(encoding="utf-8"))
    assert sorted(report) == sorted(CATALOGUES)
    pending = {docname: [f"{m['state']}: {m['message'][:80]}" for m in messages]
               for docname, messages in report.items() if messages}
    assert not pending, json.dumps(pending, ensure_ascii=False, indent=1)


@pytest.mark.book
@pytest.mark.parametrize("page", book_pages())
def test_each_page_links_to_the_same_page_in_the_other_language(html_dir: Path, page: str) -> None:
    english, chinese = html_dir / page, html_dir / ZH_DIR / page
    to_chinese, to_english = parsed(english).language_link, parsed(chinese).language_link
    assert to_chinese and (english.parent / to_chinese).resolve() == chinese.resolve(), to_chinese
    assert to_english and (chinese.parent / to_english).resolve() == english.resolve(), to_english


@pytest.mark.book
@pytest.mark.parametrize("page", book_pages())
def test_sections_have_the_same_ids_in_both_languages(html_dir: Path, page: str) -> None:
    """So that the language link can take a reader to the section they are reading."""
    assert parsed(html_dir / ZH_DIR / page).sections == parsed(html_dir / page).sections


@pytest.mark.book
@pytest.mark.parametrize("page", book_pages())
def test_only_untranslated_pages_say_they_are_in_english(html_dir: Path, page: str) -> None:
    source = (html_dir / ZH_DIR / page).read_text(encoding="utf-8")
    assert '<html lang="zh-CN"' in source
    assert (UNTRANSLATED_NOTICE in source) == (page not in TRANSLATED_PAGES), page


@pytest.mark.book
def test_the_chinese_search_index_holds_chinese_words(html_dir: Path) -> None:
    index = (html_dir / ZH_DIR / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(index[index.index("(") + 1:index.rindex(")")])["terms"]
    # the glossary's terms whole (tools/translations.py gives jieba the glossary), and their parts
    assert {"自注意力", "注意力", "词元", "嵌入", "位置编码", "多头注意力"} <= set(terms), (
        [t for t in terms if re.search(r"[\u4e00-\u9fff]", t)][:40])


def scratch_book(tmp_path: Path) -> Path:
    """Two pages that glue a number and a phrase; a Chinese catalogue for the first."""
    root = tmp_path / "scratch"
    (root / "book").mkdir(parents=True)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    (root / "_config.yml").write_text(yaml.safe_dump({
        "title": "scratch",
        "only_build_toc_files": True,
        "exclude_patterns": ["_build"],
        "execute": config["execute"],
        "parse": config["parse"],
        "sphinx": {"local_extensions": {"book.i18n": str(ROOT / "tools")},
                   "config": {key: value for key, value in config["sphinx"]["config"].items()
                              if key.startswith(("gettext", "locale", "nb_"))}},
    }), encoding="utf-8")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                   "  - file: book/first\n  - file: book/second\n  - file: book/notes\n")
    # a page that runs nothing and glues from another page, as book/corrections.md does
    (root / "book" / "notes.md").write_text("# Notes\n\nThe first page's weight is {glue:text}`first.md::w:.2f`.\n")
    (root / "book" / "intro.md").write_text("# Intro\n")
    page = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
            "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
            "# {title}\n\n```{{code-cell}} ipython3\nfrom IPython.display import Markdown\n"
            "from myst_nb import glue\nglue('w', 3.14159, display=False)\n"
            "glue('m', Markdown('**all** of them'), display=False)\n```\n\n"
            # one execution, an output for each edition (a figure drawn with each edition's labels)
            "```{{code-cell}} ipython3\nfrom IPython.display import display\n"
            "display(Markdown('drawn for ' + 'English'), metadata={{'edition': 'en'}})\n"
            "display(Markdown('drawn for ' + 'Chinese'), metadata={{'edition': 'zh_CN'}})\n```\n\n"
            "The weight is {{glue:text}}`w:.3f` and we got {{glue:md}}`m`, with $x^2$.\n\n"
            "## A section\n\nPlain text.\n")
    (root / "book" / "first.md").write_text(page.format(title="First"))
    (root / "book" / "second.md").write_text(page.format(title="Second"))
    return root


@pytest.mark.book
@pytest.mark.own_build
def test_a_translated_paragraph_glues_the_english_pages_values(tmp_path: Path) -> None:
    root = scratch_book(tmp_path)
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    english = subprocess.run([str(jupyter_book), "build", "--warningiserror", "--keep-going", str(root)],
                             capture_output=True, text=True, cwd=root, env=book_environment())
    assert english.returncode == 0, english.stdout[-3000:] + english.stderr[-3000:]
    needed, _ = translations.update(root, LANGUAGE, ["book/first", "book/notes"])
    assert [message.msgid for message in needed] == [
        "First", "The weight is {glue:text}`w:.3f` and we got {glue:md}`m`, with $x^2$.",
        "A section", "Plain text.", "Notes", "The first page's weight is {glue:text}`first.md::w:.2f`."]
    for page, translated in {
        "first": {"First": "第一页", "A section": "一节",
                  needed[1].msgid: "权重是 {glue:text}`w:.3f`，得到的是 {glue:md}`m`，还有 $x^2$。"},
        "notes": {"Notes": "注释", needed[5].msgid: "第一页的权重是 {glue:text}`first.md::w:.2f`。"},
    }.items():
        path = root / "locales" / LANGUAGE / "LC_MESSAGES" / "book" / f"{page}.po"
        catalogue = translations.read_catalogue(path)
        for message, text in translated.items():
            catalogue[message].string = text
        translations.write_catalogue(path, catalogue)
    assert translations.build(root, LANGUAGE) == 0
    first = (root / "_build" / "html" / "zh" / "book" / "first.html").read_text(encoding="utf-8")
    english_first = (root / "_build" / "html" / "book" / "first.html").read_text(encoding="utf-8")
    assert "drawn for English" in english_first and "drawn for Chinese" not in english_first
    assert "drawn for Chinese" in first and "drawn for English" not in first
    assert re.search(r'权重是 <span class="pasted-text glue-key-w">3.142</span>，得到的是 '
                     r'<span class="pasted-markdown glue-key-m"><strong>all</strong> of them</span>', first), first
    notes = (root / "_build" / "html" / "zh" / "book" / "notes.html").read_text(encoding="utf-8")
    assert '第一页的权重是 <span class="pasted-text glue-key-w">3.14</span>。' in notes, notes
    report = json.loads((root / "_build" / "zh" / "translation-report.json").read_text(encoding="utf-8"))
    assert report == {"book/first": [{"message": "Plain text.", "state": "untranslated"}], "book/notes": []}
    second = (root / "_build" / "html" / "zh" / "book" / "second.html").read_text(encoding="utf-8")
    assert UNTRANSLATED_NOTICE in second and 'class="pasted-text glue-key-w">3.142<' in second


@pytest.mark.book
@pytest.mark.parametrize("page", TRANSLATED_PAGES)
def test_translated_prose_shows_no_markup(html_dir: Path, page: str) -> None:
    """Markdown that a translation broke (emphasis next to Chinese punctuation, an unclosed code
    span, a mangled role) shows its syntax on the page."""
    source = (html_dir / ZH_DIR / page).read_text(encoding="utf-8")
    prose = re.sub(r"<(pre|code|script|style|math)\b.*?</\1>", " ", source, flags=re.S)
    prose = re.sub(r'<dt class="sig[ "].*?</dt>', " ", prose, flags=re.S)  # the reference's signatures
    prose = re.sub(r'<span class="math[^"]*">.*?</span>', " ", prose, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", prose)
    shown = [marker for marker in ("**", "{glue", "{cite", "](", "``") if marker in text]
    assert not shown, [text[max(0, text.index(m) - 60):text.index(m) + 60] for m in shown]


def fill(root: Path, page: str, translated: dict[str, str]) -> Path:
    """Translate messages of `page`'s catalogue (msgid -> text), as a translator does."""
    path = root / "locales" / LANGUAGE / "LC_MESSAGES" / "book" / f"{page}.po"
    catalogue = translations.read_catalogue(path)
    for message in catalogue:
        if message.id:
            message.string = translated.get(message.id, f"（{message.id}）")
            message.flags.discard("fuzzy")
    translations.write_catalogue(path, catalogue)
    return path


def test_a_changed_english_sentence_of_a_translated_page_is_named_until_it_is_translated(tmp_path: Path) -> None:
    """The trap: an English sentence of a translated page changed, and every fast check passed at
    100%. `make check` (translations.py check) names the page and the message; `make translations`
    keeps the old English beside the new (`#| msgid`), rewrites only that entry of only that
    catalogue, and lists the message whole, with its changed words."""
    root = scratch_book(tmp_path)
    translations.update(root, LANGUAGE, ["book/first", "book/notes"])
    first = fill(root, "first", {"Plain text.": "纯文本。"})
    notes = fill(root, "notes", {})
    # A translator's own line breaks, which babel would wrap otherwise: they must survive.
    first.write_text(first.read_text(encoding="utf-8").replace('msgstr "纯文本。"', 'msgstr ""\n"纯"\n"文本。"'),
                     encoding="utf-8")
    assert translations.stale(root, LANGUAGE) == []

    def check() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "tools" / "translations.py"), "--root", str(root), "check"],
                              capture_output=True, text=True)

    assert check().returncode == 0
    page = root / "book" / "first.md"
    page.write_text(page.read_text(encoding="utf-8").replace("## A section\n", "## A new section\n"),
                    encoding="utf-8")
    (stale,) = translations.stale(root, LANGUAGE)
    assert (stale.docname, stale.state, stale.msgid) == ("book/first", "missing", "A new section")
    result = check()
    assert result.returncode == 1
    assert ("locales/zh_CN/LC_MESSAGES/book/first.po: missing (English the catalogue does not have yet: `make "
            "translations` adds it):\n      A new section") in result.stderr, result.stderr
    assert "book/first " in result.stdout and "1 new in the English page" in result.stdout, result.stdout

    before = {path: path.read_text(encoding="utf-8") for path in (first, notes)}
    needed, written = translations.update(root, LANGUAGE, [])
    assert written == [first], "only the catalogue whose page changed is written"
    assert notes.read_text(encoding="utf-8") == before[notes]
    after = first.read_text(encoding="utf-8")
    assert '#, fuzzy\n#| msgid "A section"\nmsgid "A new section"\nmsgstr "（A section）"' in after, after
    assert 'msgstr ""\n"纯"\n"文本。"' in after, "an entry that did not change keeps its text"
    header = before[first].split("\n\n")[0]
    assert after.startswith(header + "\n\n"), "the header (its POT-Creation-Date) stays as it was"
    assert [(m.state, m.msgid, m.previous) for m in needed] == [("fuzzy", "A new section", "A section")]
    assert translations.listing(root, LANGUAGE, needed) == [
        "locales/zh_CN/LC_MESSAGES/book/first.po: fuzzy (its English changed since it was translated: [-removed-] "
        "and {+added+} words):\n      A {+new+} section"]
    (stale,) = translations.stale(root, LANGUAGE)
    assert (stale.state, stale.previous) == ("fuzzy", "A section"), "the old English is read back"
    assert translations.update(root, LANGUAGE, [])[1] == [], "a second run writes nothing"
    fill(root, "first", {"Plain text.": "纯文本。", "A new section": "新的一节"})
    assert translations.stale(root, LANGUAGE) == [] and check().returncode == 0
