"""The Chinese edition beside the English one: its own notebooks (Markdown from the catalogues, the
same code) behind its pages' buttons and "Suggest edit" on its catalogues; one `_static` (and one
`_images`) for both sites; each edition's own figures from the one execution; the toggles of its
folded cells in Chinese; no English glued into a Chinese sentence of chapter 13 and the appendices.

The unit tests run in seconds without a build; the tests marked `book` read `make book`'s site."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from support import ROOT, ZH_DIR
from support.pages import book_pages

import translations
from book import notebooks

LANGUAGE = "zh_CN"
CATALOGUES = translations.catalogues(ROOT, LANGUAGE)
REPOSITORY = "https://github.com/scratchformer/scratchformer"


# -- the Chinese notebooks ---------------------------------------------------------------------

MARKDOWN = """(label)=
## A heading

A paragraph that
spans two lines, with `code` and $x$.

- An item.
- Another item
  on two lines.

| name | meaning |
| --- | --- |
| `T` | number of tokens |

```{note}
Inside a note.
```

A term of two words
: Its definition,
  on two lines.

Nobody translated this."""

CATALOGUE = {
    "A heading": "一个标题",
    "A paragraph that spans two lines, with `code` and $x$.": "一段跨两行的文字，含 `code` 和 $x$。",
    "An item.": "一项。", "Another item on two lines.": "另一项，占两行。",
    "name": "名称", "number of tokens": "词元数",
    "Inside a note.": "注释里的文字。",
    "A term of two words": "两个词的术语", "Its definition, on two lines.": "它的定义，占两行。",
}


def test_a_markdown_cell_is_translated_message_by_message_and_keeps_its_markup() -> None:
    assert notebooks.translated_markdown(MARKDOWN, CATALOGUE.get) == """(label)=
## 一个标题

一段跨两行的文字，含 `code` 和 $x$。

- 一项。
- 另一项，占两行。

| 名称 | meaning |
| --- | --- |
| `T` | 词元数 |

```{note}
注释里的文字。
```

两个词的术语
: 它的定义，占两行。

