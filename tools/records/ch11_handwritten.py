"""Chapter 11's reviews and pairs written for the book (by a language model, after the first
served model: `WRITTEN_REVIEWS.provenance` says when and what they have shaped since; they are
not held out): short reviews, and minimal pairs where word order decides, scored by the served
Transformer, bag of words and NBSVM. The record carries that provenance.

The Transformer is a `train-imdb` checkpoint (the one the browser page serves: its sha256 is
checked against `_static/models/imdb/manifest.json` and the record says whether it matched),
scored through `scratchformer.train.classify.load_classifier`, as `scratchformer classify`
frames a text; a few texts are also run through the page's ONNX file where onnxruntime is
installed. Bag-of-words logistic regression and NBSVM are fitted with
`scratchformer.measure.baselines` on the 25,000 training reviews, with the settings that
`book/results/imdb_baselines.json` chose on validation. With `--windows`, the record also
compares, on the validation reviews the run held out, reading head and tail (as trained) with
averaging the logits of consecutive 254-token windows over the whole review.

    python tools/records/ch11_handwritten.py --checkpoint runs/preset_seed0 --data $IMDB_DIR \
        --windows --record book/results/handwritten_reviews.json

What this deliberately does not handle: other baselines' settings than the recorded ones, a
Transformer fine-tuned from chapter 13's pretraining (it reads GPT-2's framing only for
`--windows`), and the browser's own tokenizer (the ONNX check feeds it Python's ids).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import (checkpoint, default_record, existing_file, existing_folder,
                                   record_argument)

from scratchbook.record import book_root
from scratchbook.records import HANDWRITTEN_REVIEWS, IMDB_BASELINES, ORDER_PAIRS, WRITTEN_REVIEWS

MANIFEST = book_root() / "_static" / "models" / "imdb" / "manifest.json"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: a train-imdb run or checkpoint, the data folder, the two sets
    of texts, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, type=checkpoint("train-imdb"),
                        help="a train-imdb run folder or a .pt file")
    parser.add_argument("--data", type=existing_folder, default=None,
                        help="IMDB folder (default: $IMDB_DIR)")
    parser.add_argument("--reviews", type=existing_file, default=WRITTEN_REVIEWS.path,
                        help="JSON lines: text, label (0/1), kind")
    parser.add_argument("--pairs", type=existing_file, default=ORDER_PAIRS.path,
                        help="JSON lines: positive, negative, kind")
    parser.add_argument("--windows", action="store_true",
                        help="also compare head+tail with whole-review windows on validation")
    parser.add_argument("--cache", type=Path, default=None, help="the token cache's folder")
    record_argument(parser, HANDWRITTEN_REVIEWS)
    args = parser.parse_args(argv)
    args.record = default_record(parser, args.record, HANDWRITTEN_REVIEWS)
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import importlib.util
import json
import math
import platform
import time
from collections import Counter

import torch

from scratchformer import __version__
from scratchformer.data.framing import frame_tokens, review_token_lists
from scratchformer.data.imdb import ReviewSplit, load_imdb
from scratchformer.data.review_cache import encode_reviews, review_tokens
from scratchformer.io.fingerprint import file_sha256, tensors_sha256
from scratchformer.measure.baselines import (LinearTextClassifier, fit_bag_of_words,
                                             fit_nbsvm, review_words)
from scratchformer.measure.statistics import paired_difference
from scratchformer.runs.checkpoint import load_checkpoint, read_checkpoint
from scratchformer.runs.hardware import hardware_info, one_minute_load, timing_load
from scratchformer.train.classify import load_classifier

from onnx_reviews import one_thread_session, onnx_reviews
from scratchbook.arguments import refuse
from scratchbook.commands import tool_command

KINDS = ("plain", "negation", "contrast", "expectation", "short")
PAIR_KINDS = ("negation", "contrast", "expectation", "comparison")
MODELS = ("transformer", "bag_of_words", "nbsvm")
ONNX_TEXTS = 12  # hand-written reviews also run through the page's ONNX file


def json_lines(path: Path, fields: dict[str, type]) -> list[dict]:
    """The objects of a JSON-lines file, each with exactly `fields` of the given types;
    refused with the file and line named otherwise."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            refuse(f"{path}:{number}: not JSON ({err})")
        if not isinstance(row, dict) or set(row) != set(fields):
            refuse(f"{path}:{number}: expected the keys {sorted(fields)}, got "
                   f"{sorted(row) if isinstance(row, dict) else type(row).__name__}")
        wrong = [k for k, kind in fields.items() if not isinstance(row[k], kind)]
        if wrong:
            refuse(f"{path}:{number}: {wrong[0]} must be a {fields[wrong[0]].__name__}")
        rows.append(row)
    if not rows:
        refuse(f"{path} holds no rows")
    return rows


