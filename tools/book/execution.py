"""The executed chapters keyed on what they ran against (part of the book's Sphinx extension).

Jupyter's cache knows only a chapter's own cells, so a change in chapter 4's exported function
re-ran chapter 4 and served chapter 5 from the cache. Two keys complete it:
- one for every page: the library's source, the figures' style and the IMDB data (`IMDB_DIR`,
  `SCRATCHFORMER_REQUIRE_IMDB`); when it changes, the cache is emptied and every page is read
  again;
- one per page: the modules of the book's own package (`scratchbook/`) its cells import, at any
  depth, and the records of `book/results/` that its cells and those modules name (a `Record`
  constant of `scratchbook.records`, or the file's name); when it changes, that page's cached
  outputs are dropped and that page alone is read again.

What this deliberately does not follow: files a page reads by a path it builds at run time (it
names them through `scratchbook.records` instead), and imports made by text (`importlib`).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

PACKAGE_DIR = "src/scratchformer"
BOOK_PACKAGE_DIR = "scratchbook/src"  # scratchbook.<module> is BOOK_PACKAGE_DIR/scratchbook/<module>.py
RECORDS_MODULE = "scratchbook.records"  # where each record of RESULTS_DIR is a Record constant
RESULTS_DIR = "book/results"
FIGURE_STYLE = "book/matplotlibrc"  # every chapter's figures are drawn with it
# Kept inside the cache folder, so that a cache restored elsewhere (CI) carries its own record.
EXECUTION_STAMP = "scratchformer-fingerprint.json"
PAGES_STAMP = "scratchformer-pages.json"  # each page's own key, by its source's path


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
        "figure_style": hashlib.sha256(style.read_bytes()).hexdigest() if style.exists() else "",
        "imdb": imdb_fingerprint(environ),
        "require_imdb": environ.get("SCRATCHFORMER_REQUIRE_IMDB", ""),
    }


def code_of(source: str, page: str) -> str:
    """The code cells of a MyST notebook's text, read as jupytext reads them, joined, with
    IPython's `%` and `!` lines left out."""
    from book.cells import MAGIC, read_myst

    cells = [cell.source for cell in read_myst(source, page).cells if cell.cell_type == "code"]
    return "\n".join(line for cell in cells for line in cell.splitlines()
                     if not MAGIC.match(line))


def names_in(code: str) -> tuple[set[str], set[str], set[str]]:
    """The modules `code` imports (with their parent packages), the names it uses and the
    strings it holds; a cell that does not parse counts for its import lines alone. A module
    of the book's package, which many pages import, is parsed once."""
    modules, names, strings = _names_in(code)
    return set(modules), set(names), set(strings)


@functools.lru_cache(maxsize=256)
def _names_in(code: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        tree = ast.parse("\n".join(line for line in code.splitlines()
                                   if re.fullmatch(r"(from [\w.]+ )?import [\w., ]+", line)))
    modules: set[str] = set()
    names: set[str] = set()
    strings: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
            modules |= {f"{node.module}.{alias.name}" for alias in node.names}
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
    return frozenset(".".join(m.split(".")[:k]) for m in modules for k in range(1, m.count(".") + 2)), \
        frozenset(names), frozenset(strings)


def book_module_path(root: Path, module: str) -> Path | None:
    """The file of a module of the book's package, None for any other module."""
    if module.split(".")[0] != "scratchbook":
        return None
    base = root / BOOK_PACKAGE_DIR / Path(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def record_files(root: Path) -> dict[str, set[str]]:
    """Each top-level name of `scratchbook.records` that makes a `Record` -> the files or
    folders of `book/results/` it names (a folder for a name built at run time)."""
    path = book_module_path(root, RECORDS_MODULE)
    if path is None:
        return {}
    found: dict[str, set[str]] = {}
    for statement in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = ([t.id for t in statement.targets if isinstance(t, ast.Name)]
                   if isinstance(statement, ast.Assign) else
                   [statement.name] if isinstance(statement, ast.FunctionDef) else [])
        for node in ast.walk(statement):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Record"
                    and node.args):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                name = first.value
            elif isinstance(first, ast.JoinedStr) and isinstance(first.values[0], ast.Constant):
                name = str(first.values[0].value).split("/")[0]  # a folder of records
            else:
                continue
            for target in targets:
                found.setdefault(target, set()).add(name)
    return found


def page_inputs(root: Path, page: Path) -> tuple[list[Path], list[str]]:
    """The book's own modules a page imports, at any depth, and the records of `book/results/`
    that its cells and those modules name."""
    modules, names, strings = names_in(code_of(page.read_text(encoding="utf-8"), page.name))
    seen: dict[str, Path] = {}
    waiting = sorted(modules)
    while waiting:
        module = waiting.pop()
        path = book_module_path(root, module)
        if module in seen or path is None:
            continue
        seen[module] = path
        more_modules, more_names, more_strings = names_in(path.read_text(encoding="utf-8"))
        waiting += sorted(more_modules - set(seen))
        if module != RECORDS_MODULE:  # the table of records names every record
            names |= more_names
            strings |= more_strings
    results = root / RESULTS_DIR
    existing = {path.name for path in results.iterdir()} if results.is_dir() else set()
    records = {file for name, files in record_files(root).items() if name in names
               for file in files} if RECORDS_MODULE in seen else set()
    records |= {text for text in strings if text in existing}
    return sorted(set(seen.values())), sorted(records)


def page_fingerprint(root: Path, page: Path) -> str:
    """A digest of the contents of what `page_inputs` finds for the page."""
    modules, records = page_inputs(root, page)
    digest = hashlib.sha256()

    def add(paths: Iterable[Path]) -> None:
        for path in paths:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())

    add(modules)
    for name in records:
        target = root / RESULTS_DIR / name
        add(sorted(p for p in target.rglob("*") if p.is_file()) if target.is_dir()
            else [target] if target.is_file() else [])
    return digest.hexdigest()


