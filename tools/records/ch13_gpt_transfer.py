"""Chapter 13's causal route: fine-tune chapter 12's GPT (pretrained, or the same model
from scratch) as an IMDB classifier, and record the comparison for the page.

    python tools/records/ch13_gpt_transfer.py run --gpt runs/gpt_s0 --labels 1000 --seed 0 \
        --out runs/transfer/pretrained_1000_s0.json [--scratch] [--lr 0.001] ...
    python tools/records/ch13_gpt_transfer.py record --runs runs/transfer --gpt runs/gpt_s0 runs/gpt_s1 \
        --record book/results/transfer_cpu.json [--selection runs/select] \
        [--partial runs/transfer_steps]

`--partial` runs fine-tune a snapshot of the pretraining (`--gpt` a folder holding it as
`best.pt`, with the run's tokenizer) and are compared with from scratch at that step.

The validation slice is the same 2,500 training reviews for every run (a fixed shuffle);
`--labels N` fine-tunes on N reviews of the other 22,500 (the same N for the same seed, so
a pretrained run and a from-scratch run of one seed see the same reviews in the same
order). The test split is read once per run, after the best validation weights are chosen.
"""

import argparse
import os
import sys
from pathlib import Path

from scratchbook.arguments import (device, existing_folder, non_negative_int, output_file,
                                   output_file_in_new_folder, positive_float, positive_int,
                                   run_folder, seed_int)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: runs and folders of the right kind, counts positive,
    a present device, output files writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("run", help="fine-tune once and write a results file")
    one.add_argument("--gpt", required=True,
                     type=run_folder("train-gpt", ("best.pt", "tokenizer.json"), results_optional=True),
                     help="a train-gpt run folder (or a folder holding one of its snapshots as "
                          "best.pt, with its tokenizer.json)")
    one.add_argument("--scratch", action="store_true",
                     help="the same model with fresh weights (the GPT's tokenizer still)")
    one.add_argument("--labels", type=non_negative_int, default=0, help="labelled reviews (0: all)")
    one.add_argument("--seed", type=seed_int, default=0)
    one.add_argument("--lr", type=positive_float, default=1e-3)
    one.add_argument("--val-reviews", type=positive_int, default=2_500,
                     help="training reviews held out to validate on (the first of a fixed "
                          "shuffle)")
    one.add_argument("--max-len", type=positive_int, default=256,
                     help="ids per review, at most the GPT's context (default: 256)")
    one.add_argument("--epochs", type=positive_int, default=1)
    one.add_argument("--evals-per-epoch", type=positive_int, default=1)
    one.add_argument("--patience", type=non_negative_int, default=0)
    one.add_argument("--max-seconds", type=positive_float, default=float("inf"))
    one.add_argument("--no-test", action="store_true",
                     help="choosing settings: validation only, the test split unread")
    one.add_argument("--threads", type=positive_int, default=1)
    one.add_argument("--device", type=device, default="cpu", help="cpu, cuda or cuda:N")
    one.add_argument("--data", type=existing_folder, default=os.environ.get("IMDB_DIR"),
                     help="the IMDB folder (default: $IMDB_DIR)")
    one.add_argument("--cache", type=Path, default=Path("runs/cache"))
    one.add_argument("--out", required=True, type=output_file_in_new_folder,
                     help="the results file to write (its folders are created)")
    many = commands.add_parser("record", help="gather the runs into one results file")
    many.add_argument("--runs", required=True, type=existing_folder,
                      help="the folder of `run`'s results files")
    many.add_argument("--gpt", nargs="+", required=True,
                      type=run_folder("train-gpt", ("best.pt", "tokenizer.json")))
    many.add_argument("--record", required=True, type=output_file)
    many.add_argument("--selection", type=existing_folder,
                      help="the runs (--no-test) that chose the settings")
    many.add_argument("--partial", type=existing_folder,
                      help="fine-tunings of the GPTs' snapshots taken along the way, each "
                           "compared with from scratch on as many labels")
    many.add_argument("--data", type=existing_folder, default=os.environ.get("IMDB_DIR"),
                      help="the IMDB folder (default: $IMDB_DIR)")
    many.add_argument("--context-reviews", type=positive_int, default=300,
                      help="test reviews the loss by context is measured on")
    args = parser.parse_args(argv)
    if args.command == "record" and not any(args.runs.glob("*.json")):
        parser.error(f"argument --runs: {args.runs} holds no results file of `run` (*.json)")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import hashlib
import json
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

from scratchformer.data.imdb import load_imdb
from scratchformer.data.windows import Document, encode_document
from scratchformer.io.files import write_atomically
from scratchformer.io.fingerprint import file_sha256
from scratchformer.models.gpt import GPTConfig
from scratchformer.runs.folders import command_record
from scratchformer.runs.hardware import hardware_info, one_minute_load, timing_load
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.gpt import load_gpt, read_gpt_checkpoint
from scratchformer.train.transfer import (GPTClassifier, classification_accuracy,
                                          encode_for_gpt, fine_tune)

