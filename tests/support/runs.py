"""The `scratchformer` command as the tests run it, and the arguments of its tiny runs.

`cli` calls the command's `main` in this process, with its own stdin, stdout, stderr,
environment and working folder: what a test of the command's logic needs (what it writes,
what it refuses and with which message and status), without starting Python and torch again
for every call (about 1.7 s of CPU each). `installed_cli` runs the installed console script in
a subprocess, as a user does: for what only a process shows (the entry point, exit statuses
set by the interpreter, signals, a crash that would end the process, resource limits).
"""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from scratchformer.cli.commands import main

SCRIPT = Path(sys.executable).with_name("scratchformer")


@dataclass
class Finished:
    """What a finished command left: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def exit_status(code: object, stderr: io.StringIO) -> int:
    """The status a process exiting with `sys.exit(code)` would have (a message goes to stderr)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)
    return 1


def cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> Finished:
    """`scratchformer ARGS` run in this process; what it printed and its exit status.

    An exception the command does not turn into a message propagates and fails the test, as a
    traceback would fail `refused`. The process's working folder, environment, torch threads
    and random number generators are as they were afterwards.
    """
    stdout, stderr = io.StringIO(), io.StringIO()
    saved_stdin, saved_env, saved_cwd = sys.stdin, dict(os.environ), os.getcwd()
    saved_threads = torch.get_num_threads()
    saved_random = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode("utf-8")), encoding="utf-8")
    os.environ.update(env or {})
    try:
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(stdout), redirect_stderr(stderr):
            try:
                status = main(list(args))
            except SystemExit as stop:  # argparse's usage errors, --help
                status = exit_status(stop.code, stderr)
    finally:
        sys.stdin = saved_stdin
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        torch.set_num_threads(saved_threads)
        random.setstate(saved_random[0])
        np.random.set_state(saved_random[1])
        torch.set_rng_state(saved_random[2])
    return Finished(status, stdout.getvalue(), stderr.getvalue())


def installed_cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
                  timeout: float = 600, **options: object) -> subprocess.CompletedProcess:
    """Run the installed `scratchformer` command in a subprocess; its output and exit status."""
    if not SCRIPT.exists():
        pytest.skip("the scratchformer console script is not installed here (pip install -e .)")
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, input=stdin,
                          env={**os.environ, **(env or {})}, timeout=timeout, **options)


def refused(result: Finished | subprocess.CompletedProcess, *phrases: str) -> None:
    """The command stopped with status 2 and a message holding each phrase, not a traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout[-2000:], result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    for phrase in phrases:
        assert phrase in result.stderr, (phrase, result.stderr[-3000:])


# --- tiny runs -------------------------------------------------------------------------------


def tiny(data: Path, out: Path, cache: Path, *more: str) -> list[str]:
    return ["train-imdb", "--data", str(data), "--out", str(out), "--config", "tiny", "--device", "cpu",
            "--cache", str(cache), "--no-progress", "--threads", "1", *more]


def timeless(results: dict) -> dict:
    """What a run computed, without what depends on the clock and the command line."""
    clock = {"seconds", "tokens_per_second"}
    return {"history": [{k: v for k, v in r.items() if k not in clock} for r in results["history"]],
            "test": results["test"], "validation": results["validation"], "best_step": results["best_step"]}


def dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)


def tiny_run_arguments(toy_dir: Path, out: Path, cache: Path) -> list[str]:
    return ["train-gpt", "--data", str(toy_dir), "--out", str(out), "--config", "tiny",
            "--device", "cpu", "--val-documents", "20", "--tokenizer-documents", "100",
            "--heldout", "10", "--cache", str(cache), "--no-progress", "--threads", "1"]


def pretrain_arguments(toy_dir: Path, out: Path) -> list[str]:
    return ["pretrain", "--data", str(toy_dir), "--out", str(out), "--config", "tiny",
            "--device", "cpu", "--val-documents", "20", "--tokenizer-documents", "100",
            "--no-progress", "--threads", "1"]


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