Nobody translated this."""


@pytest.mark.parametrize("docname", [name for name in sorted(CATALOGUES)
                                     if (ROOT / f"{name}.md").is_file() and "kernelspec" in
                                     (ROOT / f"{name}.md").read_text(encoding="utf-8")[:400]])
def test_a_translated_chapters_notebook_has_its_code_and_chinese_prose(docname: str) -> None:
    chapter = ROOT / f"{docname}.md"
    english = notebooks.chapter_notebook(chapter, REPOSITORY)
    chinese = notebooks.chapter_notebook(chapter, REPOSITORY,
                                         translate=notebooks.catalogue_translations(CATALOGUES[docname]))
    assert [(c.cell_type, c.source) for c in chinese.cells if c.cell_type == "code"] == \
        [(c.cell_type, c.source) for c in english.cells if c.cell_type == "code"]
    prose = [c.source for c in chinese.cells if c.cell_type == "markdown"]
    assert len(prose) == sum(c.cell_type == "markdown" for c in english.cells)
    # every line of prose is Chinese, or carries no English sentence (a formula, a label, a table rule)
    english_lines = [line for cell in prose for line in cell.split("\n")
                     if not re.search(r"[\u4e00-\u9fff]", line)
                     and re.search(r"[A-Za-z]{3,} [a-z]{3,} [a-z]{3,}",
                                   re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)", "", line))]
    assert not english_lines, english_lines[:5]
    # the list of what the page added (where it has one), in Chinese, its roles made plain text
    # for Jupyter
    additions = [cell for cell in prose if re.search("本(章|附录)向包中添加的内容", cell)]
    expected = int("{package-additions}" in chapter.read_text(encoding="utf-8"))
    assert len(additions) == expected and all("{py:" not in cell for cell in additions), additions


# -- one _static -------------------------------------------------------------------------------

def test_a_translated_site_points_at_the_english_sites_copies_of_the_same_files(tmp_path: Path) -> None:
    english, built = tmp_path / "html", tmp_path / "zh-build"
    for site, theme, language in ((english, "body{}", "en"), (built, "body{}", "zh")):
        (site / "_static").mkdir(parents=True)
        (site / "_static" / "theme.css").write_text(theme)
        (site / "_static" / "documentation_options.js").write_text(f"LANGUAGE: '{language}'")
    (built / "book").mkdir()
    page = built / "book" / "page.html"
    page.write_text('<link href="../_static/theme.css?v=1"><script src="../_static/documentation_options.js">'
                    '</script><img src="../_static/theme.css"><a href="../other_static/theme.css">')
    shared = translations.share_with_english(built, english, "_build/html/zh")
    assert shared == {Path("_static/theme.css")}
    pointed = page.read_text()
    assert pointed == ('<link href="../../_static/theme.css?v=1"><script src="../_static/documentation_options.js">'
                       '</script><img src="../../_static/theme.css"><a href="../other_static/theme.css">')
    translations.share_with_english(built, english, "_build/html/zh")
    assert page.read_text() == pointed, "a page pointed once is not pointed again"
    site = tmp_path / "site"
    translations.mirror(built, site, leave_out=shared)
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()) == \
        ["_static/documentation_options.js", "book/page.html"]


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.buttons: dict[str, str] = {}
        self.prompts: list[str] = []
        self._prompt = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for key in ("src", "href"):
            if values.get(key) and (tag, key) in {("img", "src"), ("script", "src"), ("link", "href"), ("a", "href")}:
                self.links.append(values[key])
        classes = (values.get("class") or "").split()
        if tag == "a" and values.get("href"):
            for label in ("download-notebook-button", "source-edit-button"):
                if label in classes:
                    self.buttons[label] = values["href"]
            if "btn-launch" in classes or "launch" in (values.get("title") or "").lower():
                self.buttons.setdefault(values.get("title") or "", values["href"])
        self._prompt = tag == "p" and "admonition-title" in classes

    def handle_data(self, data: str) -> None:
        if self._prompt and data.strip():
            self.prompts.append(data.strip())
            self._prompt = False


def links(page: Path) -> Links:
    parser = Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def size(folder: Path, pages: bool) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*")
               if path.is_file() and (path.suffix == ".html") == pages)


@pytest.mark.book
def test_the_chinese_site_adds_its_pages_not_a_second_copy_of_the_static_files(html_dir: Path) -> None:
    chinese = html_dir / ZH_DIR
    static = sum(path.stat().st_size for path in (chinese / "_static").rglob("*") if path.is_file())
    assert static < 200_000, f"_build/html/zh/_static holds {static} bytes: the English site's copies are shared"
    assert not (chinese / "_static" / "mathjax").exists() and not (chinese / "_static" / "ort").exists()
    beyond_pages = size(chinese, pages=False)
    assert beyond_pages < 10_000_000, f"the Chinese site holds {beyond_pages} bytes besides its pages"


@pytest.mark.book
@pytest.mark.parametrize("page", book_pages())
def test_every_file_a_chinese_page_uses_exists(html_dir: Path, page: str) -> None:
    source = html_dir / ZH_DIR / page
    missing = []
    for link in links(source).links:
        target = link.split("#")[0].split("?")[0]
        if not target or re.match(r"^[a-z]+:", target):
            continue  # the same page, or another site
        if not (source.parent / target).resolve().exists():
            missing.append(link)
    assert not missing, missing


# -- notebooks and "Suggest edit" ------------------------------------------------------------

@pytest.mark.book
@pytest.mark.parametrize("page", book_pages())
def test_chinese_pages_buttons_open_the_chinese_notebook_and_edit_the_catalogue(html_dir: Path, page: str) -> None:
    docname = page.removesuffix(".html")
    chinese, english = links(html_dir / ZH_DIR / page), links(html_dir / page)
    download = chinese.buttons.get("download-notebook-button")
    if download is None:
        assert "download-notebook-button" not in english.buttons
        return  # a page that is not a notebook
    notebook = (html_dir / ZH_DIR / page).parent / download
    assert notebook.resolve().is_file(), download
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    english_cells = json.loads(((html_dir / page).parent / english.buttons["download-notebook-button"])
                               .read_text(encoding="utf-8"))["cells"]
    code = [cell["source"] for cell in cells if cell["cell_type"] == "code"]
    assert code == [cell["source"] for cell in english_cells if cell["cell_type"] == "code"]
    prose = "".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    edit = chinese.buttons.get("source-edit-button", "")
    if docname in CATALOGUES:
        assert notebook.resolve().is_relative_to((html_dir / ZH_DIR).resolve())
        assert re.search(r"[\u4e00-\u9fff]", prose)
        assert edit.endswith(f"/locales/{LANGUAGE}/LC_MESSAGES/{docname}.po"), edit
        source = (html_dir / ZH_DIR / page).read_text(encoding="utf-8")
        assert f"/blob/gh-pages/{ZH_DIR}/_notebooks/{docname}.ipynb" in source  # Colab
        assert f"urlpath=lab/tree/{ZH_DIR}/_notebooks/{docname}.ipynb" in source  # Binder
    else:  # the English text, so the English notebook and source
        assert notebook.resolve() == ((html_dir / page).parent / english.buttons["download-notebook-button"]).resolve()
        assert edit.endswith(f"/{docname}.md"), edit


# -- toggles and figures ------------------------------------------------------------------------

@pytest.mark.book
@pytest.mark.parametrize("page", book_pages())
def test_chinese_pages_toggles_speak_chinese(html_dir: Path, page: str) -> None:
    prompts = links(html_dir / ZH_DIR / page).prompts
    english = [prompt for prompt in prompts if not re.search(r"[\u4e00-\u9fff]", prompt)]
    assert not english, english
    assert len(prompts) == len(links(html_dir / page).prompts)


def has_chinese_font() -> bool:
    found = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True, check=False)
    return bool(found.stdout.strip())


@pytest.mark.book
def test_each_edition_shows_its_own_chapter_4_figures(html_dir: Path) -> None:
    """The phone book's heatmap and the two 苹果 bar chart are drawn twice by one execution, with
    English and with Chinese labels; each edition shows its own (tools/book/i18n.py)."""
    page = "book/04_self_attention.html"
    english = [link for link in links(html_dir / page).links if "_images/" in link]
    chinese = [link for link in links(html_dir / ZH_DIR / page).links if "_images/" in link]
    assert len(english) == len(chinese)
    own = [link for link in chinese if "/" + link.split("_images/")[1] not in
           {"/" + other.split("_images/")[1] for other in english}]
    if has_chinese_font():
        assert len(own) == 3, own  # the two figures and the chapter's map
        assert all((html_dir / ZH_DIR / "book" / link).resolve().is_file() for link in own)
        assert all(not link.startswith("../../") for link in own), "the Chinese figures are the Chinese site's own"
    else:
        assert not own, "without a Chinese font both editions show the figures with English labels"


def map_image(page: Path) -> str:
    """The `src` of the page's map (its image of class pipeline-map)."""
    found = re.search(r'<img[^>]*class="[^"]*pipeline-map[^"]*"[^>]*>', page.read_text(encoding="utf-8"))
    assert found, f"{page}: no map"
    return re.search(r'src="([^"]+)"', found.group(0)).group(1)


