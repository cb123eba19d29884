"""Sphinx extension: the chapters the cache lacks run side by side before Sphinx reads them.

MyST-NB runs a page's cells when Sphinx reads the page, one page at a time, so a cold build
of the book is one core's work: on two cores, chapters 11-13 took 31 of a real-data build's
37 minutes while the other core idled. Here, just before reading, every page to be read whose
code cells the jupyter cache does not hold is executed, `BOOK_JOBS` at a time (default 2,
never more than the machine's cores), and stored in the cache exactly as MyST-NB stores it;
Sphinx then reads each one from the cache. `BOOK_JOBS=1` leaves execution to MyST-NB.

The kernels share the cores: each gets the machine's cores divided by `BOOK_JOBS` as its
intra-op threads (`OMP_NUM_THREADS`, which torch and NumPy's BLAS read), unless that is set
already. Two kernels of two threads each on two cores spin-wait on each other: the appendix
"Models that count" fitted its two baselines in 3 s alone and in 53 s beside chapter 13.

What this deliberately does not handle: a page that failed here, or whose notebook metadata
overrides MyST-NB's settings, is left to MyST-NB, which runs it again as before and reports
its traceback (a failing chapter costs its time twice); kernel name aliases
(`nb_kernel_rgx_aliases`, which the book does not set).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Mapping
from contextlib import nullcontext
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

JOBS_ENV = "BOOK_JOBS"
THREADS_ENV = "OMP_NUM_THREADS"


def execution_jobs(environ: Mapping[str, str] = os.environ) -> int:
    """How many chapters run at once: `$BOOK_JOBS`, else 2; at most the machine's cores."""
    value = environ.get(JOBS_ENV, "2")
    try:
        jobs = int(value)
    except ValueError:
        raise ValueError(f"{JOBS_ENV} must be a whole number of chapters run at once, "
                         f"not {value!r}") from None
    if jobs < 1:
        raise ValueError(f"{JOBS_ENV} must be at least 1, not {jobs}")
    return min(jobs, os.cpu_count() or 1)


def kernel_threads(jobs: int, environ: Mapping[str, str] = os.environ) -> str:
    """`$OMP_NUM_THREADS` for each of `jobs` kernels that run at once: as set, else the
    machine's cores shared among them (at least one each)."""
    return environ.get(THREADS_ENV) or str(max(1, (os.cpu_count() or 1) // jobs))


def run_notebook(notebook: Any, cwd: str | None, timeout: int | None,
                 allow_errors: bool, threads: str) -> tuple[Any, float, str | None]:
    """Execute `notebook` in a fresh kernel (in a worker process) with `threads` intra-op
    threads; return it with its outputs, the seconds it took and, when it failed, why."""
    from jupyter_cache.executors.utils import single_nb_execution

    os.environ[THREADS_ENV] = threads  # the kernel inherits this worker's environment
    started = time.perf_counter()
    with TemporaryDirectory() if cwd is None else nullcontext(cwd) as folder:
        try:
            # the kernel's own log (its warning, on every start, that a local connection is
            # not encrypted) is not the chapter's output, and hid the build's report of it
            result = single_nb_execution(notebook, cwd=folder, timeout=timeout,
                                         allow_errors=allow_errors, meta_override=True,
                                         extra_arguments=["--IPKernelApp.log_level=ERROR"])
        except Exception as err:  # a dead kernel, say: MyST-NB runs the page again and reports it
            return notebook, time.perf_counter() - started, f"{type(err).__name__}: {err}"
    failure = None if result.err is None else type(result.err).__name__
    return result.nb, result.time, failure


def uncached_notebooks(env: Any, docnames: list[str], cache: Any) -> list[tuple]:
    """`(docname, path, notebook, read format)` of each page to read whose cells the cache lacks,
    read as MyST-NB reads it."""
    from myst_nb.core.read import create_nb_reader

    pending = []
    for docname in docnames:
        path = Path(env.doc2path(docname))
        text = path.read_text(encoding="utf-8")
        reader = create_nb_reader(str(path), env.myst_config, env.mystnb_config, text)
        if reader is None:
            continue  # a plain Markdown page: nothing to run
        notebook = reader.read(text)
        if env.mystnb_config.metadata_key in notebook.metadata:
            continue  # its own settings: MyST-NB applies them
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:
            pending.append((docname, path, notebook, reader.read_fmt))
    return pending


def execute_ahead(app: Sphinx, env: Any, docnames: list[str]) -> None:
    """Before reading: run the pages the cache lacks, `BOOK_JOBS` at a time, into the cache."""
    config = getattr(env, "mystnb_config", None)
    jobs = execution_jobs()
    if config is None or config.execution_mode != "cache" or jobs < 2:
        return
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.cache.db import NbProjectRecord

    cache = get_cache(config.execution_cache_path or ".jupyter_cache")
    pending = uncached_notebooks(env, docnames, cache)
    if len(pending) < 2:
        return  # nothing to run side by side
    threads = kernel_threads(jobs)
    logger.info(f"executing {len(pending)} pages, {jobs} at a time "
                f"({threads} thread{'' if threads == '1' else 's'} each): "
                + ", ".join(docname for docname, *_ in pending))
    context = multiprocessing.get_context("spawn")  # a fresh process, not a copy of Sphinx
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        # The last pages first: chapters 11-13, which train models, take most of the time, and
        # started last they left one core idle at the end (the pages of a cold build, as timed
        # there, fill two cores for 174 s in the book's order and 158 s from its end)
        futures = {
            pool.submit(run_notebook, notebook,
                        None if config.execution_in_temp else str(path.parent),
                        config.execution_timeout, config.execution_allow_errors, threads):
            (docname, path, read_fmt)
            for docname, path, notebook, read_fmt in reversed(pending)}
        for future in as_completed(futures):
            docname, path, read_fmt = futures[future]
            try:
                notebook, seconds, failure = future.result()
            except Exception as err:  # the worker itself died (memory, say)
                notebook, seconds, failure = None, 0.0, f"{type(err).__name__}: {err}"
            if failure is not None:
                logger.info(f"{docname} failed here ({failure}) after {seconds:.0f} s: "
                            "it runs again as the page is read, which reports why")
                continue
            record = (cache.add_nb_to_project(str(path), read_data=read_fmt) if read_fmt
                      else cache.add_nb_to_project(str(path)))
            NbProjectRecord.remove_tracebacks([record.pk], cache.db)
            cache.cache_notebook_bundle(
                CacheBundleIn(notebook, record.uri, data={"execution_seconds": seconds}),
                check_validity=False, overwrite=True)
            logger.info(f"executed {docname} in {seconds:.0f} s")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-before-read-docs", execute_ahead)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