from scratchbook.records import TRANSFER_CPU
from scratchbook.commands import tool_command

CONTEXTS = (1, 2, 4, 16, 64, 256)  # tokens of context the loss is measured with


def encoded(tokenizer_file: Path, texts: list[str], max_len: int, cache: Path) -> tuple:
    """`encode_for_gpt` of the texts, kept in `cache` under the tokenizer's and texts'
    sha256 and `max_len`."""
    digest = hashlib.sha256(tokenizer_file.read_bytes() + f"{max_len}".encode())
    for text in texts:
        digest.update(text.encode() + b"\0")
    path = cache / f"gpt-classifier-{digest.hexdigest()[:24]}.npz"
    if not path.exists():
        ids, lengths = encode_for_gpt(BPETokenizer.load(tokenizer_file), texts, max_len)
        cache.mkdir(parents=True, exist_ok=True)
        write_atomically(path, lambda handle: np.savez(handle, ids=ids.numpy(),
                                                       lengths=lengths.numpy()))
    arrays = np.load(path)
    return torch.from_numpy(arrays["ids"]), torch.from_numpy(arrays["lengths"])


def run(args: argparse.Namespace, argv: list[str]) -> int:
    started = time.perf_counter()
    load_start = one_minute_load()
    torch.set_num_threads(args.threads)
    gpt_run = Path(args.gpt)
    tokenizer_file = gpt_run / "tokenizer.json"
    payload = read_gpt_checkpoint(gpt_run / "best.pt")
    config = GPTConfig(**payload["config"])
    max_len = min(args.max_len, config.context_length)
    data = load_imdb(args.data)
    ids, lengths = encoded(tokenizer_file, data["train"].texts, max_len, args.cache)
    labels = torch.tensor(data["train"].labels)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
    val, pool = order[: args.val_reviews], order[args.val_reviews :]
    shuffled = pool[torch.randperm(len(pool),
                                   generator=torch.Generator().manual_seed(1000 + args.seed))]
    fit = shuffled[: args.labels] if args.labels else shuffled
    torch.manual_seed(args.seed)
    model = GPTClassifier(config)
    if not args.scratch:
        model.gpt.load_state_dict(payload["model"])
    device = torch.device(args.device)
    model, ids, lengths, labels = (t.to(device) for t in (model, ids, lengths, labels))
    prepared = time.perf_counter()
    history = fine_tune(model, ids, lengths, labels, fit, val, lr=args.lr,
                        epochs=args.epochs, evals_per_epoch=args.evals_per_epoch,
                        patience=args.patience, max_seconds=args.max_seconds,
                        seed=args.seed)
    trained = time.perf_counter()
    test_accuracy = None  # a run that only chooses settings never reads the test split
    if not args.no_test:
        test_ids, test_lengths = encoded(tokenizer_file, data["test"].texts, max_len,
                                             args.cache)
        test_labels = torch.tensor(data["test"].labels)
        test_accuracy = classification_accuracy(model, test_ids.to(device),
                                                test_lengths.to(device),
                                                test_labels.to(device))
    best = max(history, key=lambda r: r["val_accuracy"])
    record = {
        **command_record(["python", "tools/records/ch13_gpt_transfer.py", *argv]),
        "init": "scratch" if args.scratch else "pretrained", "labels": len(fit),
        "seed": args.seed, "lr": args.lr, "epochs": args.epochs, "max_len": max_len,
        "gpt": {"checkpoint_sha256": file_sha256(gpt_run / "best.pt"),
                "tokenizer_sha256": file_sha256(tokenizer_file),
                "step": payload["training"]["step"]},
        "history": history, "best_step": best["step"],
        "validation_accuracy": best["val_accuracy"], "test_accuracy": test_accuracy,
        "train_seconds": history[-1]["seconds"],
        "seconds": {"prepare": prepared - started, "fine_tune": trained - prepared,
                    "total": time.perf_counter() - started},
        "hardware": hardware_info(device),
        "load": timing_load(load_start, one_minute_load(), own=(0, args.threads)),
    }
    text = json.dumps(record, indent=1) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_atomically(Path(args.out), lambda handle: handle.write(text.encode()))
    tested = "" if test_accuracy is None else f", test {test_accuracy:.2%}"
    print(f"{args.out}: validation {best['val_accuracy']:.2%}{tested}, "
          f"{record['train_seconds'] / 60:.1f} min of training")
    return 0