@pytest.mark.book
@pytest.mark.parametrize("page", [page for page in book_pages() if re.match(r"book/\d\d_", page)])
def test_each_edition_opens_a_chapter_with_its_own_map(html_dir: Path, page: str) -> None:
    """The map every chapter opens with is drawn in Chinese for the Chinese edition
    (`scratchbook.diagrams.pipeline_map(..., here_zh)`), from the same execution."""
    english = map_image(html_dir / page).split("_images/")[1]
    chinese = map_image(html_dir / ZH_DIR / page)
    if has_chinese_font():
        assert chinese.split("_images/")[1] != english and not chinese.startswith("../../"), chinese
        assert (html_dir / ZH_DIR / page).parent.joinpath(chinese).resolve().is_file()
    else:
        assert chinese.split("_images/")[1] == english


# -- glued words in Chinese sentences -------------------------------------------------------------

CJK = re.compile(r"[\u4e00-\u9fff]")
# Latin words a Chinese sentence keeps: the names of models, methods, data and machines, and units.
KEPT_WORDS = {"NBSVM", "BERT", "GPT", "ELECTRA", "MLM", "IMDB", "LSTM", "ULMFiT", "Kneser", "Ney",
              "Transformer", "McNemar",
              "CPU", "GPU", "AMD", "EPYC", "Intel", "Xeon", "cpu", "torch", "None", "nan", "NaN",
              "KiB", "MiB"}
