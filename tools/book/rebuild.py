"""Sphinx extension: a page is read again whenever what it shows could be out of date.

Loaded by tools/book/site.py (and on its own by the tests' scratch books). Sphinx reads a page
again when its source file is newer than the last read. Two cases slip through that test:

- the page's source file changed, not its time: a notebook `book/05_scaling.ipynb` beside
  `book/05_scaling.md` was the page (Sphinx prefers it), then was deleted; the `.md`, older than
  the last read, was not read, and the site kept serving the notebook's HTML. The file each
  page was read from is recorded, and a page whose file is now another is read again. (The
  book also excludes `*.ipynb`, so a notebook never becomes a page in the first place.)
- its cells failed to run: with `nb_execution_raise_on_error: false` the build goes on to run
  the other chapters and fails at the end, listing every failure (`--keep-going`,
  `--warningiserror`), but Sphinx has saved the failed page, and the next build, seeing no
  change, would have served it with a green build. A page whose execution failed is read (and
  executed) again. A build in which cells failed ends with an error that names every failing
  page, with or without `--warningiserror`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def source_of(env: Any, docname: str) -> str:
    return Path(env.doc2path(docname)).as_posix()


def remember_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """Record the file a page is read from."""
    sources = getattr(app.env, "page_sources", None)
    if sources is None:
        sources = app.env.page_sources = {}
    sources[docname] = source_of(app.env, docname)


def execution_failed(env: Any, docname: str) -> bool:
    data = getattr(env, "nb_metadata", {}).get(docname, {}).get("exec_data") or {}
    return data.get("succeeded") is False


def stale_pages(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Pages read from another file than the one that is their source now, or whose cells failed."""
    sources = getattr(env, "page_sources", {})
    stale = []
    for docname in sorted(env.found_docs - added - changed):
        if docname in sources and sources[docname] != source_of(env, docname):
            logger.info(f"re-reading {docname}: its source is now {source_of(env, docname)}, "
                        f"it was read from {sources[docname]}")
            stale.append(docname)
        elif execution_failed(env, docname):
            logger.info(f"re-reading {docname}: its cells failed to run in the last build")
            stale.append(docname)
    return stale


def merge_sources(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    """Parallel reads: carry the workers' records into the main environment."""
    sources = getattr(env, "page_sources", None)
    if sources is None:
        sources = env.page_sources = {}
    for docname in docnames:
        if docname in getattr(other, "page_sources", {}):
            sources[docname] = other.page_sources[docname]


def purge_source(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "page_sources", {}).pop(docname, None)


def fail_after_every_chapter_ran(app: Sphinx, exception: Exception | None) -> None:
    """End a build in which cells failed with an error naming every failing page, and exit status 1.

    Each failure is a warning (`nb_execution_raise_on_error: false`), which fails a build with
    `--warningiserror`; without that flag the build would otherwise end green.
    """
    if exception is not None:
        return
    failed = sorted(docname for docname in app.env.found_docs if execution_failed(app.env, docname))
    if failed:
        root = Path(app.srcdir)
        pages = [Path(app.env.doc2path(docname)).resolve().relative_to(root.resolve()).as_posix()
                 for docname in failed]
        logger.error(f"cells failed to run in {len(pages)} page{'s' * (len(pages) != 1)}: "
                     + ", ".join(pages) + " (each traceback is above, after \"Executing notebook failed\")")
        app.statuscode = 1  # Sphinx only ever raises it to 1 after this event


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", remember_source)
    app.connect("env-get-outdated", stale_pages)
    app.connect("env-merge-info", merge_sources)
    app.connect("env-purge-doc", purge_source)
    # After the other extensions have written the site (book.site at 400, the toc at 500).
    app.connect("build-finished", fail_after_every_chapter_ran, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
