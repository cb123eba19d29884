"""Appendix "Running it for real", "Failing safely": `--overwrite` replaces a run only once the
new one has finished.

Each trainer (`train-imdb`, chapter 11; `train-gpt`, chapter 12; `pretrain`, chapter 13) makes
a run, then `--overwrite` starts another that fails late, after the old run was set aside and the
new one had written files: a divergence, Ctrl-C (a real SIGINT), a disk that fills up, a setting
refused only when training starts. The old run must be byte-identical afterwards, with nothing
added. A wrapper script runs the real command line with one fault injected at a chosen step.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scratchformer.io.files import this_host
from scratchformer.runs.folders import SET_ASIDE, FolderLocked, ReplacedRun, check_run_folder
from support.runs import cli, dead_pid

FAULTY = '''
import errno, os, signal, sys
import scratchformer.cli.commands as cli
import scratchformer.train.loop as loop

# Ctrl-C raises KeyboardInterrupt whatever the shell that started the tests did with SIGINT.
signal.signal(signal.SIGINT, signal.default_int_handler)
fault, at_step, args = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
check_step = loop.check_step


def full_disk(fd):
    raise OSError(errno.ENOSPC, "No space left on device")


def faulty_check(loss, grad_norm, step, lr):
    check_step(loss, grad_norm, step, lr)
    if step + 1 == at_step and fault == "others-write-then-ctrl-c":  # the user, generate --json
        out = args[args.index("--out") + 1]
        with open(os.path.join(out, "notes.txt"), "w") as handle:
            handle.write("the user's notes")
        os.makedirs(os.path.join(out, "samples"))
        with open(os.path.join(out, "samples", "one.json"), "w") as handle:
            handle.write("[]")
    if step + 1 == at_step and fault in ("ctrl-c", "others-write-then-ctrl-c"):
        os.kill(os.getpid(), signal.SIGINT)  # what the terminal sends
    if step + 1 == at_step and fault == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)  # what kill, a scheduler or a shutdown sends
    if step + 1 == at_step and fault == "full-disk":
        os.fsync = full_disk  # every file written from now on fails, as on a full disk


loop.check_step = faulty_check
sys.exit(cli.main(args))
'''

# What each fault does to the new run, and what the command must say.
FAULTS = {
    "diverges": (["--set", "lr=1e30"], "none", 2, "diverged"),
    "ctrl-c": ([], "ctrl-c", 130, "interrupted"),
    "full-disk": ([], "full-disk", 2, "is the disk full?"),
    "sigterm": ([], "sigterm", 143, "interrupted"),
}
CASES = [("train-imdb", fault) for fault in ("diverges", "ctrl-c", "full-disk", "sigterm")] + [
    (trainer, fault) for trainer in ("train-gpt", "pretrain") for fault in FAULTS]
FAST = {("train-imdb", "full-disk"), ("train-gpt", "ctrl-c"), ("pretrain", "sigterm")}


def arguments(trainer: str, data: Path, out: Path, cache: Path) -> list[str]:
    common = ["--data", str(data), "--out", str(out), "--config", "tiny", "--device", "cpu",
              "--no-progress", "--threads", "1"]
    return {
        "train-imdb": ["train-imdb", *common, "--no-test", "--epochs", "2", "--cache", str(cache),
                       "--set", "evals_per_epoch=2"],
        "train-gpt": ["train-gpt", *common, "--val-documents", "20", "--tokenizer-documents", "100",
                      "--heldout", "10", "--cache", str(cache)],
        "pretrain": ["pretrain", *common, "--val-documents", "20", "--tokenizer-documents", "100"],
    }[trainer]


def tree(folder: Path) -> dict[str, str]:
    """Every entry under `folder`, hidden ones included, with the sha256 of each file."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
            for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def first_runs(tmp_path_factory: pytest.TempPathFactory, toy_dir: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("overwrite")
    runs = {}
    for trainer in ("train-imdb", "train-gpt", "pretrain"):
        out = root / trainer
        made = cli(*arguments(trainer, toy_dir, out, root / "cache"))
        assert made.returncode == 0, made.stderr[-3000:]
        runs[trainer] = out
    return runs


@pytest.mark.parametrize(("trainer", "fault"), [
    pytest.param(*case, marks=() if case in FAST else pytest.mark.slow) for case in CASES])
def test_an_overwrite_that_fails_late_leaves_the_old_run_byte_identical(
        tmp_path: Path, toy_dir: Path, first_runs: dict[str, Path], trainer: str, fault: str) -> None:
    out = tmp_path / "run"
    shutil.copytree(first_runs[trainer], out)
    before = tree(out)
    script = tmp_path / "faulty.py"
    script.write_text(FAULTY)
    more, injected, status, message = FAULTS[fault]
    changed = ["--set", "seed=1"] + ([] if trainer == "train-imdb" else ["--tokenizer-documents", "50"])
    failed = subprocess.run(
        [sys.executable, str(script), injected, "3",
         *arguments(trainer, toy_dir, out, tmp_path / "cache"), "--overwrite", *changed, *more],
        capture_output=True, text=True, timeout=600)
    said = failed.stdout + failed.stderr
    assert failed.returncode == status and message in said, said[-3000:]
    assert "Traceback" not in failed.stderr, failed.stderr[-3000:]
    if fault == "batch-too-large":  # refused before the old run was set aside
        assert "replace" not in said, said[-3000:]
    else:
        assert "holds the run it was to replace again, as it was" in said, said[-3000:]
    assert tree(out) == before, "the old run is byte-identical, and nothing was added"


@pytest.mark.slow
@pytest.mark.parametrize("trainer", ["train-imdb", "train-gpt", "pretrain"])
def test_an_overwrite_that_finishes_replaces_every_file_of_the_old_run(
        tmp_path: Path, toy_dir: Path, first_runs: dict[str, Path], trainer: str) -> None:
    out = tmp_path / "run"
    shutil.copytree(first_runs[trainer], out)
    (out / "notes.txt").write_text("the user's own file")
    before = tree(out)
    again = cli(*arguments(trainer, toy_dir, out, tmp_path / "cache"), "--overwrite", "--set", "seed=1")
    assert again.returncode == 0, again.stderr[-3000:]
    after = tree(out)
    assert set(after) == set(before), "the same files, no .replaced-run left, no lock"
    assert after["notes.txt"] == before["notes.txt"]
    assert after["results.json"] != before["results.json"] and after["last.pt"] != before["last.pt"]


@pytest.mark.parametrize("trainer", ["train-imdb", pytest.param("pretrain", marks=pytest.mark.slow)])
def test_what_others_put_in_the_folder_survives_a_ctrl_c_during_an_overwrite(
        tmp_path: Path, toy_dir: Path, first_runs: dict[str, Path], trainer: str) -> None:
    out = tmp_path / "run"
    shutil.copytree(first_runs[trainer], out)
    before = tree(out)
    script = tmp_path / "faulty.py"
    script.write_text(FAULTY)
    failed = subprocess.run(
        [sys.executable, str(script), "others-write-then-ctrl-c", "3",
         *arguments(trainer, toy_dir, out, tmp_path / "cache"), "--overwrite", "--set", "seed=1"],
        capture_output=True, text=True, timeout=600)
    said = failed.stdout + failed.stderr
    assert failed.returncode == 130, said[-3000:]
    assert "holds the run it was to replace again, as it was; kept what this run did not write: " \
           "notes.txt, samples/" in said, said[-3000:]
    after = tree(out)
    assert (out / "notes.txt").read_text() == "the user's notes" and (out / "samples" / "one.json").read_text() == "[]"
    assert {k: v for k, v in after.items() if not k.startswith(("notes", "samples"))} == before


def test_a_batch_size_too_large_is_refused_before_the_old_run_is_set_aside(
        tmp_path: Path, toy_dir: Path, first_runs: dict[str, Path]) -> None:
    out = tmp_path / "run"
    shutil.copytree(first_runs["train-gpt"], out)
    before = tree(out)
    refused = cli(*arguments("train-gpt", toy_dir, out, tmp_path / "cache"), "--overwrite",
                  "--tokenizer-documents", "50", "--set", "batch_size=100000")
    assert refused.returncode == 2 and "make no batch" in refused.stderr, refused.stderr[-3000:]
    assert "replace" not in refused.stdout, "nothing was set aside, so nothing was put back"
    assert tree(out) == before


def test_replaced_run_puts_back_exactly_what_it_set_aside(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    for name, text in {"best.pt": "old best", "last.pt": "old last", "results.json": "{}",
                       "snapshot-4.pt": "old snapshot", "notes.txt": "mine"}.items():
        (out / name).write_text(text)
    before, said = tree(out), []
    with pytest.raises(KeyboardInterrupt):  # the new run writes its own files: they go
        with ReplacedRun(out, ["snapshot-*.pt", "tokenizer.json"], said.append):
            assert sorted(os.listdir(out / SET_ASIDE)) == ["best.pt", "last.pt", "results.json", "snapshot-4.pt"]
            for name in ("last.pt", "snapshot-8.pt", "tokenizer.json"):
                (out / name).write_text("new")
            raise KeyboardInterrupt
    assert tree(out) == before and said == [f"the new run did not finish: {out} holds the run it was "
                                            "to replace again, as it was"]
    with pytest.raises(KeyboardInterrupt):
        with ReplacedRun(out, ["snapshot-*.pt"], said.append):
            (out / "last.pt").write_text("new")
            (out / "later.txt").write_text("another command's")  # appears while the run runs
            (out / "samples").mkdir()
            raise KeyboardInterrupt
    assert said[-1].endswith("as it was; kept what this run did not write: later.txt, samples/")
    assert {k: v for k, v in tree(out).items() if k not in ("later.txt", "samples")} == before
    (out / "later.txt").unlink()
    (out / "samples").rmdir()
    with ReplacedRun(out, ["snapshot-*.pt"], said.append) as replaced:
        (out / "last.pt").write_text("new")
        replaced.commit()
    assert sorted(os.listdir(out)) == ["last.pt", "notes.txt"] and (out / "last.pt").read_text() == "new"


def test_a_killed_overwrite_is_reported_with_both_ways_out(tmp_path: Path) -> None:
    (tmp_path / SET_ASIDE).mkdir()
    (tmp_path / SET_ASIDE / "best.pt").write_text("old")
    with pytest.raises(ValueError, match="was killed before it finished: to keep the old run, move"):
        check_run_folder(tmp_path, resume=False, overwrite=True)
    lock = tmp_path / ".lock"
    lock.write_text(json.dumps({"pid": dead_pid(), "host": this_host()}))  # what the killed run left
    with pytest.raises(ValueError, match=f"killed before it finished \\(the lock {lock} that it left is "
                                         "cleared by the next command\\): to keep the old run"):
        check_run_folder(tmp_path, resume=False, overwrite=True)


def test_an_overwrite_that_is_running_is_not_called_killed(tmp_path: Path) -> None:
    (tmp_path / SET_ASIDE).mkdir()  # a live --overwrite has set its old run aside
    (tmp_path / ".lock").write_text(json.dumps({"pid": os.getpid(), "host": "another-machine"}))
    for resume, overwrite in ((False, True), (True, False)):
        with pytest.raises(FolderLocked, match="is in use by another run") as refused:
            check_run_folder(tmp_path, resume=resume, overwrite=overwrite)
        assert "killed" not in str(refused.value) and SET_ASIDE not in str(refused.value)


def test_a_folder_with_only_a_pretraining_snapshot_is_a_run(tmp_path: Path) -> None:
    (tmp_path / "snapshot-250.pt").write_text("a snapshot")
    with pytest.raises(ValueError, match=r"already holds a run \(snapshot-250.pt\)"):
        check_run_folder(tmp_path, resume=False, overwrite=False, own=["snapshot-*.pt"])
