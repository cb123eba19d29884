"""Saving and loading the classifier, as chapter 11 of *Transformers from Scratch* does it.

A checkpoint holds a format marker and version, the model's configuration, its number of
classes, the truncation it was trained with, its weights and, for resuming, the training
state. It is written atomically and never with NaN or infinite weights, and read with
`weights_only=True`; its fields, and the shapes of its weights against its configuration,
are checked before a model is built (on the `meta` device, allocating nothing).

What this module deliberately does not handle: models other than
`BertForSequenceClassification`, other checkpoint versions or formats (Google's BERT,
safetensors), sharded weights, and the rest of a run's folder (`scratchformer.runs.folders`).

Written by hand, not exported: chapter 11 describes what a checkpoint holds and why it is written
atomically and read with `weights_only=True`, and calls this module; the appendix "Running it for
real" shows how a damaged file fails.
"""

import os
import warnings
from dataclasses import asdict
from pathlib import Path
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from scratchformer.io.files import write_atomically
from scratchformer.models.bert import BertConfig, BertForSequenceClassification
from torch import Tensor
from scratchformer.data.review_windows import READINGS


CHECKPOINT_FORMAT = "scratchformer.BertForSequenceClassification"
CHECKPOINT_VERSION = 1
BEST_CHECKPOINT = "best.pt"
LAST_CHECKPOINT = "last.pt"


def save_checkpoint(
    path: str | os.PathLike,
    model: nn.Module,
    config: BertConfig,
    truncation: str = "head+tail",
    training_state: dict | None = None,
) -> None:
    """Write the model's configuration and weights (and `training_state`, for resuming)
    atomically.

    Described in chapter 11, section "Saving and loading".
    """
    if isinstance(model, DistributedDataParallel):
        model = model.module
    write_checkpoint(path, model, CHECKPOINT_FORMAT, asdict(config),
                     {"num_classes": model.num_classes, "truncation": truncation},
                     training_state)


def write_checkpoint(path: str | os.PathLike, model: nn.Module, checkpoint_format: str,
                     config: dict, fields: dict, training_state: dict | None) -> None:
    """The one checkpoint writer of every model: `{format, version, config, **fields, model,
    training}`, written atomically, never with a NaN or infinite weight. `read_checkpoint`
    reads what it writes.

    Described in chapter 11, section "Saving and loading".
    """
    if isinstance(model, DistributedDataParallel):
        model = model.module
    check_finite_weights(model, path)
    payload = {"format": checkpoint_format, "version": CHECKPOINT_VERSION, "config": config,
               **fields, "model": model.state_dict(), "training": training_state}
    write_atomically(Path(path), lambda handle: torch.save(payload, handle))


def read_checkpoint(path: str | os.PathLike,
                    expected_format: str = CHECKPOINT_FORMAT) -> dict:
    """The checked contents of a checkpoint file (or of `best.pt` in a run's folder).

    `expected_format` is the marker the file must carry (chapter 12's GPT has its own; a
    classifier's fields and weights are checked here, other models' by their readers).

    Described in chapter 11, section "Saving and loading".
    """
    path = Path(path)
    if path.is_dir():
        path = path / BEST_CHECKPOINT
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        with warnings.catch_warnings():  # a plain pickle draws a note about its protocol
            warnings.filterwarnings("ignore", "Detected pickle protocol", UserWarning)
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        # torch raises many types for a damaged file (zip, unpickler, EOF, KeyError, ...)
        raise unreadable(path, err) from None
    if not isinstance(payload, dict) or payload.get("format") != expected_format:
        kind = ("classifier" if expected_format == CHECKPOINT_FORMAT
                else expected_format.split(".")[-1])
        raise ValueError(f"{path} is a torch file but not a scratchformer {kind} "
                         f"checkpoint (no '{expected_format}' marker)")
    if payload.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"{path} has checkpoint version {payload.get('version')!r}; "
                         f"this code reads version {CHECKPOINT_VERSION}")
    if expected_format == CHECKPOINT_FORMAT:
        check_checkpoint(payload, path)
    return payload


def load_checkpoint(path: str | os.PathLike,
                    device: str | torch.device = "cpu") -> BertForSequenceClassification:
    """Rebuild the classifier saved at `path` (a file, or a run's folder), in eval mode on
    `device`.

    Described in chapter 11, section "Saving and loading".
    """
    payload = read_checkpoint(path)
    model = BertForSequenceClassification(BertConfig(**payload["config"]),
                                          payload["num_classes"])
    model.load_state_dict(payload["model"])
    return model.to(device).eval()


class TrainingDiverged(RuntimeError):
    """A loss, a gradient or a validation loss was NaN or infinite; none of it was saved.

    Described in the appendix "Running it for real", section "Failing safely".
    """