def page_fingerprints(root: Path, pages: Iterable[Path]) -> dict[str, str]:
    """`page_fingerprint` of each page, by its path relative to `root`."""
    return {page.relative_to(root).as_posix(): page_fingerprint(root, page)
            for page in sorted(pages) if page.suffix == ".md"}


def drop_changed_pages(cache: Path, current: Mapping[str, str], root: Path) -> list[str]:
    """Drop from the jupyter cache the outputs of each page whose own key differs from the one
    they were computed with (`PAGES_STAMP`), record the new keys, and return those pages."""
    stamp = cache / PAGES_STAMP
    try:
        stored = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = {}
    changed = sorted(page for page, key in current.items() if stored.get(page) not in (None, key))
    changed += sorted(page for page in current if page not in stored and stored)
    if changed and (cache / "global.db").exists():
        from jupyter_cache import get_cache

        jupyter = get_cache(str(cache))
        paths = {str((root / page).resolve()) for page in changed}
        for record in jupyter.list_cache_records():
            if str(Path(record.uri).resolve()) in paths:
                jupyter.remove_cache(record.pk)
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(dict(current), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return changed


def changed_parts(stored: Mapping[str, str] | None, current: Mapping[str, str]) -> list[str]:
    """Why two fingerprints differ, in words."""
    if not stored:
        return ["no record of what the cached outputs were computed with"]
    words = {"package": f"the package source ({PACKAGE_DIR}) changed",
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
    """At the start of a build: drop cached outputs computed against another package or data,
    and those of each page whose own inputs changed."""
    root = Path(app.srcdir)
    current = execution_fingerprint(root)
    pages = page_fingerprints(root, (root / "book").glob("*.md"))
    app.scratchformer_execution = current  # type: ignore[attr-defined]
    app.scratchformer_pages = pages  # type: ignore[attr-defined]
    config = getattr(app.env, "mystnb_config", None)
    cache = Path(getattr(config, "execution_cache_path", "") or Path(app.outdir).parent / ".jupyter_cache")
    reasons = refresh_execution_cache(cache, current)
    if reasons:
        logger.info(f"emptied the jupyter cache {cache}: {'; '.join(reasons)}")
    dropped = drop_changed_pages(cache, pages, root)
    if dropped:
        logger.info(f"dropped the cached outputs of {', '.join(dropped)}: a module of scratchbook "
                    "or a record it reads changed")


def outdated_pages(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Every page, when the pages were last read against another package or data; else the
    pages whose own inputs changed since they were read."""
    current = getattr(app, "scratchformer_execution", None)
    if current is None:
        return []
    if getattr(env, "scratchformer_execution", None) != current:
        logger.info("re-reading every page: they were executed against another package or other data")
        return sorted(env.found_docs)
    pages = getattr(app, "scratchformer_pages", {})
    read = getattr(env, "scratchformer_pages", None) or {}
    stale = sorted(docname for docname in env.found_docs
                   if read.get(f"{docname}.md") != pages.get(f"{docname}.md"))
    if stale:
        logger.info(f"re-reading {', '.join(stale)}: a module of scratchbook or a record it reads changed")
    return stale


def remember_execution(app: Sphinx, env: Any) -> None:
    """Record, in the environment Sphinx saves once reading has succeeded, what pages were read against."""
    env.scratchformer_execution = getattr(app, "scratchformer_execution", None)
    env.scratchformer_pages = getattr(app, "scratchformer_pages", None)
