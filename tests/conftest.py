"""Shared fixtures: every numeric test runs on each available device; the book is built once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the built book is a `book` test, so `-m "not book"` (make test-fast) skips it."""
    for item in items:
        if "html_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.book)


@pytest.fixture(
    params=[
        "cpu",
        pytest.param(
            "cuda",
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
        ),
    ]
)
def device(request: pytest.FixtureRequest) -> torch.device:
    """A torch device: `cpu` always, `cuda` when one is present."""
    return torch.device(request.param)


@pytest.fixture(scope="session")
def html_dir() -> Path:
    """Build the whole book once per test session (warnings are errors); return `_build/html`.

    The build caches executed chapters in `_build/.jupyter_cache`, so only changed chapters run.
    """
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run(
        [str(jupyter_book), "build", "--warningiserror", "--keep-going", str(ROOT)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, f"book build failed:\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    return ROOT / "_build" / "html"
