"""A run's provenance, as the appendix "Running it for real" of *Transformers from Scratch*
checks it: a resumed run compared field by field with its record, a checkpoint's recorded
configuration and tokenizer, and what an interrupted run left to resume.

Written by hand, not exported: the appendix describes it in its section
"Failing safely" and names this file.

What this module deliberately does not handle: computing the digests
(`scratchformer.io.fingerprint`), the folder's rules and its lock
(`scratchformer.runs.folders`) and the checkpoints' contents (`scratchformer.runs.checkpoint`).
"""

from collections.abc import Callable
from pathlib import Path

from scratchformer.io.fingerprint import config_sha256, tokenizer_sha256
from scratchformer.tokenize.bpe import BPETokenizer


def changed_fields(then: dict, now: dict) -> list[str]:
    """`"key A then, B now"` for each key whose value differs between two records.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return [f"{key} {then.get(key)!r} then, {now.get(key)!r} now"
            for key in sorted(then.keys() | now.keys()) if then.get(key) != now.get(key)]


DERIVED_FIELDS = ("config", "documents")  # hashes of the settings, of the data in order


def check_same_run(folder: Path, then: dict, now: dict,
                   derived: tuple[str, ...] = DERIVED_FIELDS) -> None:
    """Refuse to resume the run in `folder` with settings or data other than its own,
    naming only the fields that differ. A `derived` field (the configuration's hash, the
    documents' fingerprint, which a seed reorders) is named only when nothing it
    derives from differs: `--set dropout=0.2` is named as `dropout`, not as a hash.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    differ = changed_fields(then, now)
    named = [field for field in differ if field.split(" ", 1)[0] not in derived]
    differ = named or differ
    if differ:
        raise ValueError(f"cannot resume {folder}: {'; '.join(differ)}; resume with the "
                         "run's own settings and data, or start a new run")


def recorded(payload: dict) -> dict:
    """What a checkpoint's training recorded of its run (`training["data"]`), or {}.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    training = payload.get("training")
    record = training.get("data") if isinstance(training, dict) else None
    return record if isinstance(record, dict) else {}


def check_recorded(payload: dict, path: Path, tokenizer: BPETokenizer | None) -> None:
    """Refuse a checkpoint whose configuration is not the one its training recorded (an
    edited `num_heads` keeps every shape), or whose tokenizer is not `tokenizer`.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    record = recorded(payload)
    if record.get("config") not in (None, config_sha256(payload["config"])):
        raise ValueError(f"{path}: its configuration is not the one it was trained with "
                         "(the file was edited); use the run's own checkpoint")
    if record.get("tokenizer") is None:
        return
    found = tokenizer_sha256(tokenizer) if tokenizer is not None else None
    if found != record["tokenizer"]:
        wanted, found = record["tokenizer"][:16], found and found[:16]
        raise ValueError(f"{path} was trained with the tokenizer of sha256 {wanted}..., "
                         f"not this one ({found}...); use the tokenizer.json of its run")


def resume_advice(out: Path, read: Callable[[Path], dict]) -> str:
    """What an interrupted `pretrain` or `train-gpt` left to resume: the step of its
    `last.pt`, which `read` (the command's checkpoint reader) returns.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    try:
        step = read(out / "last.pt")["training"]["step"]
    except (OSError, ValueError, KeyError, TypeError):
        return (f"interrupted before any {out / 'last.pt'} was written, so there is "
                "nothing to resume; start again (--overwrite if the folder holds a run)")
    return (f"interrupted: {out / 'last.pt'} is intact and holds the run after step "
            f"{step}; continue it with --resume (the work since then is redone)")
