"""Shared fixtures: every numeric test runs on each available device; the book is built once.

The helpers the tests share are in tests/support/ (`from support import ROOT`; pyproject.toml puts
tests/ and tools/ on pytest's path); no test file imports another or changes sys.path.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

from support import ROOT, book_environment  # first: it sets one thread per process before torch

import pytest  # noqa: E402
import torch  # noqa: E402

from support.toy import toy_texts  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the built book is a `book` test, so `-m "not book"` (make test-fast) skips it.

    `make test` runs the `book` tests in one pytest process (it builds the book once; two
    processes building into one `_build/` would spoil each other's output) beside
    TEST_WORKERS pytest-xdist processes for the rest. The tests under tests/browser/ are also
    `browser` tests (they open the built pages in Chromium); those that time how a page responds
    are marked `quiet` where they are written, and `make test` runs them last, alone on the
    machine, collecting tests/browser/ only (the whole suite took 9 s to collect): a `quiet`
    test elsewhere is refused."""
    for item in items:
        if "html_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.book)
        if item.path.parent.name == "browser":
            item.add_marker(pytest.mark.browser)
        elif item.get_closest_marker("quiet"):
            raise pytest.UsageError(f"{item.nodeid} is marked quiet outside tests/browser/, where "
                                    "make test's last pass, alone on the machine, looks for them")


def pytest_terminal_summary(terminalreporter) -> None:
    """The skipped tests in one line, counted by reason (`197 skipped: 196 no CUDA device on this
    machine, 1 ...`): `make test` and `make prepare` list failures (`-rfE`), not the expected skips."""
    skipped = terminalreporter.stats.get("skipped", [])
    reasons: dict[str, int] = {}
    for report in skipped:
        why = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        why = why.removeprefix("Skipped: ")
        reasons[why] = reasons.get(why, 0) + 1
    if reasons:
        counted = sorted(reasons.items(), key=lambda item: -item[1])
        terminalreporter.write_line(f"{len(skipped)} skipped: " + ", ".join(f"{n} {why}" for why, n in counted))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """A failure names the chapter lines behind it: each generated line its traceback runs through,
    or, when it runs through none (a wrong value computed correctly by the package's code), the
    chapter lines that define the package names the test uses and that hold the values it checks."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.when != "call":
        return
    text = str(report.longrepr)
    try:
        import book  # tools/ is on the tests' path (pyproject.toml)
        from book.where import tested_places

        places = sorted({(m.group("path")[m.group("path").index("src/"):], int(m.group("line")))
                         for m in book.GENERATED_LINE.finditer(text)})
        if places:
            found = book.origins(ROOT)
            title = "generated lines -> chapter lines (edit the chapter)"
            mapped = [f"{path}:{line} comes from {book.chapter_line(ROOT, path, line, found)}"
                      for path, line in places]
        else:
            title = "no generated line in the traceback: the chapter lines this test checks"
            crash = getattr(report.longrepr, "reprcrash", None)
            mapped = tested_places(ROOT, text + (f"\n{crash.path}:{crash.lineno}" if crash else ""))
    except Exception as err:  # a chapter that does not export: say so, do not hide the failure
        title, mapped = "chapter lines", [f"(cannot map the failure to chapters: {err})"]
    if mapped:
        report.sections.append((title, "\n".join(mapped)))


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
    """Build the whole book once per test session (warnings are errors), both editions, as
    `make book` does; return `_build/html` (the Chinese edition is `_build/html/zh`).

    The build caches executed chapters in `_build/.jupyter_cache`, so only changed chapters run;
    the Chinese edition reads them from there and runs nothing. With BOOK_BUILT=1 the book is
    read as it is, unbuilt again (a build with nothing to run still takes 10-15 s): where it was
    built from this tree a moment before, by `make test`'s book pass for its timed pass, by
    `make book` for CI's newcomer pass.
    """
    html = ROOT / "_build" / "html"
    if os.environ.get("BOOK_BUILT") == "1":
        missing = [str(page) for page in (html / "index.html", html / "zh" / "index.html") if not page.is_file()]
        if missing:
            pytest.fail(f"BOOK_BUILT=1, but the book is not built ({', '.join(missing)} missing): run `make book`")
        return html
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run(
        [str(jupyter_book), "build", "--warningiserror", "--keep-going", str(ROOT)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=book_environment(),
    )
    assert result.returncode == 0, f"book build failed:\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "translations.py"), "build"],
        capture_output=True, text=True, cwd=ROOT, env=book_environment(),
    )
    assert result.returncode == 0, (
        f"the Chinese edition's build failed:\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}")
    return html


@pytest.fixture(scope="session")
def toy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small IMDB-shaped folder with train, test and unsup files; unsup repeats a test text."""
    folder = tmp_path_factory.mktemp("toy-imdb")
    for split, (count, seed) in {"train": (120, 1), "test": (40, 2)}.items():
        texts, labels = toy_texts(count, seed)
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as handle:
            for text, label in zip(texts, labels):
                handle.write(json.dumps({"text": text, "label": label}) + "\n")
    unlabeled, _ = toy_texts(200, 3)
    unlabeled.append(toy_texts(40, 2)[0][5])  # also a test review: must never be trained on
    with gzip.open(folder / "unsup.jsonl.gz", "wt", encoding="utf-8") as handle:
        for text in unlabeled:
            handle.write(json.dumps({"text": text}) + "\n")
    return folder
