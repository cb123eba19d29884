"""A training run's folder, as the appendix "Running it for real" of *Transformers from
Scratch* keeps it safe.

One run per folder (a lock file, created atomically, naming its process and host); a
folder that holds a run is refused unless the run is resumed or overwritten, and cleared
only then; `last.pt` records fingerprints of the data and the length of the schedule, and
a resumed run is checked against them; the command a run records, as it ran and as a
reader would type it; a record written as strict JSON, atomically; and what an interrupted
run has left to resume.

Written by hand, not exported: the appendix describes it in its section
"Failing safely" and names this file.

A lock left by a process of this host that is no longer running is cleared, with a
message; one left by another host is reported, not taken over (only the user knows whether
that run is still going).

What this module deliberately does not handle: file systems where creating a file is not
atomic, locks on file systems without `flock` (the takeover of a dead run's lock uses it),
and writing checkpoints (`scratchformer.runs.checkpoint`).
"""

import json
import os
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from torch import Tensor

from scratchformer.data.batches import ReviewLoader, WindowedReviews
from scratchformer.io.files import (process_is_running, remove_stale_temporaries, this_host,
                                    write_atomically)
from scratchformer.io.fingerprint import tensors_sha256
from scratchformer.runs.checkpoint import (BEST_CHECKPOINT, LAST_CHECKPOINT,
                                           read_checkpoint)
from scratchformer.runs.provenance import check_same_run

try:
    import fcntl
except ImportError:  # Windows: no flock, and no stale lock is ever recognised there
    fcntl = None


PATH_OPTIONS = ("--data", "--out", "--init", "--checkpoint", "--judge", "--cache",
                "--runs")


def reader_path(option: str, path: str) -> str:
    """`path`, given to `option`, as a reader would write it: no folder of this machine.

    Described in the appendix "Running it for real", section "The command line".
    """
    parts = PurePosixPath(path).parts
    name = PurePosixPath(path).name  # "" for ".", "./" and "/"
    if option == "--data":  # the IMDB folder, or a file in it (a name with a suffix)
        return f"$IMDB_DIR/{name}" if "." in name.strip(".") else "$IMDB_DIR"
    if not path.startswith("/") and ".." not in parts:
        return path  # already relative to the repository
    if "runs" not in parts:
        return str(PurePosixPath("runs", name if name not in ("", "..") else "run"))
    tail = parts[len(parts) - parts[::-1].index("runs"):]  # after the last runs/
    return str(PurePosixPath("runs", *tail))


def reader_command(argv: Sequence[str]) -> str:
    """The command `argv` as the pages show it: data as `$IMDB_DIR`, runs under `runs/`.

    Described in the appendix "Running it for real", section "The command line".
    """
    shown, option = [], ""
    for word in argv:
        name, equals, value = word.partition("=")
        if option in PATH_OPTIONS:
            word = reader_path(option, word)
        elif equals and name in PATH_OPTIONS:
            word = f"{name}={reader_path(name, value)}"
        shown.append(word)
        option = word
    return " ".join(shell_word(word) for word in shown)


def write_json(path: Path, record: dict) -> None:
    """Write `record` as indented JSON, atomically; NaN or infinity is refused, not written
    as the invalid JSON `NaN`.

    Described in the appendix "Running it for real", section "The command line".
    """
    text = json.dumps(record, indent=2, allow_nan=False) + "\n"
    write_atomically(path, lambda handle: handle.write(text.encode()))


def command_record(argv: Sequence[str]) -> dict[str, str]:
    """The two fields a results file records its command in: as shown, and as it ran.

    Described in the appendix "Running it for real", section "The command line".
    """
    return {"command": reader_command(argv), "command_as_run": shlex.join(argv)}


def shell_word(word: str) -> str:
    """`word` quoted for a POSIX shell, except that `$IMDB_DIR` stays a variable.

    Described in the appendix "Running it for real", section "The command line".
    """
    plain = word.replace("$IMDB_DIR", "IMDB_DIR", 1)
    return word if shlex.quote(plain) == plain else shlex.quote(word)


RESULTS_FILE = "results.json"
RUN_FILES = (BEST_CHECKPOINT, LAST_CHECKPOINT, RESULTS_FILE)


