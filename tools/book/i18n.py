"""Sphinx extension: the book in two languages, from one execution.

Loaded by tools/book/site.py. The English edition is the book as written; a translated edition
(`tools/translations.py build`, today Chinese) is the same sources built with `language` set, so
Sphinx replaces each paragraph, heading and alt text by its translation from
`locales/<language>/LC_MESSAGES/<docname>.po`, while the code, the outputs and every glued number
come from the same executed notebooks (the jupyter cache the English build filled).

It

- glues numbers into translated paragraphs. MyST-NB resolves `{glue:text}` and `{glue:md}` from
  the notebook renderer it keeps on the document only while it parses the page; Sphinx translates
  a paragraph afterwards, by parsing its translation into a new, separate document (marked
  `<translated>`), which has no renderer, and MyST-NB parses that as plain Markdown: the roles
  found no data ("No key 'w' found in glue data for this document") and rendered nothing. Here
  a translation is parsed with a notebook renderer whose glue data is the page's own, read from
  the file MyST-NB wrote for it while reading the page a moment before (`<docname>.glue.json`,
  the record it also reads for glue from other pages). The values are the English page's, from
  the same outputs;
- keeps what the notebook computed out of the catalogues: text inside cell outputs and glued
  Markdown blocks is marked untranslatable (an output's numbers would otherwise become messages
  that change with every run); the alt text of output images stays translatable;
- marks glued Markdown (`{glue:md}`) with the class `pasted-markdown`, as MyST-NB marks glued
  text with `pasted-text`, and both with `glue-key-<key>`, so that a test can compare every
  glued value of the two editions. Where a glued phrase is words, not a number ("all of them"),
  a chapter glues the translated edition's words too, under `<key>_zh`, from the same values;
- links every page to the same page of the other edition, at its top and with a button in the
  header that stays on screen (`_static/language-switch.js` takes the reader to the section they
  are reading), and says, in the reader's language, when a page of a
  translated edition has no translation yet (its text is then the English one);
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docutils import nodes
from myst_nb.core.loggers import SphinxDocLogger
from myst_nb.core.render import load_renderer
from myst_nb.ext.glue.directives import PasteMarkdownDirective
from myst_nb.ext.glue.roles import PasteMarkdownRole, PasteTextRole
from myst_nb.sphinx_ import Parser as NotebookParser
from myst_nb.sphinx_ import SphinxNbRenderer
from myst_parser.parsers.mdit import create_md_parser
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx.util.nodes import extract_messages

logger = logging.getLogger(__name__)

ENGLISH = "en"
# Each edition: where its site sits under the English one, what its link says, its HTML lang,
# and the line an untranslated page opens with.
EDITIONS: dict[str, dict[str, str]] = {
    ENGLISH: {"prefix": "", "label": "English", "hreflang": "en", "untranslated": ""},
    "zh_CN": {"prefix": "zh/", "label": "中文", "hreflang": "zh-CN",
              "untranslated": "本页尚未译成中文，以下是英文原文。"},
}
REPORT = "translation-report.json"
OUTPUT_ELEMENTS = {"cell_code_output"}
LOCALE_PRIORITY = 20  # sphinx.transforms.i18n.Locale


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


def glue_file(output_folder: str | Path, docname: str) -> Path:
    """The glue data MyST-NB writes for a page while reading it (myst_nb.sphinx_.Parser)."""
    *folders, name = docname.split("/")
    return Path(output_folder).joinpath(*folders, f"{name}.glue.json")


@dataclass
class PageGlue:
    """What MyST-NB's glue roles ask of a notebook client: the page's glued outputs."""

    glue_data: dict[str, Any] = field(default_factory=dict)


class TranslatedNotebookParser(NotebookParser):
    """MyST-NB's parser; a translated paragraph is parsed with the page's glue data at hand."""

    def parse(self, inputstring: str, document: nodes.document) -> None:
        if not document.current_source.endswith("<translated>"):
            super().parse(inputstring, document)
            return
        env = document.settings.env
        path = glue_file(env.mystnb_config.output_folder, env.docname)
        if "{glue" not in inputstring or not path.is_file():
            super().parse(inputstring, document)  # MyST-NB parses it as plain MyST
            return
        glue_data = json.loads(path.read_text(encoding="utf-8"))
        nb_config = env.mystnb_config
        parser = create_md_parser(env.myst_config, SphinxNbRenderer)
        parser.options["document"] = document
        parser.options["nb_config"] = nb_config
        parser.options["nb_client"] = PageGlue(glue_data)
        # The roles find the renderer on the document, as in MyST-NB's own parse.
        document.attributes["nb_renderer"] = load_renderer(nb_config.render_plugin)(
            parser.renderer, SphinxDocLogger(document))
        try:
            parser.render(inputstring)
        finally:
            document.attributes.pop("nb_renderer", None)


def glue_key(text: str) -> str:
    """The key of a glue role's text: `key`, `key:.3f` or `doc::key:.3f`."""
    return text.split("::")[-1].split(":")[0]


