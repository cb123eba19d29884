"""The files the site serves besides its pages (part of the book's Sphinx extension).

MathJax (the npm package `mathjax`, pinned in `package.json`, installed by `make mathjax`) is
copied into `_static/mathjax/`, and ONNX Runtime Web's WebAssembly build (`onnxruntime-web`)
into `_static/ort/`, for the models the appendix "Running the models in the browser" runs; the
models' index and the site's `index.html` are written at the end of the build.
"""

from __future__ import annotations

import filecmp
import json
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

from book import notebooks

logger = logging.getLogger(__name__)

MATHJAX_ENTRY = "startup.js"
# The loader and the components it loads (tools/book/weight.py names them): the core, TeX
# input and its extensions, HTML output and its fonts, the MathML for screen readers.
MATHJAX_PARTS = [MATHJAX_ENTRY, "core.js", "input", "output", "a11y"]
# ONNX Runtime Web (package.json pins it), for the models the pages run: its WebAssembly build
# only, served from _static/ort/ like MathJax. Without it the pages say the runtime is missing.
ORT_PACKAGE = "node_modules/onnxruntime-web"
ORT_FILES = ["ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]


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
