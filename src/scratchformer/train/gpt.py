"""Training the GPT of chapter 12 of *Transformers from Scratch*: its checkpoints, the
training loop (chapter 11's AdamW, schedule, clipping, precision and
DistributedDataParallel), and its scores on held-out text next to counting models.

What this module deliberately does not handle: gradient accumulation, early stopping,
and training on several machines beyond what `torchrun` sets up.
"""

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from scratchformer.data.framing import clean_review
from scratchformer.data.token_windows import TokenWindows
from scratchformer.data.windows import special_ids
from scratchformer.measure.evaluation import autocast, is_distributed
from scratchformer.measure.ngram import (BigramCounts, add_k_bigram_log_prob,
                                         bits_per_byte, document_pairs,
                                         kneser_ney_bigram_log_prob, kneser_ney_discount,
                                         unigram_log_prob)
from scratchformer.models.gpt import GPTConfig, GPTModel, document_nll, next_token_loss
from scratchformer.runs.checkpoint import (BEST_CHECKPOINT, LAST_CHECKPOINT, check_weights,
                                           read_checkpoint, restore_training,
                                           write_checkpoint)
from scratchformer.runs.provenance import check_same_run
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.tokenize.gpt2_files import END_OF_TEXT
from scratchformer.train.loop import (evaluation_steps, lr_multiplier, make_optimizer,
                                      training_step)
from scratchformer.train.settings import OptimizerSettings


GPT_CHECKPOINT_FORMAT = "scratchformer.GPTModel"


def save_gpt_checkpoint(path: str | os.PathLike, model: nn.Module,
                        training_state: dict | None = None) -> None:
    """Write a GPT's configuration and weights (and `training_state`) atomically.

    Described in chapter 12, section "The loop".
    """
    if isinstance(model, DistributedDataParallel):
        model = model.module
    write_checkpoint(path, model, GPT_CHECKPOINT_FORMAT, asdict(model.config), {},
                     training_state)


def read_gpt_checkpoint(path: str | os.PathLike) -> dict:
    """Chapter 11's `read_checkpoint` for a GPT: the format marker and version, then the
    fields, and the weights' shapes and values against the configuration (built on
    `meta`, free).

    Described in chapter 12, section "The loop".
    """
    payload = read_checkpoint(path, GPT_CHECKPOINT_FORMAT)
    if not all(isinstance(payload.get(key), dict) for key in ("config", "model")):
        raise ValueError(f"{path}: 'config' and 'model' must be mappings; this code did "
                         "not save it")
    try:
        with torch.device("meta"):  # shapes only, whatever sizes the file claims
            expected = GPTModel(GPTConfig(**payload["config"])).state_dict()
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: its model configuration is invalid ({err})") from None
    check_weights(payload["model"], expected, path)  # names, shapes, finite values
    return payload


def load_gpt(path: str | os.PathLike, device: str | torch.device = "cpu") -> GPTModel:
    """The GPT saved at `path` (a file, or a run's folder: its `best.pt`), in eval mode.

    Described in chapter 12, section "The loop".
    """
    payload = read_gpt_checkpoint(path)
    model = GPTModel(GPTConfig(**payload["config"]))
    model.load_state_dict(payload["model"])
    return model.to(device).eval()


@dataclass
class GPTTrainConfig(OptimizerSettings):
    """How to train a GPT: steps, per-process batch, AdamW, schedule, clipping, precision.

    `warmup` is the fraction of the steps spent warming up; the model is validated `evals`
    times, evenly spaced, the last after the final step.

    Described in chapter 12, section "The loop".
    """

    lr: float = 3e-3  # the shared fields of OptimizerSettings, with this run's defaults
    weight_decay: float = 0.1
    warmup: float = 0.05
    precision: str = "bf16"
    steps: int = 2000
    batch_size: int = 16
    evals: int = 10

    def __post_init__(self) -> None:
        self.check_optimizer_settings(whole=("steps", "batch_size", "evals"))
        if min(self.steps, self.batch_size, self.evals) <= 0:
            raise ValueError(f"steps, batch_size and evals must be positive, got "
                             f"{self.steps}, {self.batch_size} and {self.evals}")


