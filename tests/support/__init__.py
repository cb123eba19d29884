"""What the tests share, imported by name (`from support import ROOT`; pyproject.toml puts
tests/ on pytest's path): no test file imports another.

- this module: the repository's root, the book's tools, the environment a book build runs in;
- `support.pages`: the numbers each page glues, the pages in reading order, the translated ones;
- `support.scratch`: scratch books and copies of the repository, and the exporter run on them;
- `support.toy`: toy reviews and the small models and folders the package tests train on;
- `support.runs`: the `scratchformer` command as the tests run it, and the arguments of tiny runs;
- `support.web`: the exported models' sessions and the page's tokenizer under node.

Fixtures are shared through tests/conftest.py (and tests/browser/conftest.py for the browser's).
"""

from __future__ import annotations

import importlib
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


def tools(name: str) -> ModuleType:
    """A module of the book's tooling (tools/): `tools("book")`, `tools("translations")`."""
    folder = str(ROOT / "tools")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


def book_environment() -> dict[str, str]:
    """The environment the tests started with: the chapters run (and time) as `make book` runs them."""
    environment = dict(os.environ)
    if SET_THREADS:
        environment.pop("OMP_NUM_THREADS", None)
    return environment
