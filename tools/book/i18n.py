"""Sphinx extension: the book in two languages, from one execution.

Loaded by tools/book/site.py. The English edition is the book as written; a translated edition
(`tools/translations.py build`, today Chinese) is the same sources built with `language` set, so
Sphinx replaces each paragraph, heading and alt text by its translation from
`locales/<language>/LC_MESSAGES/<docname>.po`, while the code, the outputs and every glued number
come from the same executed notebooks (the jupyter cache the English build filled).

It

- glues numbers into translated paragraphs and keeps what the notebook computed out of the
  catalogues (`tools/book/i18n_glue.py`);
- builds the Chinese search index in linear time (`tools/book/i18n_search.py`);
- links every page to the same page of the other edition, at its top and with a button in the
  header that stays on screen (`_static/language-switch.js` takes the reader to the section they
  are reading), and says, in the reader's language, when a page of a
  translated edition has no translation yet (its text is then the English one);
- gives a folded cell's own toggle words ("Show the solution") in the edition's language, and
  an included HTML file (the boxes) its edition's twin, `NAME.<language>.html`;
- shows an output that a cell displayed for one edition (`display(fig, metadata={"edition":
  "zh_CN"})`: the same figure drawn with Chinese labels) only in that edition;
- in a translated edition, records every message of a translated page whose catalogue entry is
  missing, empty or fuzzy, in `<build>/translation-report.json`, which the tests read.

A page is translated when its catalogue exists: `tools/translations.py update --start DOC`
creates one.

Glue from another page (`{glue:text}`doc::key``, as in book/corrections.md) needs nothing of
this: MyST-NB resolves it after reading, from the other page's glue file, in a translation too.

What this deliberately does not handle: builders other than HTML and gettext.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.nodes import extract_messages

from book.i18n_glue import ancestors

logger = logging.getLogger(__name__)

ENGLISH = "en"
# Each edition: where its site sits under the English one, what its link says, its HTML lang,
# and the line an untranslated page opens with.
EDITIONS: dict[str, dict[str, str]] = {
    ENGLISH: {"prefix": "", "label": "English", "hreflang": "en", "untranslated": ""},
    "zh_CN": {"prefix": "zh/", "label": "中文", "hreflang": "zh-CN",
              "untranslated": "本页尚未译成中文，以下是英文原文。"},
}
# The words on a folded cell's toggle that a chapter sets itself (`mystnb: code_prompt_show:`),
# in each translated edition; MyST-NB's own words come from the edition's configuration
# (tools/translations.py). tests/book/test_typography.py checks that every chapter's are here.
PROMPTS: dict[str, dict[str, str]] = {
    "zh_CN": {
        "Show the solution": "显示解答", "Hide the solution": "隐藏解答",
        "Show the counts": "显示计数", "Hide the counts": "隐藏计数",
        "Show the run's settings": "显示这次运行的设置", "Hide the run's settings": "隐藏这次运行的设置",
    },
}
REPORT = "translation-report.json"


def edition(app: Sphinx) -> str:
    language = app.config.language or ENGLISH
    if language not in EDITIONS:
        raise ValueError(f"no edition of the book in {language!r}: the editions are {sorted(EDITIONS)}")
    return language


def catalogue_path(root: Path, language: str, docname: str) -> Path:
    """Where the translations of page `docname` into `language` live."""
    return root / "locales" / language / "LC_MESSAGES" / f"{docname}.po"


def is_translated(app: Sphinx, docname: str) -> bool:
    language = edition(app)
    return language != ENGLISH and catalogue_path(Path(app.srcdir), language, docname).is_file()


def record_untranslated_messages(app: Sphinx, doctree: nodes.document) -> None:
    """Once a translated page is read (and translated): every message of it that its catalogue
    lacks, leaves empty or marks fuzzy (which Sphinx does not use). The messages are those
    Sphinx's gettext builder extracts from the same page."""
    docname = app.env.docname
    if not is_translated(app, docname):
        return
    catalogue = read_catalogue(app, docname)
    translations = {entry.string for entry in catalogue if entry.id and entry.string and not entry.fuzzy}
    needed = []
    for node, message in extract_messages(doctree):
        if node.get("translated") or message in translations:
            continue  # Sphinx marks the paragraphs it translated, not the alt texts
        if any(isinstance(parent, nodes.docinfo) for parent in ancestors(node)):
            continue  # the front matter, which is not part of the page
        entry = catalogue.get(message)
        if entry is None:
            needed.append({"message": message, "state": "missing from the catalogue"})
        elif not entry.string:
            needed.append({"message": message, "state": "untranslated"})
        elif entry.fuzzy:
            needed.append({"message": message, "state": "fuzzy"})
    untranslated_messages(app.env)[docname] = needed


