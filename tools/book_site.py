"""Sphinx extension for the HTML book: offline MathJax, runnable notebooks, the package reference.

Registered in `_config.yml` (`sphinx: local_extensions`). It

- serves MathJax from the built site: copies the npm package `mathjax` (pinned in
  `package.json`, installed by `make mathjax`) into `_static/mathjax/`, and refuses to build
  when it is missing, the wrong version, or `mathjax_path` points anywhere but there; and ONNX
  Runtime Web's WebAssembly build (`onnxruntime-web`, pinned there too) into `_static/ort/`,
  for the models the appendix "Running the models in the browser" runs on its page;
- publishes each chapter as a notebook (`_notebooks/<page>.ipynb`, see tools/notebooks.py),
  points the Colab and Binder launch buttons and the ".ipynb" download at it, and writes the
  `binder/requirements.txt` Binder builds from (the site is deployed to the `gh-pages` branch,
  from where both services open it);
- fills `book/reference.md` at read time with the package reference (tools/reference.py),
  re-reading it whenever a chapter changes;
- provides the directive `package-additions`, which closes each chapter with the names it adds
  to the package, generated from its exported cells (tools/reference.py);
- keys the executed chapters on what they run against: the package's source, the recorded
  runs they read (`book/results/`) and the IMDB data (`IMDB_DIR`,
  `SCRATCHFORMER_REQUIRE_IMDB`). Jupyter's cache knows only a chapter's own
  cells, so a change in chapter 4's exported function re-ran chapter 4 and served chapter 5
  from the cache; when that fingerprint changes, the cache is emptied and every page re-read;
- loads tools/book_rebuild.py, which reads a page again when the file it was read from is no
  longer its source (a deleted notebook) or its cells failed in the last build;
- includes each page script once (see `drop_duplicate_scripts`);
- labels each exported code cell with the module it goes to ("exported to
  `scratchformer.attention`", styled by `_static/scratchformer.css`);
- labels the bibliography like the citations ("Vaswani et al., 2017"), not [1], [2], ...;
- loads tools/book_i18n.py, which builds the translated editions from the same execution and
  links every page to the same page in the other language.

What this deliberately does not handle: builders other than HTML (they get none of this),
and MathJax 4 (its fonts live in separate npm packages).
"""

from __future__ import annotations

import filecmp
import hashlib
import html
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

import export
import notebooks
import reference

logger = logging.getLogger(__name__)

