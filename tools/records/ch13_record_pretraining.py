"""Collect chapter 13's recorded runs into one JSON file the chapter reads.

Reads a folder of runs made with `scratchformer pretrain` (sub-folders `mlm/` and
`electra/`) and `scratchformer train-imdb --init` (one sub-folder per fine-tuning run,
named `<arm>_s<seed>`, e.g. `mlm3000_s1`, and `scratch_long/`), and writes: each
pretraining run's command, settings, history and snapshot times; each fine-tuning run's
command, snapshot, seed, validation and test accuracy and times; for every snapshot of the
masked language model, its loss on held-out windows at the positions that show `[MASK]`, a
random token or their own token, next to a model of token frequencies alone; and its top
predictions for a few sentences with a hidden word, before and after pretraining.

    python tools/records/ch13_record_pretraining.py --runs runs/pretraining \
        --record book/results/pretrain_cpu.json

What this deliberately does not handle: runs made under `torchrun` on several machines
(their snapshots sit on one of them), and more than one pretraining run per objective.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import existing_folder, output_file, run_folder


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: a folder holding the `mlm/` and `electra/` pretrain runs,
    `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", required=True, type=existing_folder, help="the folder of runs")
    parser.add_argument("--record", required=True, type=output_file, help="JSON file to write")
    args = parser.parse_args(argv)
    pretrain_run = run_folder("pretrain", ("tokenizer.json",))
    for objective in ("mlm", "electra"):
        try:
            pretrain_run(str(args.runs / objective))
        except argparse.ArgumentTypeError as err:
            parser.error(f"argument --runs: {err}")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import json
import re

import numpy as np
import torch
import torch.nn.functional as F

from scratchformer.data.framing import clean_review
from scratchformer.models.bert import BertConfig
from scratchformer.models.pretraining import (IGNORED, BertForMaskedLM,
                                              PretrainingWindows, bert_special_ids,
                                              mask_tokens)
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.pretrain import PretrainConfig, read_pretraining

from scratchbook.records import PRETRAIN_CPU
from scratchbook.commands import tool_command

# Sentences with one word hidden ("___"), not from IMDB. Who wrote them, when, and whether they
# shaped a choice goes into the record beside them (SENTENCES_MADE).
SENTENCES = [
    "This movie was ___. I would not recommend it to anyone.",
    "The acting was superb and the story kept me on the edge of my ___.",
    "I have seen better ___ in a school play.",
    "It is one of the worst films I have ever ___.",
    "A wonderful film: funny, moving and beautifully ___.",
]
SENTENCES_MADE = {
    "made_by": "a language model (the one that wrote this script), not a person; none is "
               "from IMDB",
    "written": "2026-11-30, with this script, the day the two pretraining runs were recorded; "
               "they are scored on those runs' snapshots only",
    "shaped_a_choice": "no: no run, setting or model was chosen on them",
}


def snapshot_seconds(folder: Path) -> dict[int, float]:
    """Each snapshot's step -> seconds of training it took."""
    times = {}
    for path in sorted(folder.glob("snapshot-*.pt")):
        state = read_pretraining(path)["training"]
        times[state["step"]] = state["seconds"]
    return times


def load_mlm(snapshot: Path) -> BertForMaskedLM:
    payload = read_pretraining(snapshot)
    model = BertForMaskedLM(BertConfig(**payload["config"]))
    model.load_state_dict(payload["model"])
    return model.eval()


def held_out_masked(folder: Path, tokenizer: BPETokenizer, batches: int = 16,
                    window: int = 256) -> tuple[list[tuple[torch.Tensor, ...]], torch.Tensor]:
    """A run's held-out windows, masked as every run is judged (15% with 80/10/10, seed 0),
    as `(inputs, labels, original ids)` batches; and the log-frequencies of its training
    stream's tokens (add-one smoothed), the model that knows no context."""
    special, mask_id = bert_special_ids(tokenizer)
    fit, val = np.load(folder / "fit.npy"), np.load(folder / "val.npy")
    counts = np.bincount(fit, minlength=tokenizer.n_vocab).astype(np.float64) + 1.0
    unigram = torch.tensor(np.log(counts / counts.sum()), dtype=torch.float32)
    windows = PretrainingWindows(val, window, 32, special)
    generator = torch.Generator().manual_seed(0)
    masked = [mask_tokens(ids, mask_id=mask_id, vocab_size=tokenizer.n_vocab,
                          special_ids=[*special, mask_id], generator=generator) + (ids,)
              for ids, _ in zip(windows, range(batches))]
    return masked, unigram