def read_catalogue(app: Sphinx, docname: str) -> Any:
    from babel.messages.pofile import read_po

    with catalogue_path(Path(app.srcdir), edition(app), docname).open("rb") as handle:
        return read_po(handle)


def translate_toctree_captions(app: Sphinx, doctree: nodes.document) -> None:
    """The captions of a translated page's tables of contents ("Chapters", "Appendices" in the
    sidebar): Sphinx extracts them into the page's catalogue but leaves them untranslated."""
    if not is_translated(app, app.env.docname):
        return
    catalogue = None
    for toctree in doctree.findall(addnodes.toctree):
        if not toctree.get("caption"):
            continue
        catalogue = catalogue or read_catalogue(app, app.env.docname)
        entry = catalogue.get(toctree["caption"])
        if entry is not None and entry.string and not entry.fuzzy:
            toctree["caption"] = entry.string


# An output a cell displays with `metadata={"edition": "zh_CN"}` (or "en") is shown only in that
# edition: a figure drawn twice from the same data, with English and with Chinese labels, by the
# one execution both editions read (book/04_self_attention.md, `show_editions`).
OUTPUT_EDITION = "edition"


def mark_output_editions() -> None:
    """MyST-NB reads an output's metadata but keeps it off the page's nodes: its renderer is
    wrapped so that the nodes of an output displayed for one edition say which."""
    from myst_nb.core.render import NbElementRenderer

    original = NbElementRenderer.render_mime_type
    if getattr(original, "marks_edition", False):
        return

    def render_mime_type(self: Any, data: Any) -> list[nodes.Element]:
        rendered = original(self, data)
        wanted = (data.output_metadata or {}).get(OUTPUT_EDITION)
        if wanted:
            for node in rendered:
                if isinstance(node, nodes.Element):
                    node[OUTPUT_EDITION] = wanted
        return rendered

    render_mime_type.marks_edition = True  # type: ignore[attr-defined]
    NbElementRenderer.render_mime_type = render_mime_type


def keep_this_editions_outputs(app: Sphinx, doctree: nodes.document) -> None:
    """Drop the outputs a cell displayed for the other edition."""
    language = edition(app) if app.builder.name != "gettext" else ENGLISH
    for bundle in list(doctree.findall(nodes.container)):
        if bundle.get("nb_element") != "mime_bundle":
            continue
        wanted = {node[OUTPUT_EDITION] for node in bundle.findall(nodes.Element) if OUTPUT_EDITION in node}
        if wanted and language not in wanted:
            bundle.parent.remove(bundle)


def translate_prompts(app: Sphinx, doctree: nodes.document) -> None:
    """A folded cell's own toggle words ("Show the solution") in the edition's language, on
    every page of a translated edition (its buttons and menus are in that language too)."""
    words = PROMPTS.get(edition(app), {})
    if not words:
        return
    for cell in doctree.findall(nodes.container):
        for name in ("prompt_show", "prompt_hide"):
            if cell.get(name) in words:
                cell[name] = words[cell[name]]


def include_the_editions_html(app: Sphinx, doctree: nodes.document) -> None:
    """An HTML file a page includes (`{raw} html` with `:file:`: the boxes of chapters 11 and 12
    and the web appendix) in the edition's language: `NAME.<language>.html` beside `NAME.html`,
    where it exists (tests/book/test_editions.py checks that both keep the same elements)."""
    language = edition(app)
    if language == ENGLISH or app.builder.name == "gettext":
        return
    for node in doctree.findall(nodes.raw):
        source = node.get("source")
        if not source or "html" not in node.get("format", "").split():
            continue
        twin = Path(source).with_suffix(f".{language}.html")
        if twin.is_file():
            app.env.note_dependency(str(twin))
            node.children = [nodes.Text(twin.read_text(encoding="utf-8"))]


def alt_texts_of_unexecuted_cells(app: Sphinx, doctree: nodes.document) -> None:
    """The gettext builder reads the pages without running them (tools/translations.py): a
    figure's alt text, which lives in its cell's metadata (`mystnb: image: alt:`) and reaches
    the page on the output's image, is extracted from an image node put where that output
    would be, with the same text."""
    if app.builder.name != "gettext":
        return
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") != "cell_code" or any(cell.findall(nodes.image)):
            continue
        alt = ((cell.get("cell_metadata") or {}).get("mystnb") or {}).get("image", {}).get("alt")
        if alt:
            image = nodes.image(uri="", alt=alt)
            image.source, image.line = cell.source, cell.line
            cell += image


