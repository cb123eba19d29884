"""What every training command does around its own work, in one place: join the processes
(`torchrun`), lock the run's folder, set an old run aside under `--overwrite` once every check
has passed, write `results.json` atomically and only then delete the old run; and on the way
out, whatever happened, put the old run back unless the new one finished (or finished its
training: then both are kept), say what an interrupted run can resume (exit status 128 plus
the signal's number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP), and leave the process
group. SIGTERM and SIGHUP stop a command as Ctrl-C does (`stop_signals_interrupt`), and a
signal that arrives while the old run is being put back waits until it is back.

`train-imdb`, `train-gpt` and `pretrain` each run their work inside one `CommandRun`.

Written by hand, not exported: the appendix "Running it for real", section "Failing safely",
describes it. What this module deliberately does not handle: the commands' own checks and
records, and runs that span several machines beyond what `torchrun` sets up.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

import torch
import torch.distributed as dist

from scratchformer.measure.evaluation import is_distributed
from scratchformer.runs.folders import (RESULTS_FILE, SET_ASIDE, FolderLock, ReplacedRun,
                                        check_run_folder, write_json)
from scratchformer.runs.hardware import join_processes


STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")  # Ctrl-C, `kill`, a closed terminal


class Interrupted(KeyboardInterrupt):
    """A stop signal other than Ctrl-C (SIGTERM, SIGHUP), raised where the program was, as
    Ctrl-C raises `KeyboardInterrupt`: the same clean-up runs.

    Described in the appendix "Running it for real", section "Failing safely".
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupted_status(error: KeyboardInterrupt) -> int:
    """The exit status a shell gives a process ended by the signal: 128 plus its number.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return 128 + getattr(error, "signum", signal.SIGINT)


def _stop_handlers(handler: Callable) -> dict[int, object]:
    """Install `handler` for each stop signal that is not ignored (`nohup` ignores SIGHUP,
    a background job SIGINT); return the handlers it replaced."""
    if threading.current_thread() is not threading.main_thread():
        return {}  # only the main thread may set handlers
    replaced = {}
    for name in STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            replaced[number] = signal.signal(number, handler)
    return replaced


@contextlib.contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Interrupted`, and SIGINT
    `KeyboardInterrupt`: every signal that stops a run leaves it as Ctrl-C does.

    Described in the appendix "Running it for real", section "Failing safely".
    """

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt if signum == signal.SIGINT else Interrupted(signum)

    replaced = _stop_handlers(stop)
    try:
        yield
    finally:
        for number, handler in replaced.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def stop_signals_deferred(interrupted: bool) -> Iterator[None]:
    """Within the block, a stop signal is noted, not acted on (putting an old run back
    is not interrupted half-way); after it, one is raised as `stop_signals_interrupt`
    would have, unless the block runs because of an interruption already.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    received: list[int] = []
    replaced = _stop_handlers(lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        for number, handler in replaced.items():
            signal.signal(number, handler)
    if received and not interrupted:
        signum = received[0]
        raise KeyboardInterrupt if signum == signal.SIGINT else Interrupted(signum)


class CommandRun:
    """One run of a training command in the folder `out`, as a `with` block.

    Inside it, `rank`, `world_size` and `say` (print on rank 0 only) are set; rank 0 holds
    the folder's lock. `set_old_run_aside()` starts replacing an old run (`--overwrite`);
    `trained()` marks the training complete (from then on no error throws the new run
    away); `finish(results)` writes `results.json` and completes the replacement. Ctrl-C,
    SIGTERM or SIGHUP ends the block with `status` 128 plus the signal's number and
    `advice(out)` said; any other error propagates, after the old run is put back.

    Described in the appendix "Running it for real", section "Failing safely".
    """

    def __init__(self, out: Path, device: torch.device, resume: bool, overwrite: bool,
                 own_files: Sequence[str], advice: Callable[[Path], str]) -> None:
        self.out, self.device, self.resume, self.overwrite = out, device, resume, overwrite
        self.own_files, self.advice = list(own_files), advice
        self.held = contextlib.ExitStack()
        self.replaced: ReplacedRun | None = None
        self.complete = False
        self.status = 0

    def __enter__(self) -> CommandRun:
        self.rank, self.world_size, self.say = join_processes(self.device)
        try:
            if self.rank == 0:  # one run per folder; a dead run's lock is cleared
                self.held.enter_context(FolderLock(self.out, self.say))
                check_run_folder(self.out, self.resume, self.overwrite, self.own_files)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def set_old_run_aside(self) -> None:
        """Under `--overwrite`, on rank 0: move the old run's files aside, to be deleted
        by `finish` and put back if the block ends without it."""
        if self.overwrite and self.rank == 0:
            self.replaced = self.held.enter_context(
                ReplacedRun(self.out, self.own_files, self.say))

    def trained(self) -> None:
        """The new run's training is complete: an error from here on (while testing, or
        writing the results) keeps it, and keeps the run it was to replace beside it."""
        self.complete = True

    def finish(self, results: dict) -> None:
        """On rank 0: write `results.json` (strict JSON, atomically), then delete the old
        run that `--overwrite` set aside."""
        if self.rank != 0:
            return
        write_json(self.out / RESULTS_FILE, results)
        self.say(f"wrote {self.out / RESULTS_FILE}")
        if self.replaced is not None:
            self.replaced.commit()  # the new run is complete: the old one goes now

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> bool:
        interrupted = kind is not None and issubclass(kind, KeyboardInterrupt)
        replaced = self.replaced
        unfinished = (kind is not None and replaced is not None
                      and not replaced.committed and bool(replaced.names))
        try:
            with stop_signals_deferred(interrupted):
                if unfinished and self.complete:
                    replaced.keep_both()
                    self.say(
                        f"the new run finished training but not its results: it stays in "
                        f"{self.out}, and the run it was to replace in "
                        f"{self.out / SET_ASIDE}. To keep the new run, delete "
                        f"{self.out / SET_ASIDE} and continue with --resume (only what "
                        f"follows training is redone); to keep the old one, move the files "
                        f"of {self.out / SET_ASIDE} back into {self.out}, replacing the "
                        "new ones")
                self.held.close()  # first put back a run that --overwrite was replacing
                if interrupted:
                    if unfinished and not self.complete:
                        self.say("interrupted before the new run finished; start it again "
                                 "with --overwrite")
                    elif not unfinished or not self.complete:
                        self.say(self.advice(self.out))
                    self.status = interrupted_status(error)
        finally:
            if is_distributed():
                dist.destroy_process_group()
        return interrupted
