"""The pretraining loop of chapter 13 of *Transformers from Scratch*: its settings,
checkpoints and snapshots (each recording the run's data and tokenizer), and the
hand-over of a pretrained encoder and its tokenizer to the classifier.

Written by hand, not exported: chapter 13 teaches masking, the three objectives and their
losses (`scratchformer.models.pretraining`) and describes this loop in prose; the loop's
plumbing (settings checks, checkpoint files, resuming, snapshots, several processes) lives
here.

What this module deliberately does not handle: next-sentence prediction, gradient
accumulation, and snapshots of other models than `scratchformer.models.pretraining`'s.
"""

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from scratchformer.data.framing import SpecialIds, clean_review, frame_tokens
from scratchformer.measure.evaluation import autocast, is_distributed
from scratchformer.models.bert import BertConfig
from scratchformer.models.pretraining import (BertForMaskedLM, ElectraPretrainer,
                                              PretrainingWindows, bert_special_ids,
                                              IGNORED, causal_lm_loss, mask_tokens,
                                              masked_lm_loss)
from scratchformer.runs.checkpoint import (check_weights, read_checkpoint, restore_training,
                                           write_checkpoint)
from scratchformer.runs.provenance import check_recorded, check_same_run
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.loop import (evaluation_steps, lr_multiplier, make_optimizer,
                                      training_step)
from scratchformer.train.settings import OptimizerSettings

OBJECTIVES = ("mlm", "electra", "next-token")
PRETRAIN_FORMAT = "scratchformer.Pretraining"


@dataclass
class PretrainConfig(OptimizerSettings):
    """How to pretrain: objective (`"mlm"`, `"electra"` or `"next-token"`: the encoder
    under a causal mask, `causal_lm_loss`), steps, per-process batch of
    `window`-token windows, AdamW, schedule, clipping, precision and masking.

    ELECTRA's generator is the encoder's width with `generator_layers` layers of one head
    and `d_hidden = d_model`. The model is validated `evals` times; snapshots of the model
    are kept at step 0 and at the last step, half of it, a quarter, ...
    (`snapshot_halvings` halvings), so that one run gives the curve of fine-tuning
    against pretraining.

    Described in chapter 13, "The pretraining loop".
    """

    warmup: float = 0.05  # the shared fields of OptimizerSettings, with this run's defaults
    precision: str = "bf16"
    objective: str = "mlm"
    steps: int = 4000
    batch_size: int = 32
    window: int = 256
    mask_prob: float = 0.15
    generator_layers: int = 1
    rtd_weight: float = 50.0
    evals: int = 8
    snapshot_halvings: int = 3

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got "
                             f"{self.objective!r}")
        check_pretrain_numbers(self)  # the shared settings, types, masking, rtd_weight
        counts = (self.steps, self.batch_size, self.evals, self.generator_layers)
        if min(counts) <= 0 or self.window < 4 or self.snapshot_halvings < 0:
            raise ValueError("steps, batch_size, evals and generator_layers must be "
                             "positive, window at least 4 and snapshot_halvings >= 0; "
                             f"got {counts}, {self.window}, {self.snapshot_halvings}")

    def snapshot_steps(self) -> list[int]:
        """Step 0, then the last step divided by 2 ** k for k = halvings, ..., 0."""
        halves = {self.steps >> k for k in range(self.snapshot_halvings + 1)}
        return sorted({0} | {step for step in halves if step > 0})


def generator_config_of(config: BertConfig, settings: PretrainConfig) -> BertConfig:
    """ELECTRA's generator for an encoder `config`: as wide, `generator_layers` deep,
    one head, `d_hidden = d_model`.

    Described in chapter 13, "The pretraining loop".
    """
    return BertConfig(**{**asdict(config), "num_layers": settings.generator_layers,
                         "num_heads": 1, "d_hidden": config.d_model})


def build_pretrainer(config: BertConfig, settings: PretrainConfig) -> nn.Module:
    """A `BertForMaskedLM` (masked or next-token objective) or an `ElectraPretrainer`
    around an encoder of `config`.

    Described in chapter 13, "The pretraining loop".
    """
    if settings.objective in ("mlm", "next-token"):
        return BertForMaskedLM(config)
    return ElectraPretrainer(config, generator_config_of(config, settings),
                             settings.rtd_weight)


