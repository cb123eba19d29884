"""What every training command does around its own work, in one place: join the processes
(`torchrun`), lock the run's folder, set an old run aside under `--overwrite` once every check
has passed, write `results.json` atomically and only then delete the old run; and on the way
out, whatever happened, put the old run back unless the new one finished, say what an
interrupted run can resume (exit status 130), and leave the process group.

`train-imdb`, `train-gpt` and `pretrain` each run their work inside one `CommandRun`.

Written by hand, not exported: the appendix "Running it for real", section "Failing safely",
describes it. What this module deliberately does not handle: the commands' own checks and
records, and runs that span several machines beyond what `torchrun` sets up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

import torch
import torch.distributed as dist

from scratchformer.measure.evaluation import is_distributed
from scratchformer.runs.folders import (RESULTS_FILE, FolderLock, ReplacedRun, check_run_folder,
                                        write_json)
from scratchformer.runs.hardware import join_processes


class CommandRun:
    """One run of a training command in the folder `out`, as a `with` block.

    Inside it, `rank`, `world_size` and `say` (print on rank 0 only) are set; rank 0 holds
    the folder's lock. `set_old_run_aside()` starts replacing an old run (`--overwrite`);
    `finish(results)` writes `results.json` and completes the replacement. Ctrl-C ends the
    block with `status` 130 and `advice(out)` said; any other error propagates, after the
    old run is put back.

    Described in the appendix "Running it for real", section "Failing safely".
    """

    def __init__(self, out: Path, device: torch.device, resume: bool, overwrite: bool,
                 own_files: Sequence[str], advice: Callable[[Path], str]) -> None:
        self.out, self.device, self.resume, self.overwrite = out, device, resume, overwrite
        self.own_files, self.advice = list(own_files), advice
        self.held = contextlib.ExitStack()
        self.replaced: ReplacedRun | None = None
        self.status = 0

    def __enter__(self) -> CommandRun:
        self.rank, self.world_size, self.say = join_processes(self.device)
        try:
            if self.rank == 0:
                self.held.enter_context(FolderLock(self.out))  # one run per folder
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
        try:
            self.held.close()  # first put back a run that --overwrite was replacing
            if kind is KeyboardInterrupt:
                self.say(self.advice(self.out))
                self.status = 130
        finally:
            if is_distributed():
                dist.destroy_process_group()
        return kind is KeyboardInterrupt