def untranslated_messages(env: Any) -> dict[str, list[dict[str, str]]]:
    if not hasattr(env, "book_untranslated"):
        env.book_untranslated = {}
    return env.book_untranslated


def purge_doc(app: Sphinx, env: Any, docname: str) -> None:
    untranslated_messages(env).pop(docname, None)


def merge_info(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    for docname in docnames:
        if docname in untranslated_messages(other):
            untranslated_messages(env)[docname] = untranslated_messages(other)[docname]


def other_edition_link(language: str, pagename: str) -> tuple[str, dict[str, str]]:
    """The relative URL of `pagename` in the other edition, and that edition."""
    up = "../" * pagename.count("/")
    if language == ENGLISH:
        other = next(name for name in EDITIONS if name != ENGLISH)
        return f"{up}{EDITIONS[other]['prefix']}{pagename}.html", EDITIONS[other]
    back = "../" * EDITIONS[language]["prefix"].count("/")
    return f"{up}{back}{pagename}.html", EDITIONS[ENGLISH]


def add_language_link(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                      doctree: Any) -> None:
    """Open each page with a link to the same page in the other language; in a translated
    edition, an untranslated page says so in that language and keeps `lang="en"` on its text."""
    if getattr(app.builder, "format", "") != "html" or "body" not in context:
        return
    language = edition(app)
    url, other = other_edition_link(language, pagename)
    link = (f'<div class="language-switch"><a class="language-switch-link" href="{url}" '
            f'hreflang="{other["hreflang"]}" lang="{other["hreflang"]}">{other["label"]}</a></div>\n')
    body = context["body"]
    if language != ENGLISH and doctree is not None and not is_translated(app, pagename):
        notice = EDITIONS[language]["untranslated"]
        body = f'<p class="untranslated-notice">{notice}</p>\n<div lang="en">\n{body}</div>\n'
    context["body"] = link + body
    context["metatags"] = context.get("metatags", "") + (
        f'\n<link rel="alternate" hreflang="{other["hreflang"]}" href="{url}" />')
    # The same, in the header that stays on screen while the reader scrolls.
    context.setdefault("header_buttons", []).insert(0, {
        "type": "javascript", "javascript": f"goToEdition('{url}')", "text": other["label"],
        "tooltip": other["label"], "icon": "fas fa-language", "label": "language-switch-button",
    })


def write_report(app: Sphinx, exception: Exception | None) -> None:
    """`<build>/translation-report.json`: per translated page, the messages that need translating."""
    if exception is not None or edition(app) == ENGLISH or getattr(app.builder, "format", "") != "html":
        return
    found = untranslated_messages(app.env)
    report = {docname: found.get(docname, []) for docname in sorted(app.env.found_docs)
              if is_translated(app, docname)}
    path = Path(app.doctreedir).parent / REPORT
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    temporary.replace(path)
    pending = {docname: len(messages) for docname, messages in report.items() if messages}
    if pending:
        logger.info("messages that need translating (run `make translations`): "
                    + ", ".join(f"{docname} {count}" for docname, count in pending.items()))


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("book.i18n_glue")  # glued numbers in translated paragraphs
    app.setup_extension("book.i18n_search")  # the Chinese search index in linear time
    app.add_js_file("language-switch.js")
    # Before Sphinx's collectors (500) take the tables of contents from the page.
    app.connect("doctree-read", translate_toctree_captions, priority=400)
    app.connect("doctree-read", record_untranslated_messages)
    app.connect("doctree-read", alt_texts_of_unexecuted_cells)
    app.connect("doctree-read", translate_prompts)
    app.connect("doctree-read", include_the_editions_html)
    mark_output_editions()
    # Before the alt texts of unexecuted cells, and before anything reads the outputs.
    app.connect("doctree-read", keep_this_editions_outputs, priority=300)
    app.connect("env-purge-doc", purge_doc)
    app.connect("env-merge-info", merge_info)
    # After sphinx-book-theme (priority 501) has built the header buttons.
    app.connect("html-page-context", add_language_link, priority=900)
    app.connect("build-finished", write_report)
    # env_version: raised when what this extension puts on the pages changes (the outputs of
    # the other edition dropped, the toggles' words, the notebook buttons, the boxes' words), so that a build
    # reads and writes every page again instead of keeping pages written by the old one.
    return {"version": "1", "env_version": 3, "parallel_read_safe": True, "parallel_write_safe": True}