@torch.no_grad()
def evaluate_lm(model: nn.Module, windows: Iterable[tuple[Tensor, Tensor]],
                precision: str = "fp32") -> float:
    """Mean next-token loss, in nats, over every position of every window.

    Under `torch.distributed` each process evaluates its share and the sums are combined.

    Described in chapter 12, section "The loop".
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    totals = torch.zeros(2, dtype=torch.float64, device=device)  # loss sum, tokens
    for inputs, targets in windows:
        inputs, targets = inputs.to(device), targets.to(device)
        with autocast(device, precision):
            logits = model(inputs)  # (B, T, V)
        totals[0] += next_token_loss(logits, targets).double() * targets.numel()
        totals[1] += targets.numel()
    if is_distributed():
        dist.all_reduce(totals)
    model.train(was_training)
    return float(totals[0] / totals[1])


def train_gpt(model: GPTModel, train_windows: TokenWindows,
              val_windows: Iterable[tuple[Tensor, Tensor]], config: GPTTrainConfig,
              out_dir: str | os.PathLike | None = None, resume: bool = False,
              progress: bool = True, log: Callable[[str], None] = print,
              provenance: dict | None = None) -> list[dict]:
    """Train `model` in place for `config.steps` steps; return one record per validation.

    Each record holds the step, the tokens seen (all processes), the training loss since
    the previous record, the validation loss, the seconds and tokens per second since the
    previous record, and this process's loss at every step. With `out_dir`, the model with
    the lowest validation loss goes to `best.pt` and the training state to `last.pt` at
    each validation; `resume=True` continues from `last.pt`. Only rank 0 writes and logs.
    `provenance` (data, tokenizer) goes into both files, and a resumed run must match it.

    Described in chapter 12, section "The loop".
    """
    device = next(model.parameters()).device
    rank = dist.get_rank() if is_distributed() else 0
    world_size = dist.get_world_size() if is_distributed() else 1
    optimizer = make_optimizer(model, config.lr, config.weight_decay)
    warmup_steps = max(1, round(config.warmup * config.steps))
    eval_after = evaluation_steps(config.steps, config.evals)
    data = provenance or {}
    tokens_per_step = config.batch_size * train_windows.context_length * world_size
    history: list[dict] = []
    best_loss, step = math.inf, 0
    if resume:
        if out_dir is None:
            raise ValueError("resume=True needs the out_dir of the run to continue")
        saved = read_gpt_checkpoint(Path(out_dir) / LAST_CHECKPOINT)
        state = saved["training"]
        then = {**saved["config"], **state["train_config"], **state.get("data", data)}
        now = {**asdict(model.config), **asdict(config), **data}
        check_same_run(Path(out_dir), then, now)  # names only the fields that differ
        restore_training(Path(out_dir) / LAST_CHECKPOINT, saved, model, optimizer,
                         {"step": config.steps})
        history, best_loss = list(state["history"]), state["best_val_loss"]
        step = state["step"]
        log(f"resuming {out_dir} at step {step} of {config.steps}")
    network = DistributedDataParallel(model) if is_distributed() else model
    network.train()
    totals = torch.zeros(2, dtype=torch.float64, device=device)  # loss sum, tokens
    step_losses: list[Tensor] = []
    start = time.perf_counter()
    bar = tqdm(total=config.steps, initial=step, disable=not progress or rank != 0)
    while step < config.steps:
        inputs, targets = (t.to(device) for t in train_windows.batch(step))
        for group in optimizer.param_groups:
            group["lr"] = config.lr * lr_multiplier(step, config.steps, warmup_steps)
        with autocast(device, config.precision):
            logits = network(inputs)  # (B, T, V)
        loss = next_token_loss(logits, targets)
        training_step(model, optimizer, loss, step, config.grad_clip, config.lr)
        step += 1
        bar.update(1)
        totals += torch.stack([loss.detach().double() * targets.numel(),
                               totals.new_tensor(targets.numel())])
        step_losses.append(loss.detach())
        if step not in eval_after:
            continue
        if is_distributed():
            dist.all_reduce(totals)
        seconds = time.perf_counter() - start
        val_loss = evaluate_lm(model, val_windows, config.precision)
        network.train()
        record = {"step": step, "tokens_seen": step * tokens_per_step,
                  "train_loss": float(totals[0] / totals[1]), "val_loss": val_loss,
                  "seconds": seconds, "tokens_per_second": float(totals[1]) / seconds,
                  "step_losses": torch.stack(step_losses).tolist()}
        history.append(record)
        improved = val_loss < best_loss
        best_loss = min(best_loss, val_loss)
        if rank == 0 and out_dir is not None:
            if improved:
                save_gpt_checkpoint(Path(out_dir) / BEST_CHECKPOINT, model,
                                    {"step": step, "val_loss": val_loss, "data": data})
            state = {"train_config": asdict(config), "optimizer": optimizer.state_dict(),
                     "step": step, "history": history, "best_val_loss": best_loss,
                     "rng": torch.get_rng_state(), "data": data}
            save_gpt_checkpoint(Path(out_dir) / LAST_CHECKPOINT, model, state)
        if rank == 0:
            log(f"step {step}/{config.steps}: train loss {record['train_loss']:.3f} | "
                f"val loss {val_loss:.3f}{' (best)' if improved else ''} | "
                f"{seconds:.0f} s, {record['tokens_per_second']:,.0f} tokens/s")
        if is_distributed():
            dist.barrier()
        totals.zero_()
        step_losses = []
        start = time.perf_counter()
    bar.close()
    return history


ADD_K_CHOICES = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)


def heldout_scores(model: GPTModel, tokenizer: BPETokenizer, texts: Sequence[str],
                   fit_stream: np.ndarray, val_texts: Sequence[str],
                   read_windows: np.ndarray | None = None) -> dict:
    """Bits per byte on `texts` of the GPT and of unigram, add-k and Kneser-Ney bigram
    models counted from `fit_stream` (add-k's k chosen on `val_texts`); with
    `read_windows`, the `(N, T + 1)` windows the GPT was trained on, also of a Kneser-Ney
    bigram counted from those alone.

    Described in chapter 12, section "The GPT on the same text".
    """
    eot = special_ids(tokenizer)[END_OF_TEXT]

    def encode(items: Sequence[str]) -> tuple[list[list[int]], int]:
        cleaned = [clean_review(t) for t in items]
        return ([[eot, *tokenizer.encode_ordinary(t)] for t in cleaned],
                sum(len(t.encode("utf-8")) for t in cleaned))

    documents, num_bytes = encode(texts)
    val_documents, val_bytes = encode(val_texts)
    counts = BigramCounts(fit_stream, tokenizer.n_vocab)
    previous, following = document_pairs(documents)
    val_previous, val_following = document_pairs(val_documents)

    def score(log_probs: np.ndarray, size: int = num_bytes) -> float:
        return bits_per_byte(-float(log_probs.sum()), size)

    best_k = min(ADD_K_CHOICES, key=lambda k: score(
        add_k_bigram_log_prob(counts, val_previous, val_following, k), val_bytes))
    nll, tokens = document_nll(model, documents)
    scores = {
        "unigram (add-1)": score(unigram_log_prob(counts, following, 1.0)),
        f"add-k bigram (k = {best_k})": score(
            add_k_bigram_log_prob(counts, previous, following, best_k)),
        "Kneser-Ney bigram": score(
            kneser_ney_bigram_log_prob(counts, previous, following)),
    }
    if read_windows is not None:
        read = BigramCounts(read_windows, tokenizer.n_vocab)
        scores["Kneser-Ney bigram, from the GPT's windows"] = score(
            kneser_ney_bigram_log_prob(read, previous, following))
    scores["GPT"] = bits_per_byte(nll, num_bytes)
    return {"reviews": len(texts), "bytes": num_bytes, "tokens": tokens,
            "bits_per_byte": scores, "add_k": best_k,
            "kneser_ney_discount": kneser_ney_discount(counts),
            "counted_tokens": len(fit_stream),
            "read_tokens": None if read_windows is None else int(np.size(read_windows))}


GPT_PRESETS: dict[str, dict[str, dict]] = {
    # One CPU core for about an hour: 26,000 windows of 512 tokens, about 13.3M tokens,
    # a little over half of the training stream.
    "cpu": {
        "model": {"vocab_size": 8000, "context_length": 512, "d_model": 128,
                  "num_layers": 2, "num_heads": 4, "d_hidden": 512, "dropout": 0.0},
        "train": {"steps": 13000, "batch_size": 2, "lr": 3e-3, "evals": 8},
    },
    # One large GPU: a wider, deeper model on more windows.
    "gpu": {
        "model": {"vocab_size": 8000, "context_length": 512, "d_model": 512,
                  "num_layers": 8, "num_heads": 8, "d_hidden": 2048, "dropout": 0.1,
                  "impl": "sdpa"},
        "train": {"steps": 20000, "batch_size": 64, "lr": 1e-3, "evals": 40},
    },
    # Seconds, for trying the pipeline end to end on a few reviews.
    "tiny": {
        "model": {"vocab_size": 300, "context_length": 32, "d_model": 16, "num_layers": 1,
                  "num_heads": 2, "d_hidden": 64},
        "train": {"steps": 12, "batch_size": 4, "lr": 1e-2, "evals": 2,
                  "precision": "fp32"},
    },
}


def gpt_preset(name: str) -> tuple[GPTConfig, GPTTrainConfig]:
    """The model and training configurations of a named preset (`cpu`, `gpu`, `tiny`).

    Described in chapter 12, section "The loop".
    """
    if name not in GPT_PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(GPT_PRESETS)}")
    settings = GPT_PRESETS[name]
    return GPTConfig(**settings["model"]), GPTTrainConfig(**settings["train"])