def check_finite_weights(model: nn.Module, path: os.PathLike | str) -> None:
    """Refuse to save weights that hold NaN or infinity.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    bad = [name for name, tensor in model.state_dict().items()
           if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())]
    if bad:
        raise TrainingDiverged(f"refusing to write {path}: {len(bad)} tensor(s) hold NaN "
                               f"or infinity, {bad[0]} among them")


def check_checkpoint(payload: dict, path: Path) -> None:
    """Refuse a checkpoint whose fields are missing or ill-typed, or whose weights do not
    fit its configuration; the model is built on the `meta` device, allocating nothing.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    kinds = {"config": dict, "num_classes": int, "truncation": str, "model": dict}
    for key, kind in kinds.items():
        value = payload.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{path}: field {key!r} is missing or not a {kind.__name__} "
                             f"(it is {type(value).__name__}); not saved by this code")
    training = payload.get("training")
    if payload["truncation"] not in READINGS or not isinstance(training, dict | None):
        raise ValueError(f"{path}: field 'truncation' or 'training' is not as saved")
    try:
        config = BertConfig(**payload["config"])
        with torch.device("meta"):  # shapes only: no memory, whatever the sizes claim
            model = BertForSequenceClassification(config, payload["num_classes"])
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: its model configuration is invalid ({err})") from None
    check_weights(payload["model"], model.state_dict(), path)


def check_weights(saved: dict, expected: dict, path: Path) -> None:
    """Refuse weights that do not fit the model a configuration builds (`expected`, a
    state dict, built on `meta`), or that hold NaN or infinity: one check for every
    checkpoint this package reads.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    problems = [f"{key} missing" for key in expected.keys() - saved.keys()]
    problems += [f"{key} unexpected" for key in saved.keys() - expected.keys()]
    for key in expected.keys() & saved.keys():
        value, want = saved[key], tuple(expected[key].shape)
        shape = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
        if shape != want:
            problems.append(f"{key} is {shape}, the configuration says {want}")
        elif value.dtype != expected[key].dtype:
            problems.append(f"{key} is {value.dtype}, not {expected[key].dtype}")
    if problems:
        listed = "; ".join(sorted(problems)[:3])
        raise ValueError(f"{path}: its weights do not fit its configuration: {listed}")
    bad = [key for key, value in saved.items()
           if value.is_floating_point() and not bool(torch.isfinite(value).all())]
    if bad:
        raise ValueError(f"{path}: {len(bad)} weight tensor(s) hold NaN or infinity, "
                         f"{sorted(bad)[0]} among them; the file is damaged or was saved "
                         "from a diverged run")


def restore_training(path: Path, saved: dict, model: nn.Module,
                     optimizer: torch.optim.Optimizer, limits: dict[str, int]) -> dict:
    """Load `saved` (the payload of the `last.pt` at `path`) into `model`, `optimizer`
    and torch's random state; return its training state. The three loops resume through
    it, and a state that cannot continue the run is refused with the file named: an
    `epoch` or `step` below 0 or above its `limits`, an optimizer state that is empty
    after training or holds NaN or infinity, a random state that is not one.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    state = saved["training"]
    for key, most in limits.items():
        value = state.get(key)
        counted = isinstance(value, int) and not isinstance(value, bool)
        if not counted or not 0 <= value <= most:
            raise ValueError(f"{path}: the training state's {key} is {value!r}, not a "
                             f"count from 0 to {most}; the file is damaged")
    optimizer_state = state.get("optimizer")
    moments = optimizer_state.get("state") if isinstance(optimizer_state, dict) else None
    if not isinstance(moments, dict) or (state.get("step", 1) > 0 and not moments):
        raise ValueError(f"{path}: the optimizer state is empty, though the run trained; "
                         "the file is damaged")
    if not all(bool(torch.isfinite(value).all()) for entry in moments.values()
               for value in entry.values() if isinstance(value, Tensor)):
        raise ValueError(f"{path}: the optimizer state holds NaN or infinity; the file "
                         "is damaged or was saved from a diverged run")
    model.load_state_dict(saved["model"])
    try:
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"{path}: its optimizer or random state does not fit this run "
                         f"({err})") from None
    return state


def unreadable(path: Path, err: Exception) -> ValueError:
    """The error for a file `torch.load(..., weights_only=True)` refused: torch's own
    advice to load it with `weights_only=False` is left out, since that runs any code an
    untrusted file holds.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    advice = ("weights_only", "Weights only", "file an issue", "documentation of torch")
    lines = [line.strip() for line in str(err).splitlines()
             if line.strip() and not any(words in line for words in advice)]
    reason = "; ".join(lines)
    if "GLOBAL" in reason:  # a pickled object: loading it could run any code
        return ValueError(f"{path} holds Python objects other than tensors and plain "
                          f"data ({reason}); they are not loaded, since that could run "
                          "code, and this package never saves them")
    return ValueError(f"{path} is not a readable checkpoint: truncated, damaged or not a "
                      f"torch file ({type(err).__name__}: {reason})")