def book_file(path: Path) -> str:
    """A file the record names: relative to the book's checkout, or its bare name if outside."""
    path, root = path.resolve(), book_root()
    return str(path.relative_to(root)) if path.is_relative_to(root) else path.name


def read_reviews(path: Path) -> list[dict]:
    """The hand-written reviews: each a non-empty text, a label 0/1 and one of `KINDS`."""
    reviews = json_lines(path, {"text": str, "label": int, "kind": str})
    for number, review in enumerate(reviews, start=1):
        if review["label"] not in (0, 1) or review["kind"] not in KINDS \
                or not review["text"].strip():
            refuse(f"{path}, review {number}: label must be 0 or 1, kind one of {KINDS}, "
                   f"text not empty; got {review}")
    return reviews


def read_pairs(path: Path) -> list[dict]:
    """The order pairs: two texts with the same words in another order, and one of
    `PAIR_KINDS`."""
    pairs = json_lines(path, {"positive": str, "negative": str, "kind": str})
    for number, pair in enumerate(pairs, start=1):
        if pair["kind"] not in PAIR_KINDS:
            refuse(f"{path}, pair {number}: kind must be one of {PAIR_KINDS}")
        if Counter(review_words(pair["positive"])) != Counter(review_words(pair["negative"])):
            refuse(f"{path}, pair {number}: the two texts do not hold the same words: {pair}")
        if pair["positive"] == pair["negative"]:
            refuse(f"{path}, pair {number}: the two texts are the same")
    return pairs


def served_checkpoint(path: Path) -> dict:
    """The checkpoint's sha256, the served one's from the page's manifest, whether they
    match, the command the manifest says trained it, and the command of the run beside the
    checkpoint (None for a checkpoint without its run's `results.json`)."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    sha256 = file_sha256(path)
    results = path.parent / "results.json"
    return {"sha256": sha256, "served_sha256": manifest["checkpoint"]["sha256"],
            "is_served_model": sha256 == manifest["checkpoint"]["sha256"],
            "served_command": manifest["command"],
            "run_command": (json.loads(results.read_text(encoding="utf-8"))["command"]
                            if results.is_file() else None)}


def onnx_check(texts: list[str], probabilities: list[float], max_len: int,
               truncation: str) -> dict:
    """The page's ONNX file on `texts`, framed as `classify` frames them: the largest
    difference from PyTorch's P(positive) and the verdicts that differ, or why not checked."""
    if importlib.util.find_spec("onnxruntime") is None:
        return {"checked": False, "why": "onnxruntime is not installed"}
    model = MANIFEST.parent / "model.onnx"
    session = one_thread_session(model)
    framing = json.loads((MANIFEST.parent / "tokenizer.json").read_text())["framing"]
    if (framing["max_len"], framing["truncation"]) != (max_len, truncation):
        return {"checked": False, "why": "the page's model frames reviews otherwise"}
    onnx_positive = onnx_reviews(session, review_token_lists(texts), framing)[0].tolist()
    return {"checked": True, "texts": len(texts), "model_sha256": file_sha256(model),
            "largest_difference": max(abs(a - b) for a, b in zip(onnx_positive, probabilities)),
            "verdicts_that_differ": sum((a > 0.5) != (b > 0.5)
                                        for a, b in zip(onnx_positive, probabilities))}