class PretrainingLoss(nn.Module):
    """A pretrainer's loss as a module: `forward(inputs, labels)` is the masked-LM loss of
    a `BertForMaskedLM`, the generator + replaced-token loss of an `ElectraPretrainer`, or,
    with `objective="next-token"`, the causal loss of the uncorrupted `inputs` (`labels`
    unused). (DistributedDataParallel averages gradients only through a module's
    `forward`.)

    Described in chapter 13, "The pretraining loop".
    """

    def __init__(self, model: nn.Module, objective: str = "mlm") -> None:
        super().__init__()
        self.model, self.objective = model, objective

    def forward(self, inputs: Tensor, labels: Tensor,
                generator: torch.Generator | None = None) -> Tensor:
        if isinstance(self.model, ElectraPretrainer):
            return self.model.loss(inputs, labels, generator)
        if self.objective == "next-token":
            return causal_lm_loss(self.model, inputs)
        return masked_lm_loss(self.model, inputs, labels)


def objective_inputs(ids: Tensor, objective: str, vocab_size: int, mask_id: int,
                     special: SpecialIds, mask_prob: float,
                     generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """`(inputs, labels)` of a batch of windows `ids` `(B, T)`: BERT's masking for the
    masked objectives; for next-token prediction the windows as they are, no label, and
    nothing drawn from `generator`.

    Described in chapter 13, "The pretraining loop".
    """
    if objective == "next-token":
        return ids, torch.full_like(ids, IGNORED)
    return mask_tokens(ids, mask_id=mask_id, vocab_size=vocab_size,
                       special_ids=[*special, mask_id], mask_prob=mask_prob,
                       generator=generator)


def save_pretraining(path: str | os.PathLike, model: nn.Module, settings: PretrainConfig,
                     training_state: dict | None = None) -> None:
    """Write a pretrainer's configurations and weights (and `training_state`) atomically.

    Described in chapter 13, "The pretraining loop".
    """
    if isinstance(model, DistributedDataParallel):
        model = model.module
    write_checkpoint(path, model, PRETRAIN_FORMAT, asdict(model.config),
                     {"settings": asdict(settings)}, training_state)


def read_pretraining(path: str | os.PathLike) -> dict:
    """A checked pretraining checkpoint: marker, version, fields, and the weights' shapes
    and values against the configurations (built on `meta`, allocating nothing).

    Described in chapter 13, "The pretraining loop".
    """
    payload = read_checkpoint(path, PRETRAIN_FORMAT)
    if not all(isinstance(payload.get(k), dict) for k in ("config", "settings", "model")):
        raise ValueError(f"{path}: 'config', 'settings' and 'model' must be mappings; "
                         "this code did not save it")
    try:
        config = BertConfig(**payload["config"])
        settings = PretrainConfig(**payload["settings"])
        with torch.device("meta"):
            expected = build_pretrainer(config, settings).state_dict()
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: its configuration is invalid ({err})") from None
    check_weights(payload["model"], expected, Path(path))  # names, shapes, finite values
    return payload


def check_pretrain_numbers(settings: PretrainConfig) -> None:
    """Refuse settings of the wrong type or out of range when they are made: the settings
    every run shares (`OptimizerSettings`), whole numbers for the counts, `mask_prob` in
    (0, 1) and `rtd_weight >= 0` (a negative weight would reward the encoder for wrong
    answers).

    Described in chapter 13, "The pretraining loop".
    """
    whole = ("steps", "batch_size", "window", "evals", "generator_layers",
             "snapshot_halvings")
    settings.check_optimizer_settings(whole, finite=("mask_prob", "rtd_weight"))
    if not 0 < settings.mask_prob < 1:
        raise ValueError(f"mask_prob must be in (0, 1), got {settings.mask_prob}")
    if settings.rtd_weight < 0:
        raise ValueError(f"rtd_weight must be >= 0, got {settings.rtd_weight}: a "
                         "negative weight rewards the encoder for wrong answers")


@torch.no_grad()
def evaluate_pretraining(model: nn.Module, windows: Iterable[Tensor], mask_id: int,
                         special: SpecialIds, mask_prob: float = 0.15,
                         precision: str = "fp32", objective: str = "mlm") -> float:
    """Mean `objective` loss over `windows`, masked the same way at every call (seed 0;
    next-token prediction masks nothing).

    Described in chapter 13, "The pretraining loop".
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    generator = torch.Generator(device).manual_seed(0)
    totals = torch.zeros(2, dtype=torch.float64, device=device)  # loss sum, windows
    loss_of = PretrainingLoss(model, objective)
    for ids in windows:
        inputs, labels = objective_inputs(ids.to(device), objective,
                                          model.config.vocab_size, mask_id, special,
                                          mask_prob, generator)
        with autocast(device, precision):
            loss = loss_of(inputs, labels, generator)
        totals += torch.stack([loss.double() * len(ids), totals.new_tensor(len(ids))])
    if is_distributed():
        dist.all_reduce(totals)
    model.train(was_training)
    return float(totals[0] / totals[1])


LAST_PRETRAINING = "last.pt"


def snapshot_name(step: int) -> str:
    """The file of the snapshot taken after `step` updates.

    Described in chapter 13, "The pretraining loop".
    """
    return f"snapshot-{step:07d}.pt"


def pretrain(model: nn.Module, train_windows: PretrainingWindows,
             val_windows: Iterable[Tensor], settings: PretrainConfig, mask_id: int,
             special: SpecialIds, out_dir: str | os.PathLike | None = None,
             resume: bool = False, progress: bool = True,
             log: Callable[[str], None] = print,
             provenance: dict | None = None) -> list[dict]:
    """Pretrain `model` in place for `settings.steps` steps; return one record per
    validation (step, windows seen, training and validation loss, seconds of training
    so far, tokens per second).

    With `out_dir`: `last.pt` (the training state) at each validation, and the snapshots
    of `settings.snapshot_steps()`, each with the seconds of training it took;
    `resume=True` continues from `last.pt`. Only rank 0 writes and logs. `provenance`
    (data, tokenizer) goes into every file, and a resumed run must match it.

    Described in chapter 13, "The pretraining loop".
    """
    device = next(model.parameters()).device
    data = provenance or {}
    rank = dist.get_rank() if is_distributed() else 0
    world_size = dist.get_world_size() if is_distributed() else 1
    optimizer = make_optimizer(model, settings.lr, settings.weight_decay)
    warmup_steps = max(1, round(settings.warmup * settings.steps))
    snapshots = set(settings.snapshot_steps())
    eval_after = evaluation_steps(settings.steps, settings.evals) | (snapshots - {0})
    generator = torch.Generator(device).manual_seed(settings.seed * 1_000_003 + rank)
    history: list[dict] = []
    step, trained_seconds = 0, 0.0
    if resume:
        if out_dir is None:
            raise ValueError("resume=True needs the out_dir of the run to continue")
        saved = read_pretraining(Path(out_dir) / LAST_PRETRAINING)
        state = saved["training"]
        then = {**saved["config"], **saved["settings"], **state.get("data", data)}
        now = {**asdict(model.config), **asdict(settings), **data}
        check_same_run(Path(out_dir), then, now)  # names only the fields that differ
        restore_training(Path(out_dir) / LAST_PRETRAINING, saved, model, optimizer,
                         {"step": settings.steps})
        history, step = list(state["history"]), state["step"]
        trained_seconds = state["seconds"]
        try:
            generator.set_state(state["mask_rng"])
        except (KeyError, TypeError, RuntimeError) as err:
            raise ValueError(f"{Path(out_dir) / LAST_PRETRAINING}: its masking random "
                             f"state is damaged ({err})") from None
        log(f"resuming {out_dir} at step {step} of {settings.steps}")
    objective = PretrainingLoss(model, settings.objective)
    network = DistributedDataParallel(objective) if is_distributed() else objective
    network.train()

    def save(name: str, training_state: dict | None) -> None:
        if rank == 0 and out_dir is not None:
            save_pretraining(Path(out_dir) / name, model, settings, training_state)

    if step == 0:
        save(snapshot_name(0), {"step": 0, "seconds": 0.0, "data": data})
    losses: list[Tensor] = []
    start = time.perf_counter()
    bar = tqdm(total=settings.steps, initial=step, disable=not progress or rank != 0)
    while step < settings.steps:
        ids = train_windows.batch(step).to(device)  # (B, T)
        inputs, labels = objective_inputs(ids, settings.objective,
                                          model.config.vocab_size, mask_id, special,
                                          settings.mask_prob, generator)
        for group in optimizer.param_groups:
            group["lr"] = settings.lr * lr_multiplier(step, settings.steps, warmup_steps)
        with autocast(device, settings.precision):
            loss = network(inputs, labels, generator)
        training_step(model, optimizer, loss, step, settings.grad_clip, settings.lr)
        step += 1
        bar.update(1)
        losses.append(loss.detach())
        if step not in eval_after:  # every snapshot step is one
            continue
        seconds = time.perf_counter() - start
        trained_seconds += seconds
        if step in snapshots:
            save(snapshot_name(step), {"step": step, "seconds": trained_seconds,
                                       "data": data})
        val_loss = evaluate_pretraining(model, val_windows, mask_id, special,
                                        settings.mask_prob, settings.precision,
                                        settings.objective)
        network.train()
        tokens = len(losses) * ids.numel() * world_size
        record = {"step": step, "windows_seen": step * len(ids) * world_size,
                  "train_loss": float(torch.stack(losses).mean()), "val_loss": val_loss,
                  "seconds": trained_seconds, "tokens_per_second": tokens / seconds}
        history.append(record)
        state = {"optimizer": optimizer.state_dict(), "step": step, "history": history,
                 "seconds": trained_seconds, "rng": torch.get_rng_state(),
                 "mask_rng": generator.get_state(), "data": data}
        save(LAST_PRETRAINING, state)
        if rank == 0:
            log(f"step {step}/{settings.steps}: train loss {record['train_loss']:.3f} | "
                f"val loss {val_loss:.3f} | {trained_seconds / 60:.1f} min, "
                f"{record['tokens_per_second']:,.0f} tokens/s")
        losses = []
        if is_distributed():
            dist.barrier()
        start = time.perf_counter()
    bar.close()
    return history


def load_pretrained_encoder(path: str | os.PathLike) -> tuple[BertConfig, dict]:
    """The encoder saved in a pretraining checkpoint: its configuration and weights, to
    load into `BertForSequenceClassification(config).encoder` (strictly).

    Described in chapter 13, "Fine-tuning".
    """
    payload = read_pretraining(path)
    prefix = "encoder."
    weights = {key[len(prefix):]: value for key, value in payload["model"].items()
               if key.startswith(prefix)}
    return BertConfig(**payload["config"]), weights


def pretrained_start(path: str | os.PathLike) -> tuple[BertConfig, dict, BPETokenizer]:
    """What fine-tuning from a pretraining snapshot needs: the encoder's configuration and
    weights, and the tokenizer saved beside the snapshot (`tokenizer.json`), refused
    unless it is the one the snapshot records.

    Described in chapter 13, "Fine-tuning".
    """
    config, weights = load_pretrained_encoder(path)
    tokenizer = BPETokenizer.load(Path(path).parent / "tokenizer.json")
    check_recorded(read_pretraining(path), Path(path), tokenizer)
    special, _ = bert_special_ids(tokenizer)
    if (tokenizer.n_vocab, special.pad) != (config.vocab_size, config.pad_id):
        raise ValueError(f"{path}: the tokenizer beside it ({tokenizer.n_vocab} ids, "
                         f"[PAD] {special.pad}) is not the one the encoder was trained "
                         f"with ({config.vocab_size} ids, pad_id {config.pad_id})")
    return config, weights, tokenizer


def encode_labelled(tokenizer: BPETokenizer, texts: Sequence[str], max_len: int = 256,
                    truncation: str = "head+tail") -> Tensor:
    """Reviews as `(N, max_len)` rows for the classifier, in this tokenizer's ids and
    special tokens (chapter 10's framing). A review's text is text: "[MASK]" written in
    it is encoded as its letters, never as the special token (as GPT-2's framing does).

    Described in chapter 13, "Fine-tuning".
    """
    special, _ = bert_special_ids(tokenizer)
    rows = [frame_tokens(tokenizer.encode_ordinary(clean_review(t)), max_len, truncation,
                         special) for t in texts]
    return torch.tensor(rows, dtype=torch.long).reshape(len(rows), max_len)
