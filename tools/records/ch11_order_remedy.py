"""One remedy for a classifier that does not read clause order: the served model trained on,
for a few epochs, with order pairs made from its own training reviews.

The order pairs' rule (`order_pairs.py`: two clauses joined by a contrast, leaning opposite
ways by VADER, swapped) is run on seed 0's fit split, the 22,500 training reviews the served
run learned from (never on its validation slice, where the scored pairs come from; a sentence
also found there is dropped). Each pair gives two texts with the same words: the one whose
stressed clause leans positive labelled positive, the other negative. The served model (its
weights read from the committed ONNX file, `served_weights.py`: the training checkpoint is not
kept, and a retrain on this machine did not reproduce it bit for bit) then trains on these
texts mixed with `--replay` of the same fit split's whole reviews (drawn with `--seed`, their
own labels, read in windows as the run read them) so that reading reviews is not unlearned:
AdamW as `scratchformer.train` sets it, `--lr` warmed up over the first 10% of updates and
decayed linearly to 0, batches of 32, `--epochs` epochs. After each epoch the model is scored
on the validation half of the scored pairs (`book/results/order_pairs_found.json`: the share
ordered) and on the run's validation reviews (accuracy); the epoch with the most pairs
ordered (the earlier on a tie; epoch 0 is the served model itself) is kept as `best.pt`, and
only that model is tested, once, on IMDB's test reviews. The test half of the pairs is scored
by `ch11_order_scores.py --remedy`.

    python tools/records/ch11_order_remedy.py --data $IMDB_DIR --cache runs/cache \
        --out runs/remedy/pairs.json

What this deliberately does not handle: other seeds' runs, choosing the learning rate or the
mix (one setting is tried), and keeping the served model's teacher-labelled reviews in the
replay (only the fit split's labelled ones are replayed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import (existing_folder, output_file_in_new_folder, positive_float,
                              positive_int, seed_int)



def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before torch is imported."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True)
    parser.add_argument("--cache", type=Path, required=True, help="the token cache")
    parser.add_argument("--epochs", type=positive_int, default=2)
    parser.add_argument("--lr", type=positive_float, default=2e-4)
    parser.add_argument("--replay", type=positive_int, default=4000,
                        help="fit-split reviews mixed in (at most 22,500)")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--out", type=output_file_in_new_folder, required=True,
                        help="the run's .json; its folder is the name without .json")
    args = parser.parse_args(argv)
    if args.out.suffix != ".json":
        parser.error(f"--out {args.out}: name a .json file")
    if args.out.with_suffix("").exists():
        parser.error(f"--out {args.out}: {args.out.with_suffix('')} already exists")
    return args


if __name__ == "__main__":
    ARGUMENTS = parse()

import json
import shutil
import time

import torch
import torch.nn.functional as F

from scratchformer.data.batches import ReviewLoader, WindowedReviews
from scratchformer.data.framing import review_token_lists
from scratchformer.data.imdb import load_imdb
from scratchformer.data.review_cache import review_tokens
from scratchformer.data.review_windows import review_windows
from scratchformer.io.files import write_atomically
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.evaluation import evaluate, logits_of
from scratchformer.runs.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from scratchformer.train.loop import (classify_texts, lr_multiplier, make_optimizer,
                                      training_step)
from scratchformer.train.presets import preset

import order_pairs as rule
from served_weights import served_model
from scratchbook.commands import tool_command

BATCH = 32


def windows(token_lists: list, max_len: int) -> WindowedReviews:
    """Token lists as chapter 11's windows."""
    return WindowedReviews.from_reviews([review_windows(list(t), max_len)
                                         for t in token_lists])


def ordered_share(model: torch.nn.Module, pairs: list[dict]) -> dict:
    """Pairs whose positive text gets the higher P(positive), read as the box reads them."""
    texts = [p["positive"] for p in pairs] + [p["negative"] for p in pairs]
    positive = [row["probabilities"]["positive"]
                for row in classify_texts(model, texts, "windows")]
    n = len(pairs)
    ordered = sum(positive[i] > positive[n + i] for i in range(n))
    tied = sum(positive[i] == positive[n + i] for i in range(n))
    return {"pairs": n, "ordered": ordered, "tied": tied, "share_ordered": ordered / n}