def margins(model: LinearTextClassifier, texts: list[str]) -> list[float]:
    """A linear text classifier's w . x + b for each text, one text at a time: two texts
    with the same features go through the same arithmetic wherever they stand in the list,
    so a tie is exact."""
    return [(model.features([text]) @ model.weight + model.bias).item() for text in texts]


def positive_probability(margin: float) -> float:
    """Logistic regression's P(positive) = 1 / (1 + exp(-margin)), in double precision, one
    value at a time: torch's sigmoid of a float32 tensor rounds the same margin differently
    in its vectorized body and in its tail (0.33784890 and 0.33784887 for one pair here),
    which would break a tie the features make exact."""
    return 1 / (1 + math.exp(-margin))


def score_all(args: argparse.Namespace, texts: list[str], path: Path) -> tuple[dict, dict]:
    """Each model's score of every text, and what the record says about each model."""
    classify = load_classifier(path, torch.device("cpu"))
    transformer = [row["probabilities"]["positive"] for row in classify(texts)]
    baselines = IMDB_BASELINES.read()
    train = load_imdb(args.data, ["train"])["train"]
    bow_settings = baselines["validation"]["bag_of_words"]["chosen"]
    nbsvm_settings = baselines["validation"]["nbsvm"]["chosen"]
    started = time.perf_counter()
    bag = fit_bag_of_words(train.texts, train.labels, **bow_settings)
    bag_seconds = time.perf_counter() - started
    nbsvm = fit_nbsvm(train.texts, train.labels, **nbsvm_settings)
    nbsvm_seconds = time.perf_counter() - started - bag_seconds
    scores = {"transformer": transformer,
              "bag_of_words": [positive_probability(m) for m in margins(bag, texts)],
              "nbsvm": margins(nbsvm, texts)}
    payload = read_checkpoint(path)
    models = {
        "transformer": {"name": "the served Transformer", "score": "P(positive)",
                        "threshold": 0.5, **served_checkpoint(path),
                        "max_len": payload["config"]["max_len"],
                        "truncation": payload["truncation"]},
        "bag_of_words": {"name": "bag of words, logistic regression",
                         "score": "P(positive) = sigmoid(w . x + b)", "threshold": 0.5,
                         "settings": bow_settings, "features": len(bag.vocabulary),
                         "fit_seconds": bag_seconds},
        "nbsvm": {"name": "NBSVM, uni+bigrams",
                  "score": "w . x + b, an SVM's margin (no probability)", "threshold": 0.0,
                  "settings": nbsvm_settings, "features": len(nbsvm.vocabulary),
                  "fit_seconds": nbsvm_seconds},
    }
    data = {"source": "$IMDB_DIR", "train": {"reviews": len(train), "positive": sum(train.labels),
                                             "fingerprint": train.fingerprint()}}
    return {"scores": scores, "train": train, "data": data}, models


def accuracy_table(reviews: list[dict], models: dict) -> dict:
    """Per model: reviews right overall and per kind (a score above its threshold is
    positive)."""
    table = {}
    for name, model in models.items():
        right = Counter()
        total = Counter()
        for review in reviews:
            verdict = int(review["scores"][name] > model["threshold"])
            for key in ("overall", review["kind"]):
                total[key] += 1
                right[key] += verdict == review["label"]
        table[name] = {key: {"right": right[key], "reviews": total[key],
                             "accuracy": right[key] / total[key]}
                       for key in ("overall", *KINDS) if total[key]}
    return table