@torch.no_grad()
def loss_by_context(gpt_run: Path, texts: list[str], targets: int = 1_000) -> dict[str, float]:
    """The GPT's loss (nats) at the same held-out tokens when it may read only the last
    `c` tokens before each, for each `c` in `CONTEXTS`: a model that reads only the
    previous token scores the same for every `c`."""
    model = load_gpt(gpt_run)
    tokenizer = BPETokenizer.load(gpt_run / "tokenizer.json")
    stream = torch.tensor([i for text in texts  # chapter 12's documents, end to end
                           for i in encode_document(tokenizer, Document(text))])
    longest = min(max(CONTEXTS), model.config.context_length)
    where = torch.linspace(longest, len(stream) - 1, targets).long()  # (N,) target positions
    losses = {}
    for context in (c for c in CONTEXTS if c <= longest):
        inputs = stream[where[:, None] - context + torch.arange(context)]  # (N, c)
        logits = torch.cat([model(rows)[:, -1] for rows in inputs.split(32)])  # (N, V)
        losses[str(context)] = float(F.cross_entropy(logits, stream[where]))
    return losses


def paired(a: list[dict], b: list[dict]) -> dict:
    """Mean and standard error of the seed-by-seed difference a - b of test accuracy, in
    points, over the seeds both hold."""
    by_seed = {r["seed"]: r for r in b}
    differences = [100 * (r["test_accuracy"] - by_seed[r["seed"]]["test_accuracy"])
                   for r in a if r["seed"] in by_seed]
    se = statistics.stdev(differences) / len(differences) ** 0.5
    return {"mean": statistics.fmean(differences), "se": se, "seeds": len(differences)}


def record(args: argparse.Namespace, argv: list[str]) -> int:
    heldout = load_imdb(args.data)["test"].texts[: args.context_reviews]
    pretraining = {}
    for folder in map(Path, args.gpt):
        results = json.loads((folder / "results.json").read_text())
        pretraining[folder.name] = {key: results[key] for key in (
            "command", "command_as_run", "model_config", "train_config", "parameters",
            "data", "tokenizer", "hardware", "load_average", "seconds", "heldout")}
        pretraining[folder.name]["history"] = [
            {k: v for k, v in r.items() if k != "step_losses"} for r in results["history"]]
        pretraining[folder.name]["loss_by_context"] = loss_by_context(folder, heldout)
    runs = [json.loads(p.read_text()) for p in sorted(Path(args.runs).glob("*.json"))]
    arms: dict[str, list[dict]] = {}
    for r in runs:
        arms.setdefault(f"{r['init']}_{r['labels']}", []).append(r)
    pretrain_seconds = statistics.fmean(p["seconds"]["train"] for p in pretraining.values())
    comparisons = {}
    for labels in sorted({r["labels"] for r in runs}):
        pretrained, scratch = arms.get(f"pretrained_{labels}"), arms.get(f"scratch_{labels}")
        if not (pretrained and scratch):
            continue
        gain = paired(pretrained, scratch)
        # The pretrained arm's gain over the from-scratch arm. Not "equal compute": the two
        # arms' minutes, recorded beside it, differ by far more than 10%.
        comparisons[str(labels)] = {
            "pretrained_gain_points": gain["mean"], "pretrained_gain_se": gain["se"],
            "seeds": gain["seeds"],
            "pretrained_total_seconds": pretrain_seconds + statistics.fmean(
                r["train_seconds"] for r in pretrained),
            "scratch_total_seconds": statistics.fmean(r["train_seconds"] for r in scratch),
        }
    by_step: dict[int, list[dict]] = {}  # fine-tunings of snapshots taken along the way
    partial = ([json.loads(p.read_text()) for p in sorted(Path(args.partial).glob("*.json"))]
               if args.partial else [])
    for r in partial:
        by_step.setdefault(r["gpt"]["step"], []).append(r)
    steps = {}
    for step, members in sorted(by_step.items()):
        gain = paired(members, arms[f"scratch_{members[0]['labels']}"])
        steps[str(step)] = {
            "labels": members[0]["labels"], "seeds": gain["seeds"],
            "pretraining_seconds": statistics.fmean(  # the GPT's history: per interval
                sum(h["seconds"] for h in p["history"] if h["step"] <= step)
                for p in pretraining.values()),
            "test_accuracy": statistics.fmean(r["test_accuracy"] for r in members),
            "gain_points": gain["mean"], "gain_se": gain["se"]}
    selection = [{key: r[key] for key in ("command", "init", "labels", "seed", "lr",
                                          "validation_accuracy", "gpt")}
                 for r in (json.loads(p.read_text())
                           for p in sorted(Path(args.selection).glob("*.json")))
                 ] if args.selection else []
    command = tool_command("ch13_gpt_transfer.py", argv, str(args.record))["command"]
    out = {"command": command, "pretraining": pretraining,
           "pretraining_train_seconds": pretrain_seconds, "selection": selection,
           "fine_tuning": runs, "comparisons": comparisons,
           "snapshot_fine_tuning": partial, "snapshot_comparisons": steps}
    TRANSFER_CPU.write(out, Path(args.record))
    print(json.dumps(comparisons, indent=1))
    return 0


def main(args: argparse.Namespace, argv: list[str]) -> int:
    return run(args, argv) if args.command == "run" else record(args, argv)


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
