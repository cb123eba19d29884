"""The notebook loop: a chapter edited as a notebook in Jupyter and merged back.

A save from Jupyter (jupytext writing the `.md`) changes only what was edited, not the front
matter's order or wrapping and not the tags' quoting (scratchbook.notebook_saves, the save hook
`make venv` configures); a merge whose conflict markers were resolved in the chapter is
recognised as such, and `--merge-notebook` never puts markers inside markers.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext.config import load_jupytext_configuration_file

from support import ROOT
from support.scratch import both_sides_changed, run_check, run_export

import book
from scratchbook.notebook_saves import keep_unchanged_text

CONFIG = load_jupytext_configuration_file(str(ROOT / "jupytext.toml"))


def saved_by_jupyter(text: str, edit=None) -> str:
    """What Jupyter, through jupytext, writes for a chapter opened as a notebook (`edit` changes
    the notebook first)."""
    notebook = nbformat.reads(nbformat.writes(jupytext.reads(text, fmt="md:myst")), as_version=4)
    if edit:
        edit(notebook)
    return jupytext.writes(notebook, fmt="md:myst", config=CONFIG)


def changed_lines(old: str, new: str) -> list[str]:
    return [line for line in difflib.unified_diff(old.split("\n"), new.split("\n"), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


@pytest.mark.parametrize("page", book.toc_chapters(ROOT))
def test_a_save_from_jupyter_that_changed_nothing_leaves_the_page_as_it_was(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    assert keep_unchanged_text(text, saved_by_jupyter(text)) == text


def test_jupytext_alone_would_restyle_a_chapter() -> None:
    """What the hook is for: jupytext reorders the front matter and re-wraps `export_doc:`."""
    text = (ROOT / "book" / "04_self_attention.md").read_text(encoding="utf-8")
    assert len(changed_lines(text, saved_by_jupyter(text))) >= 10


@pytest.mark.parametrize("page", ["book/01_tokenization.md", "book/04_self_attention.md"])
def test_a_save_from_jupyter_changes_only_the_edited_lines(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")

    def edit(notebook) -> None:
        cell = [c for c in notebook.cells if c.cell_type == "code"][2]
        cell.source += "\n# an edit made in Jupyter"
        notebook.metadata["export_doc"] = notebook.metadata["export_doc"]  # as it came

    assert changed_lines(text, keep_unchanged_text(text, saved_by_jupyter(text, edit))) == [
        "+# an edit made in Jupyter"]


@pytest.mark.slow  # starts a Jupyter server (seconds); `make test` runs it
def test_a_save_through_a_jupyter_server_keeps_the_chapters_text(tmp_path: Path) -> None:
    """The loop as a contributor runs it: the chapter opened as a notebook in JupyterLab
    (`make lab`), a cell edited, saved. Jupyter reads its configuration from the virtual
    environment, where `make venv` puts the save hook."""
    config = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.json"
    if not Path(sys.executable).with_name("jupyter-server").exists():
        pytest.skip("JupyterLab is not installed in this environment: run `make venv` again")
    assert "scratchbook.notebook_saves.keep_chapter_text" in config.read_text(encoding="utf-8"), (
        f"{config} does not configure the save hook: run `make venv` again")
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "04_self_attention.md", tmp_path / "book")
    shutil.copy(ROOT / "jupytext.toml", tmp_path)
    before = (tmp_path / "book" / "04_self_attention.md").read_text(encoding="utf-8")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("jupyter-server")), "--no-browser", "--allow-root", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=loop", f"--ServerApp.root_dir={tmp_path}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "HOME": str(tmp_path)})

    def call(method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/contents/{path}", method=method,
            data=None if body is None else json.dumps(body).encode("utf-8"),
            headers={"Authorization": "token loop", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    try:
        for _ in range(1200):  # the server starts in seconds; a busy machine may take minutes
            try:
                call("GET", "")
                break
            except OSError:
                if server.poll() is not None:
                    break
                time.sleep(0.25)
        model = call("GET", "book/04_self_attention.md?type=notebook&content=1")
        assert model["type"] == "notebook", "jupytext opens the chapter as a notebook"
        cell = [c for c in model["content"]["cells"] if c["cell_type"] == "code"][2]
        cell["source"] += "\n# an edit made in Jupyter"
        call("PUT", "book/04_self_attention.md", {"type": "notebook", "content": model["content"]})
    finally:
        server.terminate()
        log = server.communicate(timeout=60)[0]
    after = (tmp_path / "book" / "04_self_attention.md").read_text(encoding="utf-8")
    assert changed_lines(before, after) == ["+# an edit made in Jupyter"], log[-3000:]


def conflicted_merge(tmp_path: Path) -> tuple[Path, Path]:
    """A chapter and its notebook that changed the same cell differently, merged: the chapter
    holds both versions between markers."""
    root, md = both_sides_changed(tmp_path)
    assert run_export(root, "--merge-notebook", "book/a.ipynb").returncode == 0
    assert md.read_text().count("<<<<<<< ") == 1
    return root, md


def resolve(md: Path, keep: str) -> None:
    """Resolve the conflict by hand, keeping the version with `keep` and dropping the markers."""
    lines = md.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("<<<<<<< "))
    middle = next(i for i, line in enumerate(lines) if line == "=======")
    end = next(i for i, line in enumerate(lines) if line.startswith(">>>>>>> "))
    ours, theirs = lines[start + 1:middle], lines[middle + 1:end]
    kept = ours if any(keep in line for line in ours) else theirs
    while kept and kept[0] in ("", "+++"):
        kept = kept[1:]
    while kept and kept[-1] in ("", "+++"):
        kept = kept[:-1]
    md.write_text("\n".join(lines[:start] + kept + lines[end + 1:]))


def test_a_merge_resolved_in_the_chapter_is_not_advised_to_be_merged_again(tmp_path: Path) -> None:
    """The trap: after the markers were resolved by hand, `make check` said both sides changed and
    advised `--merge-notebook` again, which nested the markers; the way out was deleting the
    notebook. The notebook now holds nothing the chapter lacks: it is stale, and says so."""
    root, md = conflicted_merge(tmp_path)
    resolve(md, "return a + b + 1")
    text = md.read_text()
    assert "<<<<<<<" not in text and "return a + b + 1" in text and "return b + a" not in text
    assert book.notebook_state(root, "book/a.md") == "chapter"
    result = run_check(root)
    assert "book/a.ipynb: the notebook is stale" in result.stderr, result.stderr
    assert "export.py --merge-notebook" not in result.stderr, "no advice to merge again"
    assert run_export(root, "--merge-notebook", "book/a.ipynb").returncode == 0, "merging again is harmless"
    assert md.read_text() == text, "and writes nothing into the chapter"
    assert book.notebook_state(root, "book/a.md") is None
    assert "<<<<<<<" not in (root / "book" / "a.ipynb").read_text()


def test_a_merge_resolved_in_the_notebook_is_carried_into_the_chapter(tmp_path: Path) -> None:
    root, md = conflicted_merge(tmp_path)
    notebook_path = root / "book" / "a.ipynb"
    notebook = jupytext.read(notebook_path)
    markers = [i for i, c in enumerate(notebook.cells) if c.source.startswith(("<<<<<<<", "=======", ">>>>>>>"))]
    del notebook.cells[markers[1]:markers[2] + 1]  # keep the chapter's version
    del notebook.cells[markers[0]]
    jupytext.write(notebook, notebook_path)
    assert book.notebook_state(root, "book/a.md") == "notebook"
    assert run_export(root, "--merge-notebook", "book/a.ipynb").returncode == 0
    text = md.read_text()
    assert "<<<<<<<" not in text and "return b + a" in text and "return a + b + 1" not in text


def test_merging_again_never_puts_markers_inside_markers(tmp_path: Path) -> None:
    root, md = conflicted_merge(tmp_path)
    notebook_path = root / "book" / "a.ipynb"
    notebook = jupytext.read(notebook_path)
    notebook.cells[-1].source += "\n# one more edit in the notebook"
    jupytext.write(notebook, notebook_path)
    assert run_export(root, "--merge-notebook", "book/a.ipynb").returncode == 0, "the notebook's edit alone"
    text = md.read_text()
    assert text.count("<<<<<<< ") == 1 and "# one more edit in the notebook" in text
    # Both sides change the cell in conflict again: merging now would nest the markers.
    notebook = jupytext.read(notebook_path)
    cell = next(c for c in notebook.cells if "return b + a" in c.source)
    cell.source = cell.source.replace("return b + a", "return b + a + 2")
    jupytext.write(notebook, notebook_path)
    md.write_text(text.replace("return b + a", "return b + a + 3"))
    before = md.read_text()
    result = run_export(root, "--merge-notebook", "book/a.ipynb")
    assert result.returncode == 2 and "a merge conflict marker" in result.stderr
    assert "Resolve those in the chapter first" in result.stderr
    assert md.read_text() == before, "no markers inside markers"