def pairs_table(pairs: list[dict]) -> dict:
    """Per model: pairs ordered (the positive text scored strictly higher), tied and
    reversed, overall and per kind."""
    table = {}
    for name in MODELS:
        counts = {key: Counter() for key in ("overall", *PAIR_KINDS)}
        for pair in pairs:
            higher, lower = pair["scores"][name]["positive"], pair["scores"][name]["negative"]
            outcome = "ordered" if higher > lower else "tied" if higher == lower else "reversed"
            for key in ("overall", pair["kind"]):
                counts[key][outcome] += 1
                counts[key]["pairs"] += 1
        table[name] = {key: {k: c[k] for k in ("ordered", "tied", "reversed", "pairs")}
                       for key, c in counts.items() if c["pairs"]}
    return table


def held_out_reviews(path: Path, ids: torch.Tensor, labels: torch.Tensor) -> dict:
    """The validation reviews the run beside checkpoint `path` held out: the first `val_size`
    of `torch.randperm` seeded with its seed (its `results.json`), as `train-imdb` draws them,
    checked against the fingerprint of the validation reviews the checkpoint recorded."""
    results = path.parent / "results.json"
    if not results.is_file():
        refuse(f"argument --windows: no results.json beside {path} to read the run's seed from")
    settings = json.loads(results.read_text(encoding="utf-8"))["train_config"]
    order = torch.randperm(len(labels),
                           generator=torch.Generator().manual_seed(settings["seed"]))
    val_index = order[: settings["val_size"]]
    drawn = tensors_sha256((ids[val_index], labels[val_index]))
    recorded = read_checkpoint(path)["training"]["data"]["validation reviews"]
    if drawn != recorded:
        refuse(f"the validation reviews drawn with seed {settings['seed']} are not the ones "
               f"{path} was chosen on (fingerprint {drawn[:12]}, recorded {recorded[:12]})")
    return {"index": val_index.tolist(), "seed": settings["seed"],
            "val_size": settings["val_size"], "fingerprint": drawn}


def windows_validation(args: argparse.Namespace, path: Path, train: ReviewSplit) -> dict:
    """Head+tail (as trained) against the mean of the logits of consecutive 254-token windows
    over the whole review, on the validation reviews `train-imdb` held out."""
    payload = read_checkpoint(path)
    max_len, truncation = payload["config"]["max_len"], payload["truncation"]
    if truncation == "windows":
        refuse(f"argument --windows: {path} was trained on whole reviews in windows; the "
               "comparison is for a model trained on a cut")
    encoded, encoded_labels = encode_reviews(train, max_len, truncation, args.cache)
    held_out = held_out_reviews(path, encoded, encoded_labels)
    val_index = held_out["index"]
    head_tail = encoded[val_index]
    model = load_checkpoint(path).eval()
    tokens = review_tokens(train, args.cache)
    width = max_len - 2  # [CLS] window [SEP]
    windows, owner = [], []
    for row, i in enumerate(val_index):
        review = tokens[i].tolist()
        for start in range(0, max(len(review), 1), width):
            windows.append(frame_tokens(review[start : start + width], max_len, "head"))
            owner.append(row)
    with torch.no_grad():
        head_tail_logits = torch.cat([model(b).float() for b in head_tail.split(256)])
        window_logits = torch.cat([model(b).float()
                                   for b in torch.tensor(windows).split(256)])
    owner_index = torch.tensor(owner)
    summed = torch.zeros(len(val_index), 2).index_add_(0, owner_index, window_logits)
    counts = torch.bincount(owner_index, minlength=len(val_index)).float()
    mean_logits = summed / counts[:, None]
    labels = torch.tensor([train.labels[i] for i in val_index])
    head_tail_right = head_tail_logits.argmax(1) == labels
    windows_right = mean_logits.argmax(1) == labels
    long = torch.tensor([len(tokens[i]) > width for i in val_index])

    def share(right: torch.Tensor, rows: torch.Tensor) -> dict:
        return {"right": int(right[rows].sum()), "reviews": int(rows.sum()),
                "accuracy": float(right[rows].float().mean())}

    every = torch.ones(len(val_index), dtype=torch.bool)
    return {
        "method": (f"validation reviews: the first val_size={held_out['val_size']} of "
                   f"torch.randperm({len(train)}) seeded with the run's "
                   f"seed={held_out['seed']}, as train-imdb holds them out (their fingerprint "
                   "checked against the checkpoint's record). head+tail: the review as trained "
                   f"(max_len={max_len}, truncation={truncation!r}). windows: the review's "
                   f"GPT-2 tokens cut into consecutive, non-overlapping windows of {width} "
                   "(the last one shorter), each framed [CLS] window [SEP] and padded, the "
                   "model's two logits averaged over the windows, the larger one the verdict."),
        "reviews": len(val_index), "validation_fingerprint": held_out["fingerprint"],
        "longer_than_one_window": int(long.sum()),
        "windows": len(windows),
        "head_tail": {"all": share(head_tail_right, every), "long": share(head_tail_right, long)},
        "windows_mean_logits": {"all": share(windows_right, every),
                                "long": share(windows_right, long)},
        "checkpoint_val_accuracy": payload["training"]["val"]["accuracy"],
        "only_head_tail_right": int((head_tail_right & ~windows_right).sum()),
        "only_windows_right": int((windows_right & ~head_tail_right).sum()),
        "windows_minus_head_tail_points": paired_difference(
            (100.0 * windows_right.float()).tolist(), (100.0 * head_tail_right.float()).tolist()),
    }


