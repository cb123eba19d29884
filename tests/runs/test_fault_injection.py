"""The appendix "Running it for real" ("Failing safely"): a training run killed or interrupted
anywhere, even mid-save, resumes exactly.

A wrapper script, written by the test, runs the real command line with one function
wrapped so that the run pauses at a chosen point and says so in a marker file; the test
then sends SIGKILL or SIGINT, resumes the run with the real `scratchformer` command, and
compares weights and results with a run that was never interrupted. The first run of a
failed overwrite is made through the command's `main` in this process (`support.runs.cli`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from support.runs import installed_cli, refused, timeless
from support.toy import toy_reviews, write_jsonl

WRAPPER = '''
import signal, sys, time
from pathlib import Path
import scratchformer.runs.checkpoint as checkpoint
import scratchformer.cli.commands as cli
import scratchformer.train.loop as train

# Ctrl-C raises KeyboardInterrupt, and a closed terminal stops the run, whatever the shell that
# started the tests did with SIGINT and SIGHUP (a background job starts its children with SIGINT
# ignored, `nohup` with SIGHUP ignored, and the command rightly leaves an ignored signal ignored).
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGHUP, signal.SIG_DFL)

marker, point, count, args = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4:]
calls = []


def pause(where):
    marker.write_text(where)
    time.sleep(600)


if point == "save":  # pause halfway through writing the count-th last.pt
    write_atomically = checkpoint.write_atomically

    def paused_write(path, write):
        def half_then_pause(handle):
            if Path(path).name == "last.pt":
                calls.append(path)
                if len(calls) == count:
                    handle.write(b"PK half a checkpoint")
                    handle.flush()
                    pause(f"saving {path}")
            write(handle)

        write_atomically(path, half_then_pause)

    checkpoint.write_atomically = paused_write
else:  # pause after the count-th optimizer step has been checked, before it is applied
    check_step = train.check_step

    def paused_check(loss, grad_norm, step, lr):
        check_step(loss, grad_norm, step, lr)
        if step + 1 == count:
            pause(f"step {count}")

    train.check_step = paused_check
sys.exit(cli.main(args))
'''


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("faults")
    data = root / "data"
    data.mkdir()
    write_jsonl(data / "train.jsonl", toy_reviews(48, seed=1))  # 40 to train on: 5 batches of 8
    write_jsonl(data / "test.jsonl", toy_reviews(16, seed=2))
    (root / "wrapper.py").write_text(WRAPPER)
    setup = {"root": root, "data": data, "cache": root / "cache"}
    baseline = root / "baseline"
    result = installed_cli(*command(setup, baseline))
    assert result.returncode == 0, result.stderr[-3000:]
    setup["baseline"] = baseline
    return setup


def command(setup: dict, out: Path, *more: str) -> list[str]:
    return ["train-imdb", "--data", str(setup["data"]), "--out", str(out), "--config", "tiny", "--epochs", "3",
            "--set", "evals_per_epoch=2", "--device", "cpu", "--cache", str(setup["cache"]), "--no-progress",
            "--threads", "1", *more]


def start_paused(setup: dict, out: Path, point: str, count: int, *more: str) -> tuple[subprocess.Popen, str]:
    """Start the wrapped command and wait until it pauses; return it and where it paused."""
    marker = out.parent / f"{out.name}.paused"
    process = subprocess.Popen([sys.executable, str(setup["root"] / "wrapper.py"), str(marker), point, str(count),
                                *command(setup, out, *more)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 600
    while not marker.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the run never paused: {process.communicate()}")
        time.sleep(0.05)
    return process, marker.read_text()


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


def assert_same_run(out: Path, baseline: Path) -> None:
    for name in ("best.pt", "last.pt"):
        ours, theirs = (torch.load(f / name, weights_only=True) for f in (out, baseline))
        assert ours["model"].keys() == theirs["model"].keys()
        for key in ours["model"]:
            assert torch.equal(ours["model"][key], theirs["model"][key]), (name, key)
    ours, theirs = (json.loads((f / "results.json").read_text()) for f in (out, baseline))
    assert timeless(ours) == timeless(theirs)
    assert sorted(os.listdir(out)) == ["best.pt", "last.pt", "results.json"], "no lock, no temporary file"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signal_number", "point", "count", "holds"),
    [
        (signal.SIGKILL, "save", 2, "epoch 1"),  # halfway through writing epoch 2's last.pt
        (signal.SIGINT, "save", 2, "epoch 1"),
        (signal.SIGKILL, "step", 8, "epoch 1"),  # in the middle of epoch 2
        (signal.SIGINT, "step", 13, "epoch 2"),  # in the middle of epoch 3
        (signal.SIGTERM, "step", 13, "epoch 2"),  # kill, a scheduler, a shutdown
        (signal.SIGHUP, "save", 2, "epoch 1"),  # the terminal closed
    ],
    ids=["sigkill-during-save", "sigint-during-save", "sigkill-mid-epoch", "sigint-mid-epoch", "sigterm-mid-epoch",
         "sighup-during-save"],
)
def test_an_interrupted_run_resumes_to_the_same_result(setup: dict, tmp_path: Path, signal_number: int,
                                                       point: str, count: int, holds: str) -> None:
    out = tmp_path / "run"
    process, paused = start_paused(setup, out, point, count)
    if point == "step":  # while it runs, nobody else gets the folder
        refused(installed_cli(*command(setup, out, "--resume")), f"in use by another run (process {process.pid}")
    process.send_signal(signal_number)
    stdout, stderr = process.communicate(timeout=120)
    last = torch.load(out / "last.pt", weights_only=True)["training"]
    assert f"epoch {last['epoch']}" == holds, "last.pt is the last complete one, not half a new one"
    if signal_number != signal.SIGKILL:  # every signal that stops a run is Ctrl-C
        assert process.returncode == 128 + signal_number, (stdout, stderr)
        assert f"last.pt is intact and holds the run after {holds}" in stdout and "--resume" in stdout
        assert "Traceback" not in stderr and not temporaries(out) and not (out / ".lock").exists()
    else:
        assert process.returncode == -signal.SIGKILL
        assert (out / ".lock").exists() and (point != "save" or temporaries(out)), paused
    resumed = installed_cli(*command(setup, out, "--resume"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming {out} after epoch {last['epoch']}" in resumed.stdout
    if signal_number == signal.SIGKILL:  # the dead run's lock is cleared, and said so
        assert f"cleared {out / '.lock'}: process {process.pid}" in resumed.stdout, resumed.stdout
        assert "is no longer running (a run that was killed)" in resumed.stdout
    assert_same_run(out, setup["baseline"])


@pytest.mark.slow
def test_a_second_command_waits_for_a_running_overwrite_and_sigterm_puts_the_old_run_back(
        setup: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(setup["baseline"], out)
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    process, _ = start_paused(setup, out, "step", 3, "--overwrite", "--set", "seed=1")
    assert (out / ".replaced-run").is_dir(), "the old run is set aside while the new one trains"
    for other in ("--overwrite", "--resume"):  # a live run, not one "killed before it finished"
        second = installed_cli(*command(setup, out, other))
        refused(second, f"is in use by another run (process {process.pid}")
        assert "killed" not in second.stderr and ".replaced-run" not in second.stderr, second.stderr
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, (stdout, stderr)
    assert "holds the run it was to replace again, as it was" in stdout and "Traceback" not in stderr
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before, "no lock, no .replaced-run"


@pytest.mark.slow
def test_an_interrupt_before_the_first_checkpoint_leaves_nothing_to_resume(setup: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    process, _ = start_paused(setup, out, "step", 2)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and "nothing to resume" in stdout, (stdout, stderr)
    assert not out.exists(), "the folder the run made, empty, is gone with its lock"
    again = installed_cli(*command(setup, out))
    assert again.returncode == 0, again.stderr[-3000:]
    assert_same_run(out, setup["baseline"])
