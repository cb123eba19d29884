"""Checked argument types for the scripts of `benchmarks/` and `tools/records/`.

A bad value is refused by argparse itself (exit status 2, one line `prog: error: argument
--x: ...`), before the script imports torch or does any work, and before it writes anything:
counts must be positive, a record's file must be writable where it is asked for, a run's
folder must hold a run of the kind the script reads. `benchmarks/script_arguments.py` is a
part of the book's own package, so the two folders' scripts import the same module.

    parser.add_argument("--rounds", type=positive_int, default=10)
    parser.add_argument("--json", type=output_file)
    parser.add_argument("--run", type=run_folder("train-gpt"), required=True)

What this deliberately does not check: what only reading a checkpoint can tell (its weights,
its format marker); the scripts' readers refuse those with the file named.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from scratchbook.record import RESULTS, Record
from scratchformer.cli.args import non_negative_int, positive_int, seed_int  # the commands' own

__all__ = ["checkpoint", "device", "existing_file", "existing_folder", "non_negative_int",
           "output_file", "output_file_in_new_folder", "positive_float", "positive_int",
           "pretrain_objective", "refuse", "run_folder", "seed_int"]

RUN_KINDS = ("train-imdb", "train-gpt", "pretrain")


def positive_float(text: str) -> float:
    """An argparse type: a number above 0 (`inf` included: no time limit)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def existing_folder(text: str) -> Path:
    """An argparse type: a folder that exists."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text} does not exist")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return path


def existing_file(text: str) -> Path:
    """An argparse type: a file that exists."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text} does not exist")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text} is not a file")
    return path


def writable_folder(folder: Path, text: str) -> None:
    """Refuse a folder no file can be created in: probed by creating a temporary file there
    and removing it (`os.access` says yes to root even where the file system says no)."""
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".write-probe-")
    except OSError as err:
        raise argparse.ArgumentTypeError(
            f"cannot write {text}: the folder {folder} refuses new files "
            f"({err.strerror or err})") from None
    os.close(handle)
    os.unlink(probe)


def output_file(text: str) -> Path:
    """An argparse type: a file to write, in a folder that exists and takes new files; not a
    folder itself. Checked before the work, so a long run never ends unable to save."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; name the file to write")
    folder = path.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(
            f"cannot write {text}: the folder {folder} does not exist" if not folder.exists()
            else f"cannot write {text}: {folder} is a file, not a folder")
    writable_folder(folder, text)
    return path


def record_argument(parser: argparse.ArgumentParser, default: Record) -> None:
    """`--record`, the JSON file a record script writes: the book's file of `default` when not
    given, checked by `default_record` after parsing."""
    parser.add_argument("--record", type=output_file, default=None,
                        help=f"JSON file to write (default: {RESULTS / default.name})")


def default_record(parser: argparse.ArgumentParser, record: Path | None, default: Record) -> Path:
    """`--record` as given, or the book's file of `default` checked as `output_file` checks a
    given one (an error names `--record`, as argparse would)."""
    if record is not None:
        return record
    try:
        return output_file(str(default.path))
    except argparse.ArgumentTypeError as err:
        parser.error(f"argument --record: {err}")


def output_file_in_new_folder(text: str) -> Path:
    """`output_file`, but the folders on the way may be missing (the script creates them):
    the nearest one that exists must be a folder that takes new files."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; name the file to write")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: {folder} is a file, not a folder")
    writable_folder(folder, text)
    return path


def device(text: str) -> str:
    """An argparse type: `cpu`, `cuda` or `cuda:N`, refused where that device is absent.
    Imports torch only for a CUDA device."""
    if text == "cpu":
        return text
    kind, _, index = text.partition(":")
    if kind != "cuda" or (index and not index.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a device: cpu, cuda or cuda:N")
    import torch

    if not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(f"{text}: no CUDA device is available here")
    if index and int(index) >= torch.cuda.device_count():
        raise argparse.ArgumentTypeError(
            f"{text}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return text


def run_kind(folder: Path) -> str:
    """The command that made the run in `folder` (`train-imdb`, `train-gpt` or `pretrain`),
    read from its `results.json`; a ValueError saying what is wrong otherwise."""
    results = folder / "results.json"
    if not results.is_file():
        raise ValueError(f"{folder} holds no results.json: not a finished run")
    try:
        record = json.loads(results.read_text(encoding="utf-8"))
        words = shlex.split(record["command"])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError, KeyError,
            ValueError) as err:
        raise ValueError(f"{results} is not a run's record ({type(err).__name__}: {err})"
                         ) from None
    for word, command in zip(words, words[1:]):
        if Path(word).name == "scratchformer" and command in RUN_KINDS:
            return command
    raise ValueError(f"{results}: its command is not one of scratchformer's "
                     f"{', '.join(RUN_KINDS)}")


def run_folder(kind: str, files: tuple[str, ...] = ("best.pt",),
               results_optional: bool = False) -> Callable[[str], Path]:
    """An argparse type: the folder of a finished run of `scratchformer <kind>`, holding
    `files` (a `train-gpt` run's reader also wants its `tokenizer.json`). With
    `results_optional`, a folder without `results.json` is taken on its files alone (a
    snapshot set beside a run's tokenizer); one with it must still be of the right kind."""
    if kind not in RUN_KINDS:
        raise ValueError(f"kind must be one of {RUN_KINDS}, got {kind!r}")

    def checked(text: str) -> Path:
        folder = existing_folder(text)
        try:
            found = (kind if results_optional and not (folder / "results.json").exists()
                     else run_kind(folder))
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        if found != kind:
            raise argparse.ArgumentTypeError(f"{text} is a {found} run, not a {kind} run")
        missing = [name for name in files if not (folder / name).is_file()]
        if missing:
            raise argparse.ArgumentTypeError(f"{text} has no {' or '.join(missing)}")
        return folder

    return checked


def refuse(message: str) -> NoReturn:
    """Refuse an argument that only the work's first step could check (a length beyond the
    model's context, more reviews than the data holds) as argparse refuses the others:
    `prog: error: message` on stderr, exit status 2, before anything is written."""
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def checkpoint(kind: str) -> Callable[[str], Path]:
    """An argparse type: a checkpoint file (its format is checked by the script's reader), or
    the folder of a finished run of `scratchformer <kind>` holding its `best.pt`."""
    folder_of_run = run_folder(kind)

    def checked(text: str) -> Path:
        path = Path(text).expanduser()
        return folder_of_run(text) if path.is_dir() else existing_file(text)

    return checked


def pretrain_objective(folder: Path) -> str | None:
    """The objective (`mlm` or `electra`) of the pretrain run in `folder`, from its
    `results.json`; None for a folder that holds no finished pretrain run."""
    try:
        if run_kind(folder) != "pretrain":
            return None
    except ValueError:
        return None
    settings = json.loads((folder / "results.json").read_text(encoding="utf-8")).get("settings")
    return settings.get("objective") if isinstance(settings, dict) else None