def main(args: argparse.Namespace, argv: list[str]) -> int:
    started, load_at_start = time.perf_counter(), one_minute_load()
    path = args.checkpoint / "best.pt" if args.checkpoint.is_dir() else args.checkpoint
    try:
        payload = read_checkpoint(path)
    except ValueError as err:  # a file that is not a classifier's checkpoint
        refuse(f"argument --checkpoint: {err}")
    reviews, pairs = read_reviews(args.reviews), read_pairs(args.pairs)
    texts = ([r["text"] for r in reviews] + [p["positive"] for p in pairs]
             + [p["negative"] for p in pairs])
    scored, models = score_all(args, texts, path)
    scores = scored["scores"]
    n, m = len(reviews), len(pairs)
    for i, review in enumerate(reviews):
        review["scores"] = {name: scores[name][i] for name in MODELS}
    for j, pair in enumerate(pairs):
        pair["scores"] = {name: {"positive": scores[name][n + j],
                                 "negative": scores[name][n + m + j]} for name in MODELS}
    models["transformer"]["onnx_check"] = onnx_check(
        texts[:ONNX_TEXTS], scores["transformer"][:ONNX_TEXTS],
        payload["config"]["max_len"], payload["truncation"])
    record = {
        **tool_command("ch11_handwritten.py", argv, str(args.record)),
        "hardware": hardware_info(torch.device("cpu")),
        "software": {"torch": torch.__version__, "python": platform.python_version(),
                     "scratchformer": __version__},
        "data": {**scored["data"],
                 "reviews": {"file": book_file(args.reviews),
                             "sha256": file_sha256(args.reviews)},
                 "pairs": {"file": book_file(args.pairs), "sha256": file_sha256(args.pairs)}},
        "provenance": dict(WRITTEN_REVIEWS.provenance),
        "models": models,
        "reviews": reviews,
        "accuracy": accuracy_table(reviews, models),
        "pairs": pairs,
        "pairs_ordered": pairs_table(pairs),
    }
    if args.windows:
        record["windows_validation"] = windows_validation(args, path, scored["train"])
    record["seconds_total"] = time.perf_counter() - started
    # what else ran beside it: the wall time is a busy machine's where "busy" is true
    record["load"] = timing_load(load_at_start, one_minute_load(),
                                 own=(0, torch.get_num_threads()))
    HANDWRITTEN_REVIEWS.write(record, args.record)
    for name in MODELS:
        print(f"{name}: {record['accuracy'][name]['overall']['accuracy']:.4f} of "
              f"{n} reviews; pairs ordered {record['pairs_ordered'][name]['overall']}")
    print(f"wrote {args.record} in {record['seconds_total']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
