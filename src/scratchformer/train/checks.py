"""Settings and data that a training run cannot honour, refused before the first step, as
the appendix "Running it for real" of *Transformers from Scratch* checks them: fields that
must be whole or finite numbers, seeds, the IMDB pipeline's special ids, empty splits, and
what a pretrained snapshot fixes.

Written by hand, not exported: the appendix describes it in its section
"Failing safely" and names this file.

What this module deliberately does not handle: the command line's argument types
(`scratchformer.cli.args`) and a run's recorded provenance (`scratchformer.runs.provenance`).
"""

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn

from scratchformer.data.batches import ReviewLoader
from scratchformer.data.framing import PAD_ID, VOCAB_SIZE
from scratchformer.data.imdb import ReviewSplit
from scratchformer.models.bert import BertConfig


def check_pipeline_config(config: BertConfig) -> None:
    """Refuse model settings that the IMDB pipeline cannot honour.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    if config.pad_id != PAD_ID or config.vocab_size < VOCAB_SIZE:
        raise ValueError(
            f"the IMDB pipeline pads with id {PAD_ID} and uses ids up to "
            f"{VOCAB_SIZE - 1}, so pad_id must be {PAD_ID} and vocab_size at least "
            f"{VOCAB_SIZE}; got "
            f"pad_id={config.pad_id}, vocab_size={config.vocab_size}"
        )


def check_before_training(data: dict[str, ReviewSplit], fit_loader: ReviewLoader,
                          allow_one_class: bool = False) -> bool:
    """Refuse data that would fail only after training, or train to a meaningless
    result: an empty split, no batch, training reviews of one class only (a classifier
    learns nothing from them, and its validation accuracy reads 1.0) unless
    `allow_one_class`. Return whether the reviews trained on are of one class.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    for split, reviews in data.items():
        if len(reviews) == 0:
            raise ValueError(f"the {split} split ({reviews.source}) holds no reviews")
    if len(fit_loader) == 0:
        raise ValueError("no training batch: fewer training reviews than one batch each")
    train = data["train"]
    for labels, which in ((train.labels, f"the train split ({train.source})"),
                          (fit_loader.labels.tolist(), "the reviews trained on (the "
                           "train split less those held out for validation)")):
        counts = [sum(1 for label in labels if label == value) for value in (0, 1)]
        if 0 in counts and not allow_one_class:
            raise ValueError(
                f"{which} holds {counts[0]:,} negative and {counts[1]:,} positive "
                "reviews: a classifier learns nothing from one class (and validation "
                "would score it 1.0); give it reviews of both labels (IMDB's files are "
                "sorted by label: take reviews at random, as --limit does), or "
                "--allow-one-class for a demonstration")
    return len(set(fit_loader.labels.tolist())) < 2


def available_memory(device: torch.device) -> int:
    """Bytes free for a new model: the GPU's free memory, or the system's MemAvailable
    (all of memory where /proc/meminfo cannot be read).

    Described in the appendix "Running it for real", section "Failing safely".
    """
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        meminfo = Path("/proc/meminfo").read_text()
        found = re.search(r"^MemAvailable:\s+(\d+) kB", meminfo, re.MULTILINE)
        return int(found[1]) * 1024
    except (OSError, TypeError):
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_model_fits(build: Callable[[], nn.Module], device: torch.device) -> None:
    """Refuse a model whose weights, gradients and AdamW's two moments (four copies of
    each parameter) would not fit in the memory free now: a process the system kills
    for memory cannot say why, and leaves its folder's lock behind.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    with torch.device("meta"):  # shapes only: nothing is allocated
        model = build()
    need = sum(4 * p.numel() * p.element_size() for p in model.parameters())
    need += sum(b.numel() * b.element_size() for b in model.buffers())
    free = available_memory(device)
    if need > free:
        raise ValueError(f"the model would need {need / 2**30:.1f} GiB for its weights, "
                         f"gradients and optimizer state, and {free / 2**30:.1f} GiB are "
                         "free: lower max_len (a GPT's context_length), d_model, "
                         "num_layers or vocab_size")


SEED_LIMIT = 1 << 40  # a seed times 1,000,003 (plus an epoch) must stay below 2**64


def check_numbers(config: object, whole: Sequence[str], finite: Sequence[str]) -> None:
    """Refuse a configuration whose `whole` fields are not integers (a bool is not one),
    whose `finite` fields are not finite numbers (NaN passes every comparison), or whose
    `seed` is outside `[0, SEED_LIMIT)`.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    for name in whole:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    for name in finite:
        value = getattr(config, name)
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    seed = getattr(config, "seed", 0)
    if not 0 <= seed < SEED_LIMIT:
        raise ValueError(f"seed must be in [0, 2**40), got {seed}")


def check_init_config(config: BertConfig, snapshot: BertConfig, path: str) -> None:
    """Refuse `--set` values that a pretrained snapshot cannot honour: every field but
    `dropout` and `pooling` is the snapshot's (its shapes, and its tokenizer's `pad_id`).

    Described in the appendix "Running it for real", section "Failing safely".
    """
    free = ("dropout", "pooling")
    now, then = asdict(config), asdict(snapshot)
    differ = [f"{key}={now[key]!r} (the snapshot has {then[key]!r})" for key in now
              if key not in free and now[key] != then[key]]
    if differ:
        raise ValueError(f"--init {path} fixes every setting but dropout and pooling: "
                         f"cannot set {', '.join(differ)}")
