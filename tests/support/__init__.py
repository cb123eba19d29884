"""What the tests share, imported by name (`from support import ROOT`; pyproject.toml puts
tests/ and tools/ on pytest's path): no test file imports another or changes sys.path.

- this module: the repository's root, the environment a book build runs in, a record script;
- `support.pages`: the numbers each page glues, the pages in reading order, the translated ones;
- `support.scratch`: scratch books and copies of the repository, and the exporter run on them;
- `support.toy`: toy reviews and the small models and folders the package tests train on;
- `support.runs`: the `scratchformer` command as the tests run it, and the arguments of tiny runs;
- `support.web`: the exported models' sessions and the page's tokenizer under node.

Fixtures are shared through tests/conftest.py (and tests/browser/conftest.py for the browser's).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
ZH_DIR = "zh"  # the Chinese edition's site, under the English one (tools/translations.py)

# One thread per process, for the tests' process and the commands they start (set before torch
# is imported, which reads it once). The tests' tensors are tiny: a second intra-op thread buys
# nothing, and on a busy two-core machine its spin-waiting made a 300-step training of a toy
# GPT take 130 ms a step instead of 6. Export OMP_NUM_THREADS to choose otherwise; the book
# build runs with the environment as it was (`book_environment`).
SET_THREADS = "OMP_NUM_THREADS" not in os.environ
if SET_THREADS:
    os.environ["OMP_NUM_THREADS"] = "1"


@functools.cache
def record_script(name: str) -> ModuleType:
    """The script tools/records/NAME.py as a module, to call its functions. It is loaded as
    `python tools/records/NAME.py` runs it, its folder first on the path, so it finds the
    scripts it imports (`paired_tests`); the folder leaves the path once it is loaded, so no
    test's imports are resolved there."""
    folder = str(ROOT / "tools" / "records")
    spec = importlib.util.spec_from_file_location(f"records.{name}", ROOT / "tools" / "records" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def book_environment() -> dict[str, str]:
    """The environment the tests started with: the chapters run (and time) as `make book` runs them."""
    environment = dict(os.environ)
    if SET_THREADS:
        environment.pop("OMP_NUM_THREADS", None)
    return environment