def main(args: argparse.Namespace, argv: list[str]) -> int:
    torch.set_num_threads(1)
    started = time.perf_counter()
    model, served = served_model()
    train_config = preset("cpu")[1]
    data = load_imdb(args.data, ["train", "test"])
    train, test = data["train"], data["test"]
    record_file = rule.read_pairs()
    scored = rule.pair_texts(record_file, train.texts, train.labels)
    validation_pairs = [p for p in scored if p["half"] == "validation"]
    scored_sentences = {p["original"] for p in scored}
    fit_index = rule.source_fit_reviews(train.labels)
    mined = [p for p in rule.find_pairs(train.texts, train.labels, fit_index)
             if p["original"] not in scored_sentences]
    mining_seconds = time.perf_counter() - started
    print(f"{len(mined)} training pairs from {len(fit_index)} fit-split reviews", flush=True)
    generator = torch.Generator().manual_seed(args.seed)
    replay = [fit_index[i] for i in
              torch.randperm(len(fit_index), generator=generator)[: args.replay].tolist()]
    train_tokens = review_tokens(train, args.cache)
    pair_texts = [p["positive"] for p in mined] + [p["negative"] for p in mined]
    token_lists = review_token_lists(pair_texts) + [train_tokens[i].tolist() for i in replay]
    labels = [1] * len(mined) + [0] * len(mined) + [train.labels[i] for i in replay]
    max_len = model.config.max_len
    loader = ReviewLoader(windows(token_lists, max_len), torch.tensor(labels), BATCH,
                          shuffle=True, seed=args.seed,
                          length_groups=train_config.length_groups)
    val_index = rule.source_reviews(train.labels)
    val_loader = ReviewLoader(windows([train_tokens[i] for i in val_index], max_len),
                              torch.tensor([train.labels[i] for i in val_index]),
                              4 * BATCH, length_groups=1)
    folder = args.out.with_suffix("")
    folder.mkdir(parents=True)
    save_checkpoint(folder / "epoch0.pt", model, model.config, "windows")  # the served model
    epochs = [{"epoch": 0, "updates": 0, "pairs_validation": ordered_share(model,
                                                                            validation_pairs),
               "validation_accuracy": evaluate(model, val_loader)["accuracy"],
               "train_loss": None, "seconds": 0.0}]
    print(epochs[-1], flush=True)
    torch.manual_seed(args.seed)
    optimizer = make_optimizer(model, args.lr, train_config.weight_decay)
    total = args.epochs * len(loader)
    warmup = max(1, round(train_config.warmup * total))
    step = 0
    for epoch in range(1, args.epochs + 1):
        clock = time.perf_counter()
        loader.set_epoch(epoch - 1)
        model.train()
        losses = []
        for ids, mask, batch_labels in loader:
            for group in optimizer.param_groups:
                group["lr"] = args.lr * lr_multiplier(step, total, warmup)
            loss = F.cross_entropy(logits_of(model, ids, mask).float(), batch_labels)
            training_step(model, optimizer, loss, step, train_config.grad_clip, args.lr)
            step += 1
            losses.append(loss.item())
        model.eval()
        save_checkpoint(folder / f"epoch{epoch}.pt", model, model.config, "windows")
        epochs.append({"epoch": epoch, "updates": step,
                       "pairs_validation": ordered_share(model, validation_pairs),
                       "validation_accuracy": evaluate(model, val_loader)["accuracy"],
                       "train_loss": sum(losses) / len(losses),
                       "seconds": time.perf_counter() - clock})
        print(epochs[-1], flush=True)
    best = max(epochs, key=lambda e: (e["pairs_validation"]["ordered"], -e["epoch"]))
    shutil.copyfile(folder / f"epoch{best['epoch']}.pt", folder / "best.pt")
    trained_minutes = (time.perf_counter() - started) / 60
    model = load_checkpoint(folder / "best.pt", torch.device("cpu")).eval()
    test_loader = ReviewLoader(windows(review_tokens(test, args.cache), max_len),
                               torch.tensor(test.labels), 4 * BATCH, length_groups=1)
    tested = evaluate(model, test_loader)
    print("test", tested["accuracy"], flush=True)
    result = {
        **tool_command("ch11_order_remedy.py", argv),
        "remedy": "the served model trained on for a few epochs with order pairs made by the "
                  "rule from seed 0's fit split (positive text labelled 1, negative 0) "
                  "mixed with a replay of the fit split's whole reviews",
        "served": served,
        "training_pairs": len(mined), "training_texts": 2 * len(mined),
        "replay_reviews": len(replay), "lr": args.lr, "epochs": args.epochs,
        "batch_size": BATCH, "updates_per_epoch": len(loader),
        "choice": "the epoch with the most validation-half pairs ordered (the earlier on a "
                  "tie; epoch 0 is the served model)",
        "history": epochs, "chosen_epoch": best["epoch"],
        "checkpoint_sha256": file_sha256(folder / "best.pt"),
        "test": {key: tested[key] for key in ("accuracy", "loss", "examples")},
        "minutes": {"mining_pairs": mining_seconds / 60, "to_trained": trained_minutes,
                    "total": (time.perf_counter() - started) / 60},
        "config": read_checkpoint(folder / "best.pt")["config"],
    }
    text = json.dumps(result, indent=1) + "\n"
    for path in (folder / "results.json", args.out):
        write_atomically(path, lambda h: h.write(text.encode("utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
