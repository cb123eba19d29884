"""Sphinx extension for the HTML book: offline MathJax, runnable notebooks, the package reference.

Registered in `_config.yml` (`sphinx: local_extensions`). It

- serves MathJax from the built site: copies the npm package `mathjax` (pinned in
  `package.json`, installed by `make mathjax`) into `_static/mathjax/`, and refuses to build
  when it is missing, the wrong version, or `mathjax_path` points anywhere but there; and ONNX
  Runtime Web's WebAssembly build (`onnxruntime-web`, pinned there too) into `_static/ort/`,
  for the models the appendix "Running the models in the browser" runs on its page;
- publishes each chapter as a notebook (`_notebooks/<page>.ipynb`, see tools/book/notebooks.py),
  points the Colab and Binder launch buttons and the ".ipynb" download at it, and writes the
  `binder/requirements.txt` Binder builds from (the site is deployed to the `gh-pages` branch,
  from where both services open it);
- fills `book/reference.md` at read time with the package reference (tools/book/reference.py),
  re-reading it whenever a chapter changes;
- provides the directive `package-additions`, which closes each chapter with the names it adds
  to the package, generated from its exported cells (tools/book/reference.py);
- keys the executed chapters on what they run against: the package's source, the recorded
  runs they read (`book/results/`) and the IMDB data (`IMDB_DIR`,
  `SCRATCHFORMER_REQUIRE_IMDB`). Jupyter's cache knows only a chapter's own
  cells, so a change in chapter 4's exported function re-ran chapter 4 and served chapter 5
  from the cache; when that fingerprint changes, the cache is emptied and every page re-read;
- loads tools/book/rebuild.py, which reads a page again when the file it was read from is no
  longer its source (a deleted notebook) or its cells failed in the last build;
- includes each page script once (see `drop_duplicate_scripts`);
- labels each exported code cell with the module it goes to ("exported to
  `scratchformer.attention`", styled by `_static/scratchformer.css`);
- labels the bibliography like the citations ("Vaswani et al., 2017"), not [1], [2], ...;
- loads tools/book/i18n.py, which builds the translated editions from the same execution and
  links every page to the same page in the other language;
- loads tools/book/weight.py, which keeps what a page fetches small (code markup, lazy
  figures, MathJax as the components the formulas need) and names MyST-NB's folded cells by
  their visible words.

What this deliberately does not handle: builders other than HTML (they get none of this),
and MathJax 4 (its fonts live in separate npm packages).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from pybtex.plugin import register_plugin
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

import book
from book import i18n, notebooks, reference
from book.bibliography import AuthorYearLabels, AuthorYearStyle
from book.execution import key_execution, outdated_pages, remember_execution
from book.static import MATHJAX_ENTRY, _is_html, finish, mathjax_source, repository

logger = logging.getLogger(__name__)

REFERENCE_DOC = "book/reference"


def check_config(app: Sphinx) -> None:
    if not _is_html(app):
        return
    mathjax_source(app)
    expected = f"mathjax/{MATHJAX_ENTRY}"
    if app.config.mathjax_path != expected:
        raise ExtensionError(
            f"mathjax_path is {app.config.mathjax_path!r}; the book serves MathJax itself, set it to {expected!r}"
        )


def fill_reference(app: Sphinx, docname: str, source: list[str]) -> None:
    """Insert the generated package reference into `book/reference.md` while it is read."""
    if docname != REFERENCE_DOC:
        return
    if reference.MARKER not in source[0]:
        raise ExtensionError(f"{REFERENCE_DOC}.md must contain the line {reference.MARKER}")
    root = Path(app.srcdir)
    try:
        text = reference.render(root)
    except book.ExportError as err:
        raise ExtensionError(f"package reference: {err}") from err
    source[0] = source[0].replace(reference.MARKER, text)
    # Re-read this page whenever a chapter, the toc or the generator changes.
    for chapter in book.toc_chapters(root):
        app.env.note_dependency(str(root / chapter))
    for tool in ("cells.py", "chapters.py", "render.py", "reference.py"):
        app.env.note_dependency(str(Path(reference.__file__).with_name(tool)))


class PackageAdditions(SphinxDirective):
    """```{package-additions}```: the names this chapter adds to the package, from its exported cells."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        root = Path(self.env.srcdir)
        chapter = Path(self.env.doc2path(self.env.docname)).relative_to(root).as_posix()
        language = self.config.language if self.config.language in reference.ADDITIONS_WORDS else "en"
        try:
            text = reference.chapter_additions(root, chapter)
        except book.ExportError as err:
            raise self.error(f"package additions: {err}") from err
        for tool in ("cells.py", "chapters.py", "render.py", "reference.py"):
            self.env.note_dependency(str(Path(reference.__file__).with_name(tool)))
        title = None
        if text.strip() != reference.NO_ADDITIONS:
            text, title = folded_additions(text, language)
        container = nodes.container()
        self.state.nested_parse(StringList(text.splitlines(), source=chapter), self.content_offset, container)
        # The list is the English one in every edition, so that its lines are messages of the
        # page's catalogue, which a translated edition translates like the prose: the names and
        # their docstrings' first paragraphs (a translation keeps each name's role verbatim).
        # The count above it is written in the edition's words, not translated.
        for node in container.findall(nodes.TextElement):
            if title is not None and node.astext().strip() == title:
                node["translatable"] = False
        for child in container.children:
            child["classes"].append("package-additions")
        return container.children


