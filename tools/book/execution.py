"""The executed chapters keyed on what they ran against (part of the book's Sphinx extension).

Jupyter's cache knows only a chapter's own cells, so a change in chapter 4's exported function
re-ran chapter 4 and served chapter 5 from the cache. The fingerprint here covers the package's
source, the recorded runs the chapters read (`book/results/`), the figures' style and the IMDB
data (`IMDB_DIR`, `SCRATCHFORMER_REQUIRE_IMDB`); when it changes, the cache is emptied and
every page is read again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

PACKAGE_DIR = "src/scratchformer"
RESULTS_DIR = "book/results"
FIGURE_STYLE = "book/matplotlibrc"  # every chapter's figures are drawn with it
# Kept inside the cache folder, so that a cache restored elsewhere (CI) carries its own record.
EXECUTION_STAMP = "scratchformer-fingerprint.json"


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
