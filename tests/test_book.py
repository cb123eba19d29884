"""The book build is a test: every cell runs, warnings are errors, glued numbers reach the HTML."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

# Numbers each chapter's prose quotes through {glue:text}; they must appear on the rendered page.
EXPECTED_IN_HTML: dict[str, list[str]] = {
    "book/04_self_attention.html": ["0.691", "0.154", "0.807", "0.855", "0.048", "0.952"],
    "book/05_scaling.html": ["32,860", "217,110", "0.276", "0.124", "0.112", "0.151", "0.337", "0.930", "-0.60"],
    "book/06_causal_masking.html": ["0.0420 / 0.1142 / 0.8438", "0.2689 / 0.7311 / 0.0000", "0.3775 / 0.6225", "[nan, nan]"],
    "book/07_dropout.html": ["0.50, 0.00, 0.50, 0.00"],
    "book/08_multi_head.html": ["0.80", "0.45"],
    "book/09_transformer_block.html": [
        "0.655", "0.0607", "0.507", "1.603", "-0.873", "0.304", "-0.020", "-1.522",
        "0.0728", "0.059", "-0.170", "4,722,432", "2,360,064", "7,085,568", "85,026,816", "3072",
    ],
}


def visible_text(page: Path) -> str:
    raw = page.read_text(encoding="utf-8")
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", raw))


@pytest.fixture(scope="module")
def html_dir() -> Path:
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run(
        [str(jupyter_book), "build", "--warningiserror", "--keep-going", str(ROOT)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, f"book build failed:\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    return ROOT / "_build" / "html"


@pytest.mark.book
def test_book_index_exists(html_dir: Path) -> None:
    assert (html_dir / "index.html").is_file()


@pytest.mark.book
@pytest.mark.parametrize("page", sorted(EXPECTED_IN_HTML))
def test_glued_numbers_are_rendered(html_dir: Path, page: str) -> None:
    text = visible_text(html_dir / page)
    missing = [number for number in EXPECTED_IN_HTML[page] if number not in text]
    assert not missing, f"{page} does not show {missing}"
    assert "{glue:" not in text, f"{page} has an unresolved glue role"