def missing_folders(path: Path) -> list[Path]:
    """`path` and those of its parents that do not exist yet, the deepest first: what
    making `path` would create.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return [folder for folder in (path, *path.parents) if not folder.exists()]


def remove_empty_folders(folders: Sequence[Path]) -> None:
    """Remove `folders` (the deepest first, as `missing_folders` lists them) for as long
    as each is empty: what a refused or failed command made and left unused.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    for folder in folders:
        if not folder.is_dir() or any(folder.iterdir()):
            break
        folder.rmdir()


class FolderLocked(RuntimeError):
    """A folder is held by another run, or by a lock whose owner cannot be checked.

    Described in the appendix "Running it for real", section "Failing safely".
    """


def lock_owner(lock: Path) -> tuple[int, str, str] | None:
    """`(pid, host, since)` of the process a lock file names; None if it names none
    (it is being written, or its writer was killed as it started).

    Described in the appendix "Running it for real", section "Failing safely".
    """
    try:
        owner = json.loads(lock.read_text())
        return int(owner["pid"]), str(owner["host"]), str(owner.get("since", "?"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def lock_is_stale(lock: Path) -> bool:
    """Whether `lock` names a process of this host that is no longer running.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    owner = lock_owner(lock)
    return owner is not None and not process_is_running(owner[1], owner[0])


class FolderLock:
    """Exclusive use of a folder: `with FolderLock(folder): ...` holds `folder/.lock`.

    The lock file is created atomically (`O_EXCL`: of two processes, exactly one
    succeeds) and names its owner's pid and host; it is removed on exit, with the folders
    it created if they are still empty. A lock whose process is gone (on this host) was
    left by a run that was killed: it is cleared, `log` says so, and the folder is taken.
    Two processes that find the same dead lock take it over one at a time (`flock` on the
    folder), so that only one of them gets the folder. A lock of another host, or one that
    names no owner, is reported, not taken over: only the user knows whether that run is
    still going.

    Described in the appendix "Running it for real", section "Failing safely".
    """

    name = ".lock"

    def __init__(self, folder: os.PathLike | str,
                 log: Callable[[str], None] = print) -> None:
        self.path = Path(folder) / self.name
        self.log = log

    def __enter__(self) -> "FolderLock":
        folder = self.path.parent
        self.made = missing_folders(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OSError(f"cannot create the folder {folder}: {err.strerror}") from None
        try:
            fd = self.create()
        except FileExistsError:
            fd = self.take_over()
        since = time.strftime("%Y-%m-%d %H:%M:%S")
        with os.fdopen(fd, "w") as handle:
            json.dump({"pid": os.getpid(), "host": this_host(), "since": since}, handle)
        return self

    def create(self) -> int:
        """The new lock file's descriptor; `FileExistsError` if there is one already."""
        try:
            return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            raise
        except OSError as err:
            raise OSError(f"cannot write in {self.path.parent}: {err.strerror}") from None

    def take_over(self) -> int:
        """Clear a lock left by a dead process of this host and create ours; refuse any
        other lock (`FolderLocked`, with who holds it and what to do)."""
        if fcntl is None or not lock_is_stale(self.path):
            raise FolderLocked(self.holder())
        folder = os.open(self.path.parent, os.O_RDONLY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)  # one takeover at a time
            owner = lock_owner(self.path)  # again: another process may have taken it
            if owner is None or process_is_running(owner[1], owner[0]):
                raise FolderLocked(self.holder())
            self.path.unlink(missing_ok=True)
            fd = self.create()
        except FileExistsError:  # a new run took the folder between the two steps
            raise FolderLocked(self.holder()) from None
        finally:
            os.close(folder)  # releases the flock
        pid, host, since = owner
        self.log(f"cleared {self.path}: process {pid} on {host}, which held it since "
                 f"{since}, is no longer running (a run that was killed)")
        return fd

    def __exit__(self, *exc_info: object) -> None:
        self.path.unlink(missing_ok=True)
        remove_empty_folders(self.made)  # a run refused before writing leaves none

    def holder(self) -> str:
        """Who holds the lock, and what to do about it."""
        return lock_holder(self.path)


def lock_holder(lock: Path) -> str:
    """Who holds the lock file `lock`, and what to do about it.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    folder, owner = lock.parent, lock_owner(lock)
    if owner is None:
        return (f"{folder} is locked by {lock}, which names no owner (a run is "
                "starting, or one was killed as it started); if no run uses "
                f"{folder}, delete {lock} and try again")
    pid, host, since = owner
    if process_is_running(host, pid):
        return (f"{folder} is in use by another run (process {pid} on {host}, since "
                f"{since}); wait for it to end, or use another folder")
    return (f"{folder} is locked by process {pid} on {host}, which is no longer "
            f"running: a run that crashed or was killed left {lock} behind. If no "
            f"other run uses {folder}, delete {lock} and try again (resume to "
            "continue that run)")


def loader_fingerprint(loader: object) -> str | None:
    """sha256 of a `ReviewLoader`'s reviews (ids and labels); None for other iterables.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    if not isinstance(loader, ReviewLoader):
        return None
    if isinstance(loader.ids, WindowedReviews):  # reviews read whole, in windows
        return tensors_sha256((loader.ids.windows, loader.ids.offsets, loader.labels))
    return tensors_sha256((loader.ids, loader.labels))


def data_description(train_loader: object, val_loader: object, total_steps: int) -> dict:
    """What `last.pt` records of the data, so that a resumed run can be checked.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return {
        "training reviews": loader_fingerprint(train_loader),
        "validation reviews": loader_fingerprint(val_loader),
        "batches per epoch": len(train_loader),
        "steps in all": total_steps,
    }


def check_training_state(state: object, path: Path, data: dict, log: Callable,
                         settings: tuple[dict, dict] | None = None) -> None:
    """Refuse to resume from a checkpoint without a training state, with other settings
    (`settings`: the run's then and now, compared first, so that a changed seed or
    dropout is named, not the data or the hash it changes) or with other data.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    if not isinstance(state, dict) or "optimizer" not in state:
        raise ValueError(f"{path} holds no training state to resume from (a best.pt "
                         "keeps the model only); resume from the run's own last.pt")
    kinds = {"train_config": dict, "optimizer": dict, "epoch": int, "step": int,
             "history": list, "best_val_accuracy": (int, float), "rng": Tensor}
    for key, kind in kinds.items():
        if not isinstance(state.get(key), kind):
            raise ValueError(f"{path}: the training state's {key!r} is missing or wrong")
    if settings is not None:
        check_same_run(path.parent, *settings)  # names only the fields that differ
        data = {key: value for key, value in data.items() if key != "config"}  # their hash
    saved = state.get("data")
    if saved is None:
        log(f"{path} does not record its data (an older checkpoint): not checked")
        return
    # A fingerprint is None where the loader is not a ReviewLoader: nothing to compare.
    known = [key for key in data if key in saved
             and not (key.endswith("reviews") and None in (saved[key], data[key]))]
    differ = [key for key in known if saved[key] != data[key]]
    if differ:
        counts = ", ".join(f"{key} {saved[key]} then, {data[key]} now" for key in differ
                           if not key.endswith("reviews"))
        named = ", ".join(differ[:-1]) + (" and " if len(differ) > 1 else "") + differ[-1]
        raise ValueError(
            f"cannot resume {path.parent}: its {named} differ from this run's"
            f"{f' ({counts})' if counts else ''}; resume with the same --data, --limit, "
            "--init, max_len and truncation, or start a new run"
        )


def run_files(folder: Path, own: Sequence[str] = ()) -> list[str]:
    """The files of a run that `folder` holds: `best.pt`, `last.pt`, `results.json` and
    those matching a command's `own` patterns (its tokenizer, snapshots), sorted.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    found = [path.name for pattern in (*RUN_FILES, *own) for path in folder.glob(pattern)]
    return sorted(set(found))


SET_ASIDE = ".replaced-run"


def check_run_folder(out: Path, resume: bool, overwrite: bool,
                     own: Sequence[str] = ()) -> None:
    """Refuse an `--out` that is a file, that another run holds (its lock, tried first),
    that holds a run (unless resuming or overwriting it), `--resume` without a `last.pt`,
    and a folder where an `--overwrite` was killed.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    lock = out / FolderLock.name
    ours = (lock_owner(lock) or ())[:2] == (os.getpid(), this_host())  # held by this run
    if lock.exists() and not ours and not lock_is_stale(lock):  # a live run: say only that
        raise FolderLocked(lock_holder(lock))
    if (out / SET_ASIDE).exists():
        left = (f" (the lock {lock} that it left is cleared by the next command)"
                if lock.exists() and not ours else "")
        raise ValueError(
            f"{out} holds a run that an --overwrite set aside in {out / SET_ASIDE} and "
            f"was killed before it finished{left}: to keep the old run, move the files "
            f"of {out / SET_ASIDE} back into {out} (replacing the new ones); to drop it, "
            f"delete {out / SET_ASIDE}")
    found = run_files(out, own) if out.is_dir() else []
    if resume and LAST_CHECKPOINT not in found:
        only = f" (only {', '.join(found)})" if found else ""
        raise FileNotFoundError(f"nothing to resume: no {out / LAST_CHECKPOINT}{only}")
    if found and not resume and not overwrite:
        listed = ", ".join(found)
        raise ValueError(f"{out} already holds a run ({listed}); continue it with "
                         "--resume, replace it with --overwrite, or pick another --out")


class ReplacedRun:
    """`--overwrite` that replaces the run in `out` only once the new one has finished.

    Entered, it moves the old run's files into `out/.replaced-run/` (a rename: no copy, no
    space needed); `commit()`, called once the new run has written its results, deletes
    them. Left without a commit (a failure, a divergence, Ctrl-C, a full disk), it deletes
    the files the new run wrote (the names a run writes: `RUN_FILES` and `own`) and moves
    the old ones back, byte for byte as they were; whatever else appeared in `out`
    meanwhile (a user's notes, `generate --json`'s samples) is kept, and named.
    `keep_both()` leaves the two runs as they are: the new one in `out`, the old one set
    aside (a run that finished training but not its results is never thrown away).
    A process killed outright leaves both, and `check_run_folder` says how to choose.

    Described in the appendix "Running it for real", section "Failing safely".
    """

    def __init__(self, out: Path, own: Sequence[str], log: Callable[[str], None]) -> None:
        self.out, self.aside, self.log, self.own = out, out / SET_ASIDE, log, list(own)
        self.names = run_files(out, own) if out.is_dir() else []
        self.committed = self.kept_both = False

    def __enter__(self) -> "ReplacedRun":
        if self.names:
            remove_stale_temporaries(self.out)  # a killed writer's, never a run's
            self.aside.mkdir()
            for name in self.names:
                os.replace(self.out / name, self.aside / name)
            self.kept = set(os.listdir(self.out))
        return self

    def commit(self) -> None:
        """The new run has finished: now it replaces the old one."""
        if self.names:
            shutil.rmtree(self.aside)
        self.committed = True

    def keep_both(self) -> None:
        """Leave the new run in `out` and the old one in `out/.replaced-run/`."""
        self.kept_both = True

    def __exit__(self, *exc_info: object) -> None:
        if self.committed or self.kept_both or not self.names:
            return
        for name in run_files(self.out, self.own):  # the new run's files, by their names
            path = self.out / name
            if not path.is_dir():
                path.unlink()
        for name in self.names:
            os.replace(self.aside / name, self.out / name)
        self.aside.rmdir()
        others = sorted(set(os.listdir(self.out)) - self.kept - set(self.names))
        shown = [name + "/" if (self.out / name).is_dir() else name for name in others]
        kept = (f"; kept what this run did not write: {', '.join(shown)}" if shown
                else "")
        self.log(f"the new run did not finish: {self.out} holds the run it was to "
                 f"replace again, as it was{kept}")


def interruption_report(out: Path) -> str:
    """What an interrupted run leaves: the point `last.pt` holds, or that there is none.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    try:
        state = read_checkpoint(out / LAST_CHECKPOINT)["training"]
        where = f"epoch {state['epoch']}, step {state['step']}"
    except (OSError, ValueError, KeyError, TypeError):
        return (f"interrupted before any {LAST_CHECKPOINT} was written, so there is "
                f"nothing to resume; start again (--overwrite if {out} holds a best.pt)")
    return (f"interrupted: {out / LAST_CHECKPOINT} is intact and holds the run after "
            f"{where}; continue it with --resume (the work since then is redone)")