MATHJAX_ENTRY = "tex-mml-chtml.js"
# What the combined component loads lazily: TeX extensions, fonts, the menu, accessibility.
MATHJAX_PARTS = [MATHJAX_ENTRY, "input", "output", "ui", "a11y", "sre", "adaptors"]
# ONNX Runtime Web (package.json pins it), for the models the pages run: its WebAssembly build
# only, served from _static/ort/ like MathJax. Without it the pages say the runtime is missing.
ORT_PACKAGE = "node_modules/onnxruntime-web"
ORT_FILES = ["ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]
REFERENCE_DOC = "book/reference"
PACKAGE_DIR = "src/scratchformer"
RESULTS_DIR = "book/results"
FIGURE_STYLE = "book/matplotlibrc"  # every chapter's figures are drawn with it
# Kept inside the cache folder, so that a cache restored elsewhere (CI) carries its own record.
EXECUTION_STAMP = "scratchformer-fingerprint.json"


def _is_html(app: Sphinx) -> bool:
    return getattr(app.builder, "format", "") == "html"


def mathjax_source(app: Sphinx) -> tuple[Path, str]:
    """The installed MathJax `es5/` folder and its version; errors say how to install it."""
    root = Path(app.srcdir)
    package_dir = root / app.config.book_site_mathjax_package
    pinned = json.loads((root / "package.json").read_text(encoding="utf-8"))["dependencies"]["mathjax"]
    manifest = package_dir / "package.json"
    if not manifest.is_file():
        raise ExtensionError(
            f"MathJax is not installed ({package_dir} is missing): run `make mathjax` "
            "(npm install), the book serves MathJax itself instead of loading it from a CDN"
        )
    installed = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    if installed != pinned:
        raise ExtensionError(f"MathJax {installed} is installed but package.json pins {pinned}: run `make mathjax`")
    return package_dir / "es5", installed


def check_config(app: Sphinx) -> None:
    if not _is_html(app):
        return
    mathjax_source(app)
    expected = f"mathjax/{MATHJAX_ENTRY}"
    if app.config.mathjax_path != expected:
        raise ExtensionError(
            f"mathjax_path is {app.config.mathjax_path!r}; the book serves MathJax itself, set it to {expected!r}"
        )


def copy_if_changed(source: Path, target: Path) -> int:
    """Mirror the file or folder `source` at `target`, copying only files that differ."""
    copied = 0
    files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
    for path in files:
        dest = target if source.is_file() else target / path.relative_to(source)
        if dest.exists() and filecmp.cmp(path, dest, shallow=False):
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        copied += 1
    return copied


def repository(app: Sphinx) -> tuple[str, str, str]:
    """(url, org, name) of the repository named in `_config.yml`."""
    url = app.config.html_theme_options.get("repository_url", "").rstrip("/")
    parts = url.split("github.com/")[-1].split("/")
    if "github.com/" not in url or len(parts) != 2:
        raise ExtensionError(f"repository url must be https://github.com/<org>/<name>, got {url!r}")
    return url, parts[0], parts[1]


def fill_reference(app: Sphinx, docname: str, source: list[str]) -> None:
    """Insert the generated package reference into `book/reference.md` while it is read."""
    if docname != REFERENCE_DOC:
        return
    if reference.MARKER not in source[0]:
        raise ExtensionError(f"{REFERENCE_DOC}.md must contain the line {reference.MARKER}")
    root = Path(app.srcdir)
    try:
        text = reference.render(root)
    except export.ExportError as err:
        raise ExtensionError(f"package reference: {err}") from err
    source[0] = source[0].replace(reference.MARKER, text)
    # Re-read this page whenever a chapter, the toc or the generator changes.
    for chapter in export.toc_chapters(root):
        app.env.note_dependency(str(root / chapter))
    for tool in ("export.py", "reference.py"):
        app.env.note_dependency(str(Path(reference.__file__).with_name(tool)))


class PackageAdditions(SphinxDirective):
    """```{package-additions}```: the names this chapter adds to the package, from its exported cells."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        root = Path(self.env.srcdir)
        chapter = Path(self.env.doc2path(self.env.docname)).relative_to(root).as_posix()
        language = self.config.language if self.config.language in reference.ADDITIONS_WORDS else "en"
        try:
            text = reference.chapter_additions(root, chapter, language=language)
        except export.ExportError as err:
            raise self.error(f"package additions: {err}") from err
        for tool in ("export.py", "reference.py"):
            self.env.note_dependency(str(Path(reference.__file__).with_name(tool)))
        if text.strip() != reference.ADDITIONS_WORDS[language]["none"]:
            text = folded_additions(text, language)
        container = nodes.container()
        self.state.nested_parse(StringList(text.splitlines(), source=chapter), self.content_offset, container)
        # Generated from the package, in each edition's words: not a message to translate.
        for node in container.findall(nodes.TextElement):
            node["translatable"] = False
        for child in container.children:
            child["classes"].append("package-additions")
        return container.children


def folded_additions(text: str, language: str = "en") -> str:
    """The additions list as a closed dropdown under one line that counts them: the list is a
    reference a reader opens, not a page to scroll past."""
    words = reference.ADDITIONS_WORDS[language]
    lines = text.splitlines()
    modules = sum(not line.startswith("- ") and line.endswith(words["in"][-1]) for line in lines if line)
    names = sum(line.startswith("- ") and not line.startswith(f"- {words['constants']}") for line in lines)
    if language == "en":
        title = (f"{names} {'function or class' if names == 1 else 'functions and classes'} "
                 f"in {modules} module{'s' if modules > 1 else ''}")
    else:
        title = f"{modules} 个模块中的 {names} 个函数和类"
    return f"::::{{dropdown}} {title}\n{text}\n::::\n"


def folder_fingerprint(base: Path) -> str:
    """Names, sizes and times of every file under `base` (contents are not read)."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            stat = path.stat()
            digest.update(f"{path.relative_to(base).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def datasets_cache(environ: Mapping[str, str]) -> Path:
    """Where `datasets` keeps what `make imdb` downloaded."""
    if environ.get("HF_DATASETS_CACHE"):
        return Path(environ["HF_DATASETS_CACHE"])
    home = environ.get("HF_HOME") or Path(environ.get("HOME", "~")).expanduser() / ".cache" / "huggingface"
    return Path(home) / "datasets"


def imdb_fingerprint(environ: Mapping[str, str]) -> str:
    """The IMDB copy the chapters read: the files in `IMDB_DIR`, else IMDB in the datasets cache.

    "none" when neither exists (the chapters then use the stand-in). Contents are not read: the
    real dataset is 50 MB compressed.
    """
    folder = environ.get("IMDB_DIR")
    if folder:
        return folder_fingerprint(Path(folder)) if Path(folder).is_dir() else "none"
    cache = datasets_cache(environ)
    cached = sorted(path for path in cache.glob("*imdb*") if path.is_dir()) if cache.is_dir() else []
    if not cached:
        return "none"
    digest = hashlib.sha256()
    for path in cached:
        digest.update(f"{path.name}\0{folder_fingerprint(path)}\n".encode())
    return "datasets cache " + digest.hexdigest()


def execution_fingerprint(root: Path, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What an executed chapter depends on besides its own cells."""
    def files_digest(folder: str) -> str:
        digest = hashlib.sha256()
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode() + b"\0")
                digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()

    style = root / FIGURE_STYLE
    return {
        "package": files_digest(PACKAGE_DIR),
        "results": files_digest(RESULTS_DIR),
        "figure_style": hashlib.sha256(style.read_bytes()).hexdigest() if style.exists() else "",
        "imdb": imdb_fingerprint(environ),
        "require_imdb": environ.get("SCRATCHFORMER_REQUIRE_IMDB", ""),
    }


def changed_parts(stored: Mapping[str, str] | None, current: Mapping[str, str]) -> list[str]:
    """Why two fingerprints differ, in words."""
    if not stored:
        return ["no record of what the cached outputs were computed with"]
    words = {"package": f"the package source ({PACKAGE_DIR}) changed",
             "results": f"a recorded run ({RESULTS_DIR}) changed",
             "figure_style": f"the figures' style ({FIGURE_STYLE}) changed",
             "imdb": "the IMDB data (IMDB_DIR or the datasets cache) changed",
             "require_imdb": "SCRATCHFORMER_REQUIRE_IMDB changed"}
    return [words.get(key, f"{key} changed") for key in sorted(set(stored) | set(current))
            if stored.get(key) != current.get(key)]


def refresh_execution_cache(cache: Path, current: Mapping[str, str]) -> list[str]:
    """Empty the jupyter cache unless it was filled with `current`; return why it was emptied."""
    stamp = cache / EXECUTION_STAMP
    try:
        stored = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = None
    if stored == dict(current):
        return []
    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True)
    stamp.write_text(json.dumps(dict(current), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return changed_parts(stored, current)


def key_execution(app: Sphinx) -> None:
    """At the start of a build: drop cached outputs computed against another package or data."""
    current = execution_fingerprint(Path(app.srcdir))
    app.scratchformer_execution = current  # type: ignore[attr-defined]
    config = getattr(app.env, "mystnb_config", None)
    cache = Path(getattr(config, "execution_cache_path", "") or Path(app.outdir).parent / ".jupyter_cache")
    reasons = refresh_execution_cache(cache, current)
    if reasons:
        logger.info(f"emptied the jupyter cache {cache}: {'; '.join(reasons)}")


def outdated_pages(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Every page, when the pages were last read against another package or data."""
    current = getattr(app, "scratchformer_execution", None)
    if current is None or getattr(env, "scratchformer_execution", None) == current:
        return []
    logger.info("re-reading every page: they were executed against another package or other data")
    return sorted(env.found_docs)


def remember_execution(app: Sphinx, env: Any) -> None:
    """Record, in the environment Sphinx saves once reading has succeeded, what pages were read against."""
    env.scratchformer_execution = getattr(app, "scratchformer_execution", None)


def publish_notebook(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Write a chapter's notebook and point the launch and download buttons at it."""
    if not _is_html(app) or "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    source = Path(app.env.doc2path(pagename))
    if source.suffix != ".md":
        return
    url, org, name = repository(app)
    folder = app.config.book_site_notebooks_dir
    relpath = f"{folder}/{pagename}.ipynb"
    notebooks.write_notebook(
        notebooks.chapter_notebook(source, url, app.config.book_site_install_ref),
        Path(app.outdir) / relpath,
    )
    branch = app.config.book_site_pages_branch
    launch = app.config.html_theme_options.get("launch_buttons", {})
    targets = {
        "Colab": f"{launch.get('colab_url', '').rstrip('/')}/github/{org}/{name}/blob/{branch}/{relpath}",
        "Binder": f"{launch.get('binderhub_url', '').rstrip('/')}/v2/gh/{org}/{name}/{branch}?urlpath=lab/tree/{relpath}",
    }
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if group.get("label") == "launch-buttons" and button.get("text") in targets:
                button["url"] = targets[button["text"]]
            elif button.get("label") == "download-notebook-button":
                button["url"] = context["pathto"](relpath, 1)
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


# The label above an exported cell, per edition of the book (tools/book_i18n.py).
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


def finish(app: Sphinx, exception: Exception | None) -> None:
    """Copy MathJax into `_static/mathjax/` and the book's changed `_static/` files; write
    Binder's requirements, `.nojekyll`, index.html."""
    if exception is not None or not _is_html(app):
        return
    es5, version = mathjax_source(app)
    target = Path(app.outdir) / "_static" / "mathjax"
    copied = sum(copy_if_changed(es5 / part, target / part) for part in MATHJAX_PARTS)
    logger.info(f"MathJax {version}: {copied} files copied into _static/mathjax")
    copy_onnxruntime(app)
    # Sphinx copies `_static/` only when some page is written: an edited widget or a new
    # export alone would otherwise leave the site serving the old files.
    copied = copy_if_changed(Path(app.srcdir) / "_static", Path(app.outdir) / "_static")
    logger.info(f"_static: {copied} changed files copied")
    write_model_index(Path(app.outdir))
    url, _, _ = repository(app)
    binder = Path(app.outdir) / "binder" / "requirements.txt"
    binder.parent.mkdir(exist_ok=True)
    binder.write_text(notebooks.binder_requirements(url, app.config.book_site_install_ref), encoding="utf-8")
    # GitHub Pages would hide the underscore folders (_static, _notebooks) from Jekyll otherwise.
    (Path(app.outdir) / ".nojekyll").touch()
    write_index(app)


def copy_onnxruntime(app: Sphinx) -> None:
    """Copy ONNX Runtime Web's WebAssembly build into `_static/ort/`, if npm installed the
    version package.json pins (`make mathjax`); otherwise say so and copy nothing."""
    root = Path(app.srcdir)
    dist = root / ORT_PACKAGE / "dist"
    pinned = json.loads((root / "package.json").read_text(encoding="utf-8"))["dependencies"].get("onnxruntime-web")
    manifest = root / ORT_PACKAGE / "package.json"
    installed = json.loads(manifest.read_text(encoding="utf-8"))["version"] if manifest.is_file() else None
    if pinned is None or installed != pinned or not all((dist / name).is_file() for name in ORT_FILES):
        logger.info(f"onnxruntime-web {pinned} is not installed (run `make mathjax`): the pages' models will not run")
        return
    target = Path(app.outdir) / "_static" / "ort"
    copied = sum(copy_if_changed(dist / name, target / name) for name in ORT_FILES)
    logger.info(f"onnxruntime-web {installed}: {copied} files copied into _static/ort")


def write_model_index(outdir: Path) -> list[str]:
    """List the exported models the site serves (`_static/models/<name>/manifest.json`, from
    `scratchformer export-web`) in `_static/models/index.json`, which the pages read first: a
    site without models then requests none, and its pages log no missing file."""
    models = outdir / "_static" / "models"
    names = sorted(p.parent.name for p in models.glob("*/manifest.json"))
    models.mkdir(parents=True, exist_ok=True)
    (models / "index.json").write_text(json.dumps({"models": names}) + "\n", encoding="utf-8")
    return names


def write_index(app: Sphinx) -> None:
    """The site's front door: a redirect to the root page, with the book's title and icon.

    (sphinx-external-toc writes a bare redirect only when index.html is missing; a browser
    asks that bare page for /favicon.ico, which does not exist.)
    """
    root = app.config.root_doc
    if root == "index":
        return
    icon = Path(app.config.html_favicon or "").name
    icon_link = f'<link rel="icon" href="_static/{icon}">\n' if icon else ""
    target = f"{root}.html"
    (Path(app.outdir) / "index.html").write_text(
        f"<!DOCTYPE html>\n<html lang=\"{(app.config.language or 'en').replace('_', '-')}\">\n"
        "<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{app.config.html_title}</title>\n{icon_link}"
        f'<meta http-equiv="Refresh" content="0; url={target}">\n</head>\n'
        f'<body><p><a href="{target}">{app.config.html_title}</a></p></body>\n</html>\n',
        encoding="utf-8",
    )


class AuthorYearLabels(BaseLabelStyle):
    """Bibliography labels that read like the citations in the text: "Vaswani et al., 2017"."""

    def format_labels(self, sorted_entries: Any) -> Any:
        seen: dict[str, int] = {}
        for entry in sorted_entries:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            surnames = [" ".join(person.last_names) for person in people]
            if len(surnames) > 2:
                names = f"{surnames[0]} et al."
            else:
                names = " and ".join(surnames) or entry.fields.get("institution", entry.key)
            label = f"{names}, {entry.fields.get('year', 'n.d.')}"
            seen[label] = seen.get(label, 0) + 1
            yield label if seen[label] == 1 else f"{label}{'abcdefghij'[seen[label] - 1]}"


class AuthorYearStyle(PlainStyle):
    """pybtex's "plain" entries (sorted by author), labelled by author and year."""

    default_label_style = "scratchformer-author-year"


def setup(app: Sphinx) -> dict[str, Any]:
    register_plugin("pybtex.style.labels", "scratchformer-author-year", AuthorYearLabels)
    register_plugin("pybtex.style.formatting", "scratchformer-author-year", AuthorYearStyle)
    app.add_config_value("book_site_mathjax_package", "node_modules/mathjax", "env")
    app.add_config_value("book_site_notebooks_dir", "_notebooks", "html")
    app.add_config_value("book_site_pages_branch", "gh-pages", "html")
    app.add_config_value("book_site_install_ref", "main", "html")
    app.setup_extension("book_rebuild")  # re-read pages whose source moved or whose cells failed
    app.setup_extension("book_i18n")  # the translated editions: glue, links between editions
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
