"""The production training loop for chapter 10's classifier: chapter 11's loop, grown for real runs.

`train` runs `training_step` (from `scratchformer.train.loop`, where chapter 11 shows it) over a
`ReviewLoader`'s batches, with the schedule of `lr_multiplier`, and adds what a long run on shared
machines needs: validation several times per epoch with the best model kept in `best.pt`, the full
training state in `last.pt` after every epoch and resuming from it (the same settings and data, or
a refusal naming what differs), budgets in steps or wall time, a stop at a non-finite validation
loss, and DistributedDataParallel with one writer when started under `torchrun`. `TrainConfig`
holds the settings and refuses ill-typed or out-of-range ones.

Apart from `scratchformer.train.loop` (the update, generated from chapter 11) because its job is
another: the long run around the update (records, checkpoints, resuming, processes), which the
chapter calls without teaching; it is written by hand. What it
deliberately does not handle: gradient accumulation, early stopping, multi-node jobs beyond what
`torchrun` sets up, models other than `BertForSequenceClassification`, and the command line
(`scratchformer.cli.commands`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from scratchformer.data.batches import ReviewLoader
from scratchformer.data.holdout import HOLDOUTS
from scratchformer.data.review_windows import READINGS
from scratchformer.measure.evaluation import (autocast, evaluate,
                                              is_distributed, logits_of)
from scratchformer.models.bert import BertForSequenceClassification
from scratchformer.runs.checkpoint import (BEST_CHECKPOINT, LAST_CHECKPOINT,
                                           TrainingDiverged, read_checkpoint,
                                           restore_training, save_checkpoint)
from scratchformer.runs.folders import check_training_state, data_description, run_files
from scratchformer.train.loop import (TRY, evaluation_steps, lr_multiplier, make_optimizer,
                                      training_step)
from scratchformer.train.settings import OptimizerSettings


@dataclass
class TrainConfig(OptimizerSettings):
    """How to train: epochs, per-process batch size, AdamW settings, schedule, clipping,
    precision, data.

    `warmup` is the fraction of all steps spent warming up; `val_size` reviews are held
    out of the training split for validation (`validation`: "reviews" at random, or
    "blocks" of consecutive reviews, mostly whole films: `holdout`), `evals_per_epoch` times
    per epoch;
    `length_groups` as in `ReviewLoader` (0 = plain shuffling); `truncation` is one of
    chapter 10's cuts or "windows", the whole review (chapter 11, "Reading the whole
    review"). `max_steps` caps the updates (the schedule is planned over the capped
    count); `max_seconds` ends training after that much wall time, with a last
    validation; `log_every` logs the mean training loss every that many steps (0: only at
    validations).

    Described in chapter 11, section "The training loop".
    """

    lr: float = 2e-3  # the shared fields of OptimizerSettings, with this run's defaults
    epochs: int = 2
    batch_size: int = 64
    truncation: str = "head+tail"
    length_groups: int = 50
    val_size: int = 2500
    validation: str = "reviews"
    evals_per_epoch: int = 1
    max_steps: int | None = None
    max_seconds: float | None = None
    log_every: int = 0

    def __post_init__(self) -> None:
        self.check_optimizer_settings(
            whole=("epochs", "batch_size", "val_size", "evals_per_epoch", "length_groups"))
        counts = (self.epochs, self.batch_size, self.val_size, self.evals_per_epoch)
        if min(counts) <= 0 or self.length_groups < 0:
            raise ValueError(
                "epochs, batch_size, val_size and evals_per_epoch must be positive and "
                f"length_groups >= 0, got {counts} and {self.length_groups}"
            )
        if self.validation not in HOLDOUTS:
            raise ValueError(f"validation must be one of {HOLDOUTS}, "
                             f"got {self.validation!r}")
        if self.truncation not in READINGS:
            raise ValueError(f"truncation must be one of {READINGS}, "
                             f"got {self.truncation!r}")
        if self.max_steps is not None and (not isinstance(self.max_steps, int)
                                           or isinstance(self.max_steps, bool)
                                           or self.max_steps <= 0):
            raise ValueError(f"max_steps must be a positive integer or None, "
                             f"got {self.max_steps!r}")
        if self.max_seconds is not None and not (
            isinstance(self.max_seconds, (int, float)) and 0 < self.max_seconds < math.inf
        ):
            raise ValueError(f"max_seconds must be a positive number or None, "
                             f"got {self.max_seconds!r}")
        if (not isinstance(self.log_every, int) or isinstance(self.log_every, bool)
                or self.log_every < 0):
            raise ValueError(f"log_every must be an integer >= 0, got {self.log_every!r}")


def train(
    model: BertForSequenceClassification,
    train_loader: ReviewLoader,
    val_loader: Iterable[tuple[Tensor, Tensor, Tensor]],
    config: TrainConfig,
    out_dir: str | os.PathLike | None = None,
    resume: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
    provenance: dict | None = None,
    choose_best: bool = True,
) -> list[dict]:
    """Train `model` (in place); return one record per validation: losses, accuracies,
    time, throughput.

    The model is validated on `val_loader` `config.evals_per_epoch` times per epoch,
    evenly spaced; each record holds the training loss and accuracy over the batches since
    the previous one and the number of training reviews seen so far. With `out_dir`, the
    best model so far goes to `out_dir/best.pt` and, after every epoch, the full training
    state to `out_dir/last.pt`. `resume=True` continues from `out_dir/last.pt`, at the
    step after the one it saved, with the same settings. Under `torch.distributed` the
    model is wrapped in DistributedDataParallel, and only rank 0 writes files and logs.
    `provenance` (the snapshot a fine-tuning started from, say) is recorded in `last.pt`
    with the data's fingerprints; a resumed run must match both. `choose_best=False`
    (training reviews of one class, whose validation accuracy means nothing) makes
    `best.pt` the model of the latest validation instead of the best.

    Described in chapter 11, section "The training loop".
    """
    device = next(model.parameters()).device
    rank = dist.get_rank() if is_distributed() else 0
    optimizer = make_optimizer(model, config.lr, config.weight_decay)
    total_steps = planned_steps(len(train_loader), config)
    warmup_steps = max(1, round(config.warmup * total_steps))
    eval_after = evaluation_steps(len(train_loader), config.evals_per_epoch)
    data = {**data_description(train_loader, val_loader, total_steps),
            **(provenance or {})}
    history: list[dict] = []
    best_accuracy, start_epoch, step, reviews_seen = -1.0, 0, 0, 0
    if out_dir is not None and not resume and rank == 0 and run_files(Path(out_dir)):
        found = ", ".join(run_files(Path(out_dir)))
        raise ValueError(f"{out_dir} already holds a run ({found}): resume or clear it")
    if resume:
        if out_dir is None:
            raise ValueError("resume=True needs the out_dir of the run to continue")
        saved = read_checkpoint(Path(out_dir) / LAST_CHECKPOINT)
        state = saved["training"]
        then = state.get("train_config") if isinstance(state, dict) else None
        settings = ({**saved["config"], **(then if isinstance(then, dict) else {})},
                    {**asdict(model.config), **asdict(config)})
        check_training_state(state, Path(out_dir) / LAST_CHECKPOINT, data, log,
                             settings)  # the settings first, naming what differs
        restore_training(Path(out_dir) / LAST_CHECKPOINT, saved, model, optimizer,
                         {"epoch": config.epochs, "step": total_steps})
        history, best_accuracy = list(state["history"]), state["best_val_accuracy"]
        start_epoch, step = state["epoch"], state["step"]
        reviews_seen = history[-1]["reviews_seen"] if history else 0
        if device.type == "cuda" and state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        log(f"resuming {out_dir} after epoch {start_epoch} (step {step})")
    network = DistributedDataParallel(model) if is_distributed() else model
    deadline = (None if config.max_seconds is None
                else time.monotonic() + config.max_seconds)
    for epoch in range(start_epoch, config.epochs):
        if step >= total_steps:
            break
        train_loader.set_epoch(epoch)
        network.train()
        # loss sum, correct, examples, tokens
        totals = torch.zeros(4, dtype=torch.float64, device=device)
        step_losses = []
        start = time.perf_counter()
        batches = tqdm(train_loader, desc=f"epoch {epoch + 1}/{config.epochs}",
                       disable=not progress or rank != 0)
        for batch_number, (ids, mask, labels) in enumerate(batches, start=1):
            ids, mask, labels = ids.to(device), mask.to(device), labels.to(device)
            for group in optimizer.param_groups:
                group["lr"] = config.lr * lr_multiplier(step, total_steps, warmup_steps)
            with autocast(device, config.precision):
                logits = logits_of(network, ids, mask)  # (B, num_classes)
            loss = F.cross_entropy(logits.float(), labels)
            training_step(model, optimizer, loss, step, config.grad_clip, config.lr)
            step += 1
            with torch.no_grad():
                batch_totals = (loss * len(labels), (logits.argmax(-1) == labels).sum(),
                                labels.new_tensor(len(labels)), mask.sum())
                totals += torch.stack([value.to(torch.float64) for value in batch_totals])
                step_losses.append(loss.detach())
            if rank == 0 and config.log_every and step % config.log_every == 0:
                recent = torch.stack(step_losses[-config.log_every :]).mean()
                log(f"step {step}/{total_steps}: train loss {float(recent):.4f}")
            out_of_budget = budget_spent(step, total_steps, deadline, device)
            if batch_number not in eval_after and not out_of_budget:
                continue
            if is_distributed():
                dist.all_reduce(totals)
            seconds = time.perf_counter() - start
            val = evaluate(model, val_loader, config.precision)
            if not math.isfinite(val["loss"]):
                message = f"step {step}: the validation loss is {val['loss']}"
                raise TrainingDiverged(f"{message}; {TRY}")
            network.train()
            reviews_seen += int(totals[2])
            record = {
                "epoch": epoch + 1,
                "step": step,
                "reviews_seen": reviews_seen,
                # over the batches since the last record
                "train_loss": float(totals[0] / totals[2]),
                "train_accuracy": float(totals[1] / totals[2]),
                "val_loss": val["loss"],
                "val_accuracy": val["accuracy"],
                "seconds": seconds,
                "tokens_per_second": float(totals[3]) / seconds,
                # this process's batches
                "step_losses": torch.stack(step_losses).tolist(),
            }
            history.append(record)
            improved = val["accuracy"] > best_accuracy or not choose_best
            best_accuracy = max(best_accuracy, val["accuracy"])
            if rank == 0 and out_dir is not None and improved:
                best_state = {"epoch": epoch + 1, "step": step, "val": val, "data": data}
                save_checkpoint(Path(out_dir) / BEST_CHECKPOINT, model, model.config,
                                config.truncation, best_state)
            if rank == 0:
                log(
                    f"epoch {epoch + 1}/{config.epochs}, step {step}: "
                    f"train loss {record['train_loss']:.4f} "
                    f"acc {record['train_accuracy']:.4f} | "
                    f"val loss {record['val_loss']:.4f} acc {record['val_accuracy']:.4f}"
                    f"{' (best)' if improved and choose_best else ''} | {seconds:.0f} s, "
                    f"{record['tokens_per_second']:,.0f} tokens/s"
                )
            totals.zero_()
            step_losses = []
            start = time.perf_counter()
            if out_of_budget:
                break
        if rank == 0 and out_dir is not None:
            state = {
                "train_config": asdict(config),
                "optimizer": optimizer.state_dict(),
                "epoch": epoch + 1,
                "step": step,
                "history": history,
                "best_val_accuracy": best_accuracy,
                "rng": torch.get_rng_state(),
                "cuda_rng": (torch.cuda.get_rng_state(device) if device.type == "cuda"
                             else None),
                "data": data,
            }
            save_checkpoint(Path(out_dir) / LAST_CHECKPOINT, model, model.config,
                            config.truncation, state)
        if is_distributed():
            dist.barrier()
        if budget_spent(step, total_steps, deadline, device):
            break
    return history


def planned_steps(steps_per_epoch: int, config: TrainConfig) -> int:
    """The updates a run plans for: every batch of every epoch, capped by `max_steps`.

    Described in chapter 11, section "The training loop".
    """
    total = steps_per_epoch * config.epochs
    return total if config.max_steps is None else min(total, config.max_steps)


def budget_spent(step: int, total_steps: int, deadline: float | None,
                 device: torch.device) -> bool:
    """Whether the run must stop: `total_steps` done, or the `time.monotonic()` deadline
    passed. Under `torch.distributed` the processes agree (one out of time stops all).

    Described in chapter 11, section "The training loop".
    """
    spent = step >= total_steps or (deadline is not None and time.monotonic() >= deadline)
    if deadline is not None and is_distributed():
        flag = torch.tensor(float(spent), device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        spent = bool(flag)
    return spent