QUOTES = (("“", "”"), ("‘", "’"), ('"', '"'))
VOID = {"br", "img", "meta", "link", "input", "hr", "wbr"}


class GluedInParagraphs(HTMLParser):
    """Each paragraph of a page (its text) with the values glued into it: (key, its text, its
    text outside code and formulas, the words a reader reads as prose)."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[tuple[str, list[str]]] = []  # tag, classes
        self.paragraphs: list[tuple[str, list[tuple[str, str, str]]]] = []
        self.paragraph: list | None = None  # [text parts, glued values, depth]
        self.glue: list | None = None  # [key, depth, all text, prose text]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        self.open.append((tag, classes))
        if tag == "p" and self.paragraph is None:
            self.paragraph = [[], [], len(self.open)]
        pasted = {"pasted-text", "pasted-markdown"} & set(classes)
        if self.paragraph is not None and self.glue is None and pasted:
            key = next((c.removeprefix("glue-key-") for c in classes if c.startswith("glue-key-")), "?")
            self.glue = [key, len(self.open), [], []]

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or not self.open:
            return
        if self.glue is not None and len(self.open) == self.glue[1]:
            key, _, text, prose = self.glue
            self.paragraph[1].append((key, "".join(text), "".join(prose)))
            self.glue = None
        if self.paragraph is not None and len(self.open) == self.paragraph[2]:
            self.paragraphs.append(("".join(self.paragraph[0]), self.paragraph[1]))
            self.paragraph = None
        self.open.pop()

    def handle_data(self, data: str) -> None:
        if self.paragraph is None:
            return
        self.paragraph[0].append(data)
        if self.glue is not None:
            self.glue[2].append(data)
            inside = self.open[self.glue[1] - 1:]
            if not any(tag in ("code", "kbd", "em") or "math" in classes for tag, classes in inside):
                self.glue[3].append(data)


def english_in_glued_values(page: Path) -> list[str]:
    """Each value glued into a Chinese paragraph of `page` that a Chinese sentence would not
    write so: an English word of three letters or more outside code, formulas, italics and
    quoted text (a prompt the model reads, a word the sentence talks about), not a name or unit
    it keeps; a number with English thousands separators; an interval written "a to b"."""
    parser = GluedInParagraphs()
    parser.feed(page.read_text(encoding="utf-8"))
    found = []
    for text, glued in parser.paragraphs:
        if not CJK.search(text):
            continue
        for key, value, prose in glued:
            if any(f"{start}{value}{end}" in text for start, end in QUOTES):
                continue  # the word the sentence talks about, quoted as such
            prose = re.sub(r"“[^”]*”", "", prose)
            words = [w for w in re.findall(r"[A-Za-z]{3,}", prose) if w not in KEPT_WORDS]
            if words or re.search(r"\d,\d{3}(?!\d)", value) or re.search(r"\d to [-+−]?\d", value):
                found.append(f"{key}: {value!r}")
    return found


def test_the_glued_value_check_finds_english_in_a_chinese_sentence() -> None:
    """The check below reads what a reader reads: an English verdict, a number with English
    separators and an interval with "to" inside a Chinese paragraph are found, and a word
    shown bare; the same words in an English paragraph, in code, in italics, in quotes (or
    quoted as the word the sentence talks about), or a name the edition keeps, are not."""
    import tempfile

    page = (
        '<p>然后 <span class="pasted-text glue-key-verdict">falls away from it</span>。</p>'
        '<p>共 <span class="pasted-text glue-key-n">22,500</span> 条，区间为 '
        '<span class="pasted-text glue-key-gap">-1.02 to +1.00</span>。</p>'
        '<p>It <span class="pasted-text glue-key-english">falls away from it</span>.</p>'
        '<p>结论是 <span class="pasted-markdown glue-key-fine"><code>load_state_dict</code> 和'
        ' NBSVM，提示为“This movie”</span>，共 <span class="pasted-text glue-key-m">22500</span>'
        ' 条。</p>'
        '<p>最近的词是 <span class="pasted-markdown glue-key-near"><em>okay</em>（0.73）</span>，'
        '它最关注的“<span class="pasted-text glue-key-word">bright</span>”。</p>'
        '<p>最关注的 <span class="pasted-text glue-key-bare">bright</span>。</p>')
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "page.html"
        path.write_text(page, encoding="utf-8")
        assert english_in_glued_values(path) == [
            "verdict: 'falls away from it'", "n: '22,500'", "gap: '-1.02 to +1.00'",
            "bare: 'bright'"]


@pytest.mark.parametrize("english, chinese", [
    ("22,500", "22500"), ("1,485,568", "1485568"), ("-1.02 to +1.00", "-1.02 到 +1.00"),
    ("+0.52 (-0.16 to +1.20)", "+0.52（-0.16 到 +1.20）"), ("0.75 and 0.61", "0.75 和 0.61"),
    ("0.03, 0.03, 0.05", "0.03、0.03、0.05"), ("86.50%", "86.50%"),
    ("MLM, 3,000 steps", "MLM, 3,000 steps"),  # words: the page glues its own Chinese
])
def test_a_glued_value_of_numbers_is_written_as_a_chinese_sentence_writes_it(english: str,
                                                                            chinese: str) -> None:
    from scratchbook.pages import chinese_numbers

    assert chinese_numbers(english) == chinese


def test_a_glued_block_is_the_editions_own_where_the_page_glued_one() -> None:
    """A page's opening notice (`{glue:md}` as a directive) is no paragraph that a catalogue
    translates: the Chinese edition pastes `<key>_zh` where the page glued it."""
    from book.i18n_glue import edition_key
    from scratchbook.stand_in import STAND_IN_NOTICE, STAND_IN_NOTICE_ZH

    glued = {"data_notice": "", "data_notice_zh": ""}
    assert edition_key("data_notice", "zh_CN", glued) == "data_notice_zh"
    assert edition_key("data_notice", None, glued) == edition_key("data_notice", "en", glued) == "data_notice"
    assert edition_key("other_notice", "zh_CN", {"other_notice": ""}) == "other_notice"
    # the same instructions in both: the commands, the folder and the address
    kept = r"`[^`]+`|<https?://[^>]+>|:::\{warning\}"
    assert re.findall(kept, STAND_IN_NOTICE_ZH) == re.findall(kept, STAND_IN_NOTICE)
    assert CJK.search(STAND_IN_NOTICE_ZH) and not CJK.search(STAND_IN_NOTICE)


@pytest.mark.book
@pytest.mark.parametrize("docname", sorted(CATALOGUES))
def test_no_value_glued_into_a_chinese_sentence_holds_english(html_dir: Path, docname: str) -> None:
    """Where a glued value is words (a verdict, a reading, a name made of words), a Chinese
    sentence gets the chapter's Chinese wording of it (`<key>_zh`), and a glued number is
    written as a Chinese sentence writes it (25000, "-1.02 到 +1.00"): on no translated page
    does a value glued into a Chinese paragraph hold English (example words excepted: quoted,
    in italics or in code)."""
    page = f"{docname}.html"
    found = english_in_glued_values(html_dir / ZH_DIR / page)
    assert not found, "\n".join(found)


@pytest.mark.book
def test_chapter_13s_chinese_page_says_in_chinese_when_it_was_computed_on_the_stand_in(
        html_dir: Path) -> None:
    """Chapter 13 opens with the stand-in notice where no copy of IMDB was reached: its own
    Chinese words on the Chinese page, the English on the English page; neither with IMDB."""
    import html

    from scratchformer.data.imdb import book_reviews

    used_stand_in = book_reviews() is None
    found = {}
    for edition, page in (("en", html_dir / "book/13_pretraining.html"),
                          ("zh", html_dir / ZH_DIR / "book/13_pretraining.html")):
        source = page.read_text(encoding="utf-8")
        admonitions = re.findall(r'<div class="admonition warning">(.*?)</div>', source, flags=re.S)
        found[edition] = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", " ".join(admonitions))).split())
    assert ("computed on a generated stand-in" in found["en"]) == used_stand_in, found["en"]
    assert ("本页是在生成的替代语料上计算的" in found["zh"]) == used_stand_in, found["zh"]
    assert "stand-in" not in found["zh"]


# -- the boxes -----------------------------------------------------------------------------------

class Elements(HTMLParser):
    """An HTML file's elements in order, each as its tag and the attributes a script or a style
    reads (words a reader sees, aria-label among them, left out), and its words."""

    WORDS = {"aria-label"}

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, tuple[tuple[str, str | None], ...]]] = []
        self.words: list[str] = []
        self.model_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, tuple(sorted((k, v) for k, v in attrs if k not in self.WORDS))))
        self.words += [v for k, v in attrs if k in self.WORDS and v]

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.words.append(data.strip())
            if self.elements and self.elements[-1][0] in {"textarea", "template"}:
                self.model_text.append(data.strip())  # English the model reads, kept as it is


def elements_of(path: Path) -> Elements:
    parser = Elements()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


BOXES = sorted((ROOT / "_static" / "web").glob(f"*.{LANGUAGE}.html"))


def test_each_box_has_its_chinese_twin() -> None:
    english = {path.name for path in (ROOT / "_static" / "web").glob("*.html") if path.suffixes == [".html"]}
    assert english == {"classifier.html", "gpt.html"}
    assert {path.name.replace(f".{LANGUAGE}", "") for path in BOXES} == english


@pytest.mark.parametrize("twin", BOXES, ids=lambda path: path.name)
def test_a_boxs_chinese_twin_keeps_its_elements_and_speaks_chinese(twin: Path) -> None:
    """The same elements with the same classes, ids, values and links, so that widgets.mjs and
    the styles find in the Chinese box what they find in the English one; every word a reader
    sees is Chinese but for code, names and the English text the model reads."""
    english, chinese = elements_of(twin.with_name(twin.name.replace(f".{LANGUAGE}", ""))), elements_of(twin)
    assert chinese.elements == english.elements
    assert chinese.model_text == english.model_text  # the review, the prompts: English in both
    kept = {"top-k", "top-p", "JavaScript", "WebAssembly", *english.model_text}
    untranslated = [w for w in chinese.words
                    if re.search("[A-Za-z]", w) and not re.search(r"[\u4e00-\u9fff]", w)
                    and w not in kept and not w.startswith(("scratchformer", "export-web", "runs/"))]
    assert not untranslated, untranslated


@pytest.mark.book
@pytest.mark.parametrize("page", ["book/web.html", "book/12_gpt.html"])
def test_chinese_pages_include_the_chinese_boxes(html_dir: Path, page: str) -> None:
    english = (html_dir / page).read_text(encoding="utf-8")
    chinese = (html_dir / ZH_DIR / page).read_text(encoding="utf-8")
    assert "sf-widget" in english and "sf-widget" in chinese
    assert "This box runs" in english and "This box runs" not in chinese
    assert "这个交互框在浏览器中运行" in chinese