def folded_additions(text: str, language: str = "en") -> tuple[str, str]:
    """The (English) additions list as a closed dropdown under one line that counts them, in
    the edition's words: the list is a reference a reader opens, not a page to scroll past.
    Returns the Markdown and that line."""
    words = reference.ADDITIONS_WORDS["en"]
    lines = text.splitlines()
    modules = sum(not line.startswith("- ") and line.endswith(words["in"][-1]) for line in lines if line)
    names = sum(line.startswith("- ") and not line.startswith(f"- {words['constants']}") for line in lines)
    if language == "en":
        title = (f"{names} {'function or class' if names == 1 else 'functions and classes'} "
                 f"in {modules} module{'s' if modules > 1 else ''}")
    else:
        title = f"{modules} 个模块中的 {names} 个函数和类"
    return f"::::{{dropdown}} {title}\n{text}\n::::\n", title


def publish_notebook(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Write a chapter's notebook and point the launch and download buttons at it.

    A translated edition (tools/book/i18n.py) publishes a translated page's notebook in its own
    site, its Markdown cells from the page's catalogue (tools/book/notebooks.py), and points
    "Suggest edit" at that catalogue; an untranslated page's buttons open the English notebook."""
    if not _is_html(app) or "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    source = Path(app.env.doc2path(pagename))
    if source.suffix != ".md":
        return
    url, org, name = repository(app)
    folder = app.config.book_site_notebooks_dir
    relpath = f"{folder}/{pagename}.ipynb"
    language = i18n.edition(app)
    prefix = i18n.EDITIONS[language]["prefix"]  # where the edition's site sits in the English one
    translated = i18n.is_translated(app, pagename)
    if translated:
        catalogue = i18n.catalogue_path(Path(app.srcdir), language, pagename)
        notebook = notebooks.chapter_notebook(source, url, app.config.book_site_install_ref,
                                              translate=notebooks.catalogue_translations(catalogue))
    elif not prefix:
        notebook = notebooks.chapter_notebook(source, url, app.config.book_site_install_ref)
    else:
        notebook = None  # the English notebook, which the English site publishes
    if notebook is not None:
        notebooks.write_notebook(notebook, Path(app.outdir) / relpath)
        site_path, download = prefix + relpath, context["pathto"](relpath, 1)
    else:
        site_path = relpath
        download = "../" * (pagename.count("/") + prefix.count("/")) + relpath
    branch = app.config.book_site_pages_branch
    launch = app.config.html_theme_options.get("launch_buttons", {})
    targets = {
        "Colab": f"{launch.get('colab_url', '').rstrip('/')}/github/{org}/{name}/blob/{branch}/{site_path}",
        "Binder": f"{launch.get('binderhub_url', '').rstrip('/')}/v2/gh/{org}/{name}/{branch}?urlpath=lab/tree/{site_path}",
    }
    source_branch = app.config.html_theme_options.get("repository_branch") or "main"
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if group.get("label") == "launch-buttons" and button.get("text") in targets:
                button["url"] = targets[button["text"]]
            elif button.get("label") == "download-notebook-button":
                button["url"] = download
            elif button.get("label") == "source-edit-button" and translated:
                button["url"] = f"{url}/edit/{source_branch}/locales/{language}/LC_MESSAGES/{pagename}.po"
    # The theme also copies the executed notebook to _sources/; nothing links to it any more.
    (Path(app.outdir) / "_sources" / f"{pagename}.ipynb").unlink(missing_ok=True)


def drop_duplicate_scripts(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                           doctree: Any) -> None:
    """Include each script once.

    sphinx-thebe and sphinx-togglebutton register their inline configuration scripts twice
    under Jupyter Book 1.0; the second `const THEBE_JS_URL = ...` is a SyntaxError in the
    reader's console. Identical scripts (same file or body, same attributes) are kept once.
    """
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    unique = []
    for script in scripts:
        key = (str(script.filename or ""), tuple(sorted(script.attributes.items())))  # None and "" are both inline
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def export_target(tags: list[str], default: str | None) -> str | None:
    """The module a cell with these tags is exported into (None for a cell that is not exported)."""
    targets = [tag for tag in tags if tag == "export" or tag.startswith("export:")]
    if not targets:
        return None
    return default if targets[0] == "export" else targets[0].removeprefix("export:")


# The label above an exported cell, per edition of the book (tools/book/i18n.py).
EXPORTED_TO = {"en": "exported to", "zh_CN": "导出到"}


def mark_exported_cells(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Put "exported to scratchformer.<module>" above each exported code cell of the page."""
    if not _is_html(app):
        return
    default = app.env.metadata.get(docname, {}).get("export")
    for node in doctree.findall(nodes.container):
        if node.get("nb_element") != "cell_code":
            continue
        module = export_target(node.get("cell_metadata", {}).get("tags", []), default)
        if not module:
            continue
        words = EXPORTED_TO.get(app.config.language or "en", EXPORTED_TO["en"])
        badge = f'<div class="export-badge">{words} <code>{html.escape(module)}</code></div>\n'
        node.insert(0, nodes.raw("", badge, format="html"))
        node["classes"].append("exported-cell")


def setup(app: Sphinx) -> dict[str, Any]:
    register_plugin("pybtex.style.labels", "scratchformer-author-year", AuthorYearLabels)
    register_plugin("pybtex.style.formatting", "scratchformer-author-year", AuthorYearStyle)
    app.add_config_value("book_site_mathjax_package", "node_modules/mathjax", "env")
    app.add_config_value("book_site_notebooks_dir", "_notebooks", "html")
    app.add_config_value("book_site_pages_branch", "gh-pages", "html")
    app.add_config_value("book_site_install_ref", "main", "html")
    app.setup_extension("book.parallel")  # the chapters the cache lacks run side by side
    app.setup_extension("book.rebuild")  # re-read pages whose source moved or whose cells failed
    app.setup_extension("book.i18n")  # the translated editions: glue, links between editions
    app.setup_extension("book.weight")  # lighter pages: code markup, lazy figures, MathJax's parts
    app.connect("builder-inited", check_config)
    # After myst-nb (priority 500) has settled where its cache lives.
    app.connect("builder-inited", key_execution, priority=600)
    app.connect("env-get-outdated", outdated_pages)
    app.connect("env-updated", remember_execution)
    app.connect("source-read", fill_reference)
    app.connect("doctree-resolved", mark_exported_cells)
    app.add_directive(reference.ADDITIONS_DIRECTIVE, PackageAdditions)
    # After sphinx-book-theme (priority 501) has built the header buttons.
    app.connect("html-page-context", publish_notebook, priority=900)
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    # Before sphinx-external-toc (500), which writes index.html only when it is missing.
    app.connect("build-finished", finish, priority=400)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