def loss_by_position(folder: Path, tokenizer: BPETokenizer, batches: int = 16,
                     window: int = 256) -> dict:
    """Each MLM snapshot's mean loss on held-out windows of `window` tokens (the run's own)
    at the chosen positions showing `[MASK]`, a random token or their own token; and the loss
    of token frequencies alone (counted over the training stream, add-one smoothed) at the
    same positions."""
    _, mask_id = bert_special_ids(tokenizer)
    masked, unigram = held_out_masked(folder, tokenizer, batches, window)
    kinds = {"[MASK]": lambda i, o: i == mask_id, "own token": lambda i, o: i == o,
             "random token": lambda i, o: (i != mask_id) & (i != o)}
    result: dict = {"frequencies alone": {}, "snapshots": {}}
    for kind, test in kinds.items():
        losses = [-unigram[labels[(labels != IGNORED) & test(inputs, ids)]]
                  for inputs, labels, ids in masked]
        result["frequencies alone"][kind] = float(torch.cat(losses).mean())
    for path in sorted(folder.glob("snapshot-*.pt")):
        model = load_mlm(path)
        sums = {kind: [0.0, 0] for kind in kinds}
        with torch.no_grad():
            for inputs, labels, ids in masked:
                logits = model(inputs).float()  # (B, T, V)
                for kind, test in kinds.items():
                    where = (labels != IGNORED) & test(inputs, ids)
                    losses = F.cross_entropy(logits[where], labels[where], reduction="sum")
                    sums[kind][0] += float(losses)
                    sums[kind][1] += int(where.sum())
        step = read_pretraining(path)["training"]["step"]
        result["snapshots"][str(step)] = {kind: total / count
                                          for kind, (total, count) in sums.items()}
    return result


def top_predictions(snapshot: Path, tokenizer: BPETokenizer, k: int = 5) -> list[dict]:
    """The masked language model's k likeliest tokens at each sentence's hidden word."""
    model = load_mlm(snapshot)
    special, mask_id = bert_special_ids(tokenizer)
    rows = []
    for sentence in SENTENCES:
        before, after = sentence.split("___")
        ids = [special.cls, *tokenizer.encode(clean_review(before.rstrip())), mask_id,
               *tokenizer.encode(after), special.sep]
        with torch.no_grad():
            logits = model(torch.tensor([ids]))[0, ids.index(mask_id)].float()
        probabilities = torch.softmax(logits, dim=-1)
        best = probabilities.topk(k)
        rows.append({"sentence": sentence,
                     "top": [{"token": tokenizer.decode([i]), "probability": p}
                             for i, p in zip(best.indices.tolist(), best.values.tolist())]})
    return rows


def main(args: argparse.Namespace, argv: list[str]) -> int:
    record: dict = {**tool_command("ch13_record_pretraining.py", argv, str(args.record)),
                    "commands": [], "commands_as_run": [], "pretraining": {}, "fine_tuning": []}
    for objective in ("mlm", "electra"):
        folder = args.runs / objective
        results = json.loads((folder / "results.json").read_text())
        record["commands"].append(results["command"])
        record["commands_as_run"].append(results["command_as_run"])
        record["pretraining"][objective] = {
            key: results[key] for key in ("command", "command_as_run", "model_config", "settings", "parameters",
                                          "encoder_parameters", "data", "tokenizer",
                                          "hardware", "seconds", "history")}
        record["pretraining"][objective]["snapshot_seconds"] = {
            str(step): seconds for step, seconds in snapshot_seconds(folder).items()}
    for folder in sorted(p for p in args.runs.iterdir() if (p / "results.json").is_file()
                         and p.name not in ("mlm", "electra")):
        results = json.loads((folder / "results.json").read_text())
        snapshot = Path(results["init"]["checkpoint"])
        arm = re.fullmatch(r"(.+?)(_s\d+)?", folder.name).group(1)
        record["commands"].append(results["command"])
        record["commands_as_run"].append(results["command_as_run"])
        record["fine_tuning"].append({
            "name": folder.name, "arm": arm, "objective": snapshot.parent.name,
            "snapshot_step": read_pretraining(snapshot)["training"]["step"],
            "seed": results["train_config"]["seed"],
            "epochs": results["train_config"]["epochs"],
            "command": results["command"],
            "command_as_run": results["command_as_run"],
            "validation_accuracy": results["validation"]["accuracy"],
            "test_accuracy": results["test"]["accuracy"],
            "seconds": results["seconds"],
            "history": [{k: r[k] for k in ("epoch", "step", "val_accuracy", "train_loss",
                                           "seconds")} for r in results["history"]],
            "load_average": results["load_average"],
        })
    mlm = args.runs / "mlm"
    tokenizer = BPETokenizer.load(mlm / "tokenizer.json")
    last = max(PretrainConfig(**record["pretraining"]["mlm"]["settings"]).snapshot_steps())
    record["predictions"] = {
        "sentences": SENTENCES_MADE,
        "before": top_predictions(mlm / "snapshot-0000000.pt", tokenizer),
        "after": top_predictions(mlm / f"snapshot-{last:07d}.pt", tokenizer),
        "after_step": last,
    }
    record["loss_by_position"] = loss_by_position(
        mlm, tokenizer, window=record["pretraining"]["mlm"]["settings"]["window"])
    PRETRAIN_CPU.write(record, args.record)
    print(f"wrote {args.record}: {len(record['fine_tuning'])} fine-tuning runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