class MarkedPasteTextRole(PasteTextRole):
    """`{glue:text}` as MyST-NB renders it (<span class="pasted-text">), with the class
    `glue-key-<key>`."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        pasted, messages = super().run()
        for node in pasted:
            if isinstance(node, nodes.Element):
                node["classes"].append(f"glue-key-{glue_key(self.text)}")
        return pasted, messages


class MarkedPasteMarkdownRole(PasteMarkdownRole):
    """`{glue:md}` as MyST-NB renders it, inside <span class="pasted-markdown glue-key-<key>">."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        pasted, messages = super().run()
        if not pasted:
            return pasted, messages
        classes = ["pasted-markdown", f"glue-key-{glue_key(self.text)}"]
        return [nodes.inline("", "", *pasted, classes=classes)], messages


class MarkedPasteMarkdownDirective(PasteMarkdownDirective):
    """The `{glue:md}` directive as MyST-NB renders it, inside <div class="pasted-markdown">."""

    def run(self) -> list[nodes.Node]:
        pasted = super().run()
        if not pasted or all(isinstance(node, nodes.system_message) for node in pasted):
            return pasted
        box = nodes.container("", *pasted, classes=["pasted-markdown"])
        self.set_source_info(box)
        return [box]


def computed(node: nodes.Element) -> bool:
    """Whether `node` sits in a cell's output or in glued Markdown: text the notebook computed."""
    return any(isinstance(parent, nodes.container) and (
        parent.get("nb_element") in OUTPUT_ELEMENTS or "pasted-markdown" in parent["classes"])
        for parent in [node, *ancestors(node)])


def ancestors(node: nodes.Node) -> list[nodes.Element]:
    found = []
    while node.parent is not None:
        node = node.parent
        found.append(node)
    return found


class KeepComputedTextUntranslated(SphinxTransform):
    """Text the notebook computed is not a message; output images keep their alt text."""

    default_priority = LOCALE_PRIORITY - 5

    def apply(self, **kwargs: Any) -> None:
        for node in self.document.findall(nodes.TextElement):
            if computed(node):
                node["translatable"] = False


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


def use_own_output_folder(app: Sphinx) -> None:
    """The extraction of messages (gettext, pages not run) writes MyST-NB's files (notebooks,
    glue data) among its doctrees, not over the English build's executed notebooks."""
    if app.builder.name != "gettext":
        return
    folder = Path(app.doctreedir) / "jupyter_execute"
    app.env.mystnb_config = app.env.mystnb_config.copy(output_folder=str(folder.resolve()))


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
    app.add_source_parser(TranslatedNotebookParser, override=True)
    app.add_role_to_domain("glue", "text", MarkedPasteTextRole(), override=True)
    app.add_role_to_domain("glue", "md", MarkedPasteMarkdownRole(), override=True)
    app.add_directive_to_domain("glue", "md", MarkedPasteMarkdownDirective, override=True)
    app.add_transform(KeepComputedTextUntranslated)
    app.add_js_file("language-switch.js")
    # After myst-nb (priority 500) has set its output folder.
    app.connect("builder-inited", use_own_output_folder, priority=550)
    # Before Sphinx's collectors (500) take the tables of contents from the page.
    app.connect("doctree-read", translate_toctree_captions, priority=400)
    app.connect("doctree-read", record_untranslated_messages)
    app.connect("doctree-read", alt_texts_of_unexecuted_cells)
    app.connect("env-purge-doc", purge_doc)
    app.connect("env-merge-info", merge_info)
    # After sphinx-book-theme (priority 501) has built the header buttons.
    app.connect("html-page-context", add_language_link, priority=900)
    app.connect("build-finished", write_report)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
