"""Sphinx extension, loaded by tools/book/i18n.py: glued numbers in a translated edition.

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
- keeps the package reference's listing out of them too (`book/reference.md`'s sections that a
  `py:module` directive opens, generated from the package by tools/book/reference.py): the
  package's names and docstrings are in English in every edition, as in the lists that close
  the chapters, and would otherwise become messages that change with every docstring;
- pastes, where a page opens with a glued block (`{glue:md}` as a directive: the notice of a
  page computed on a stand-in), the block glued under `<key>_zh` in the Chinese edition, where
  the page glued one;
- marks glued Markdown (`{glue:md}`) with the class `pasted-markdown`, as MyST-NB marks glued
  text with `pasted-text`, and both with `glue-key-<key>`, so that a test can compare every
  glued value of the two editions. Where a glued phrase is words, not a number ("all of them"),
  a chapter glues the translated edition's words too, under `<key>_zh`, from the same values.

What this deliberately does not handle: builders other than HTML and gettext, glue from another
page (MyST-NB resolves it after reading, in a translation too).
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
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform

OUTPUT_ELEMENTS = {"cell_code_output"}
LOCALE_PRIORITY = 20  # sphinx.transforms.i18n.Locale


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


def edition_key(key: str, language: str | None, glue_data: dict[str, Any]) -> str:
    """The key a glued block pastes in an edition: `<key>_zh` in the Chinese one, where the page
    glued it (a notice in Chinese words), else `key`."""
    if not language or language == "en":
        return key
    translated = f"{key}_{language.split('_')[0]}"
    return translated if translated in glue_data else key


class MarkedPasteMarkdownDirective(PasteMarkdownDirective):
    """The `{glue:md}` directive as MyST-NB renders it, inside <div class="pasted-markdown">;
    in a translated edition, the block the page glued in its language, where there is one
    (`edition_key`): a directive's block is no paragraph that a catalogue could translate."""

    def run(self) -> list[nodes.Node]:
        renderer = self.state.document.get("nb_renderer")
        if renderer is not None and self.arguments:
            self.arguments[0] = edition_key(self.arguments[0],
                                            self.state.document.settings.env.config.language,
                                            renderer.renderer.nb_client.glue_data)
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


def in_module_reference(node: nodes.Element) -> bool:
    """Whether `node` sits in a section that a `py:module` directive opens (its target's id is
    `module-<name>`): a module of the generated package reference."""
    return any(isinstance(parent, nodes.section) and any(
        isinstance(child, nodes.target) and any(i.startswith("module-") for i in child["ids"])
        for child in parent.children) for parent in [node, *ancestors(node)])


class KeepComputedTextUntranslated(SphinxTransform):
    """Text the notebook computed, or the package reference generated, is not a message;
    output images keep their alt text."""

    default_priority = LOCALE_PRIORITY - 5

    def apply(self, **kwargs: Any) -> None:
        for node in self.document.findall(nodes.TextElement):
            # not an inline: Sphinx later unwraps every inline marked `translatable`
            # (sphinx.transforms.i18n.RemoveTranslatableInline), which empties a link's text
            reference = not isinstance(node, nodes.inline) and in_module_reference(node)
            if computed(node) or reference:
                node["translatable"] = False


def use_own_output_folder(app: Sphinx) -> None:
    """The extraction of messages (gettext, pages not run) writes MyST-NB's files (notebooks,
    glue data) among its doctrees, not over the English build's executed notebooks."""
    if app.builder.name != "gettext":
        return
    folder = Path(app.doctreedir) / "jupyter_execute"
    app.env.mystnb_config = app.env.mystnb_config.copy(output_folder=str(folder.resolve()))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_source_parser(TranslatedNotebookParser, override=True)
    app.add_role_to_domain("glue", "text", MarkedPasteTextRole(), override=True)
    app.add_role_to_domain("glue", "md", MarkedPasteMarkdownRole(), override=True)
    app.add_directive_to_domain("glue", "md", MarkedPasteMarkdownDirective, override=True)
    app.add_transform(KeepComputedTextUntranslated)
    # After myst-nb (priority 500) has set its output folder.
    app.connect("builder-inited", use_own_output_folder, priority=550)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
