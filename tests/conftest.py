"""Shared fixtures: every numeric test runs on each available device; the book is built once."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path

# One thread per process, for this process and the commands the tests start (set before torch is
# imported, which reads it once). The tests' tensors are tiny: a second intra-op thread buys
# nothing, and on a busy two-core machine its spin-waiting made a 300-step training of a toy
# GPT take 130 ms a step instead of 6. Export OMP_NUM_THREADS to choose otherwise; the book
# build (html_dir) runs with the environment as it was.
SET_THREADS = "OMP_NUM_THREADS" not in os.environ
if SET_THREADS:
    os.environ["OMP_NUM_THREADS"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# Test modules whose helpers other folders' tests import (toy data, tiny runs, scratch books, the
# command-line runner): importable by name from anywhere under tests/, whichever file runs first.
for folder in ("book", "package/models", "runs"):
    if str(ROOT / "tests" / folder) not in sys.path:
        sys.path.insert(0, str(ROOT / "tests" / folder))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the built book is a `book` test, so `-m "not book"` (make test-fast) skips it.

    `make test` runs the `book` tests in one pytest process (it builds the book once; two
    processes building into one `_build/` would spoil each other's output) beside
    TEST_WORKERS pytest-xdist processes for the rest. The tests under tests/browser/ are also `browser` tests: they time
    the pages' boxes in Chromium, so `make test` runs them last, alone on the machine."""
    for item in items:
        if "html_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.book)
        if item.path.parent.name == "browser":
            item.add_marker(pytest.mark.browser)


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
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import book
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
    finally:
        sys.path.remove(str(ROOT / "tools"))
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


def book_environment() -> dict[str, str]:
    """The environment the tests started with: the chapters run (and time) as `make book` runs them."""
    environment = dict(os.environ)
    if SET_THREADS:
        environment.pop("OMP_NUM_THREADS", None)
    return environment


ZH_DIR = "zh"  # the Chinese edition's site, under the English one (tools/translations.py)


@pytest.fixture(scope="session")
def html_dir() -> Path:
    """Build the whole book once per test session (warnings are errors), both editions, as
    `make book` does; return `_build/html` (the Chinese edition is `_build/html/zh`).

    The build caches executed chapters in `_build/.jupyter_cache`, so only changed chapters run;
    the Chinese edition reads them from there and runs nothing.
    """
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
    return ROOT / "_build" / "html"


FILLER = ["the", "movie", "plot", "actor", "scene", "was", "a", "and", "camera", "story"]
POSITIVE = ["great", "wonderful", "loved", "superb"]
NEGATIVE = ["awful", "boring", "hated", "terrible"]


def toy_texts(count: int, seed: int) -> tuple[list[str], list[int]]:
    rng = random.Random(seed)
    texts, labels = [], []
    for i in range(count):
        label = i % 2
        words = [rng.choice(FILLER) for _ in range(rng.randint(4, 25))]
        words.insert(rng.randint(0, len(words)), rng.choice(POSITIVE if label else NEGATIVE))
        texts.append(" ".join(words) + ".<br /><br />The end.")
        labels.append(label)
    return texts, labels


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


def run_under_torchrun(tmp_path: Path, arguments: list[str]) -> subprocess.CompletedProcess:
    """`scratchformer ARGUMENTS` as two CPU processes under torchrun, on a free local
    port, one thread each; the finished process (its output captured)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    runner = tmp_path / "run_cli.py"
    runner.write_text("import sys\nfrom scratchformer.cli.commands import main\nsys.exit(main())\n")
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1",
               "--nproc_per_node=2", "--master_addr=127.0.0.1", f"--master_port={port}",
               str(runner), *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
