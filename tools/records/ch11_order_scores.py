"""The order pairs scored: how often each model gives the more positive text of a pair the
higher score, on the pairs found in held-out reviews (`book/results/order_pairs_found.json`,
each half apart) and on the 30 pairs written for the book (`book/results/order_pairs.jsonl`).

The models: the majority class, bag-of-words logistic regression and NBSVM, fitted with
`scratchformer.measure.baselines` on seed 0's fit split (the 22,500 training reviews its
validation slice, held out in blocks, leaves; the slice the found pairs come from) with the
settings `book/results/imdb_baselines.json` chose; and the served Transformer, run exactly as
the book's box runs it: the committed ONNX file `_static/models/imdb/model.onnx` (its sha256
checked against the page's manifest) on GPT-2's ids framed as its `tokenizer.json` says; the
same weights, read back from that file (`served_weights.py`), are run through the package's
own classifier (`scratchformer.train.classify.load_classifier`) on a few texts and the record
says how far the two are apart. With `--checkpoint` (a retrain of the served run, which need
not be bit for bit the served one: the record says whether it is), and with `--remedy
NAME=RUN` (a run of `tools/records/ch11_order_remedy.py`), those weights are scored too.

A pair is *ordered* when its positive text scores strictly higher, *tied* when both score the
same, *reversed* otherwise; the share ordered has its 95% Clopper-Pearson interval (exact,
from the binomial distribution). A coin orders half.

    python tools/records/ch11_order_scores.py --data $IMDB_DIR \
        --checkpoint runs/rv/sentences_seed0/best.pt --remedy remedy=runs/remedy/pairs.json

What this deliberately does not handle: probabilities for NBSVM (its score is the SVM's
margin; only the order within a pair matters), and models other than these.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import existing_file, existing_folder, output_file

from scratchbook.record import book_root
from scratchbook.records import IMDB_BASELINES, ORDER_PAIRS, ORDER_PAIRS_SCORES


def remedy_argument(text: str) -> tuple[str, Path]:
    """An argparse type: `NAME=RUN`, RUN a remedy run's JSON whose folder holds best.pt."""
    name, _, path = text.partition("=")
    if not name or not path:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=RUN")
    run = existing_file(path)
    if not (run.with_suffix("") / "best.pt").is_file():
        raise argparse.ArgumentTypeError(f"{path}: no best.pt in {run.with_suffix('')}")
    return name, run


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before torch is imported."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True)
    parser.add_argument("--checkpoint", type=existing_file, default=None,
                        help="a retrain of the served run (its best.pt), scored as well")
    parser.add_argument("--remedy", type=remedy_argument, action="append", default=[],
                        metavar="NAME=RUN", help="a remedy run to score as well")
    parser.add_argument("--record", type=output_file, default=ORDER_PAIRS_SCORES.path)
    return parser.parse_args(argv)


if __name__ == "__main__":
    ARGUMENTS = parse()

import json
import math
import tempfile
import time

import torch

from scratchformer.data.framing import review_token_lists
from scratchformer.data.imdb import ReviewSplit, load_imdb
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.baselines import (LinearTextClassifier, fit_bag_of_words,
                                             fit_majority, fit_nbsvm)
from scratchformer.runs.checkpoint import save_checkpoint
from scratchformer.train.classify import load_classifier

import order_pairs as rule
from onnx_reviews import one_thread_session, onnx_reviews
from served_weights import served_model
from scratchbook.commands import shown_path, tool_command

MANIFEST = book_root() / "_static" / "models" / "imdb" / "manifest.json"
WRITTEN = ORDER_PAIRS.path
PYTHON_CHECK_TEXTS = 40  # pair texts also scored by the package's classifier
WRITTEN_PROVENANCE = dict(ORDER_PAIRS.provenance)  # who wrote the 30 pairs, when, what since


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> list[float]:
    """The exact (Clopper-Pearson) interval of a binomial share: the shares p whose
    one-sided tail probabilities of the count seen are at least (1 - confidence) / 2, by
    bisection on the binomial distribution."""
    tail = (1 - confidence) / 2

    def at_most(k: int, p: float) -> float:  # P(X <= k), X ~ Binomial(trials, p)
        if p <= 0:
            return 1.0
        if p >= 1:
            return 0.0 if k < trials else 1.0
        return sum(math.exp(math.lgamma(trials + 1) - math.lgamma(i + 1)
                            - math.lgamma(trials - i + 1) + i * math.log(p)
                            + (trials - i) * math.log1p(-p)) for i in range(k + 1))

    def solve(falls: callable) -> float:  # the p where falls(p) turns True, 0 < p < 1
        low, high = 0.0, 1.0
        for _ in range(60):
            middle = (low + high) / 2
            low, high = (low, middle) if falls(middle) else (middle, high)
        return (low + high) / 2

    lower = 0.0 if successes == 0 else solve(
        lambda p: 1 - at_most(successes - 1, p) > tail)  # P(X >= k) rises with p
    upper = 1.0 if successes == trials else solve(lambda p: at_most(successes, p) < tail)
    return [lower, upper]


def outcome_counts(scores: list[tuple[float, float]]) -> dict:
    """Ordered, tied and reversed among (positive text's score, negative text's) pairs, and
    the share ordered with its 95% interval."""
    ordered = sum(a > b for a, b in scores)
    tied = sum(a == b for a, b in scores)
    return {"pairs": len(scores), "ordered": ordered, "tied": tied,
            "reversed": len(scores) - ordered - tied, "share_ordered": ordered / len(scores),
            "interval_95": clopper_pearson(ordered, len(scores)),
            "interval": "Clopper-Pearson (exact binomial), 95%"}


def margins(model: LinearTextClassifier, texts: list[str]) -> list[float]:
    """w . x + b of each text, one text at a time, so a tie the features make is exact."""
    return [(model.features([text]) @ model.weight + model.bias).item() for text in texts]


def counting_models(args: argparse.Namespace, train: ReviewSplit) -> dict:
    """Majority, bag of words and NBSVM fitted on seed 0's fit split, with their fits."""
    baselines = IMDB_BASELINES.read()
    fit_index = rule.source_fit_reviews(train.labels)
    texts = [train.texts[i] for i in fit_index]
    labels = [train.labels[i] for i in fit_index]
    started = time.perf_counter()
    models = {"majority": fit_majority(texts, labels),
              "bag_of_words": fit_bag_of_words(
                  texts, labels, **baselines["validation"]["bag_of_words"]["chosen"]),
              "nbsvm": fit_nbsvm(texts, labels, **baselines["validation"]["nbsvm"]["chosen"])}
    return {"models": models, "fit_reviews": len(texts),
            "settings": {k: baselines["validation"][k]["chosen"]
                         for k in ("bag_of_words", "nbsvm")},
            "seconds": time.perf_counter() - started}


def served_scores(texts: list[str]) -> tuple[list[float], dict]:
    """The served ONNX model's P(positive) of each text, as the box computes it."""
    manifest = json.loads(MANIFEST.read_text())
    model = MANIFEST.parent / "model.onnx"
    sha256 = file_sha256(model)
    if sha256 != manifest["files"]["model.onnx"]["sha256"]:
        raise SystemExit(f"{model}: not the file the page's manifest names")
    framing = json.loads((MANIFEST.parent / "tokenizer.json").read_text())["framing"]
    positive, _ = onnx_reviews(one_thread_session(model), review_token_lists(texts), framing)
    return positive.tolist(), {
        "file": shown_path(model), "sha256": sha256,
        "checkpoint_sha256": manifest["checkpoint"]["sha256"],
        "command": manifest["command"], "framing": framing,
        "ids": "GPT-2's, from scratchformer.data.framing.review_token_lists (the page's "
               "JavaScript port of the same tokenizer is checked against them by the tests)"}


def python_check(texts: list[str], onnx_positive: list[float], folder: Path) -> dict:
    """The package's own classifier (`load_classifier`) on the served weights, read from the
    ONNX file (`served_weights.py`) and saved as a checkpoint in `folder`, beside the ONNX
    file's scores of the same texts."""
    model, served = served_model()
    path = folder / "served_from_onnx.pt"
    save_checkpoint(path, model, model.config, "windows")
    classify = load_classifier(path, torch.device("cpu"))
    torch_positive = [row["probabilities"]["positive"] for row in classify(texts)]
    return {"checked": True, "weights": served["rebuilt"], "texts": len(texts),
            "largest_difference": max(abs(a - b) for a, b in zip(torch_positive,
                                                                 onnx_positive)),
            "verdicts_that_differ": sum((a > 0.5) != (b > 0.5) for a, b in
                                        zip(torch_positive, onnx_positive))}


def retrain(path: Path, texts: list[str]) -> tuple[list[float], dict]:
    """A retrain of the served run (`--checkpoint`): its scores, and how it stands to the
    served checkpoint (the manifest's sha256) and to the run's recorded validation."""
    manifest = json.loads(MANIFEST.read_text())
    results = json.loads((path.parent / "results.json").read_text())
    classify = load_classifier(path, torch.device("cpu"))
    sha256 = file_sha256(path)
    return ([row["probabilities"]["positive"] for row in classify(texts)], {
        "name": "the served run retrained here", "command": results["command"],
        "checkpoint_sha256": sha256,
        "is_served_checkpoint": sha256 == manifest["checkpoint"]["sha256"],
        "validation": max(row["val_accuracy"] for row in results["history"]),
        "test": results["test"]["accuracy"] if results.get("test") else None,
        "scored_by": "scratchformer.train.classify.load_classifier"})


def written_pairs() -> list[dict]:
    """The 30 written pairs: positive and negative texts and their kind."""
    return [json.loads(line) for line in WRITTEN.read_text().splitlines() if line.strip()]


def main(args: argparse.Namespace, argv: list[str]) -> int:
    torch.set_num_threads(1)
    started = time.perf_counter()
    record_file = rule.read_pairs()
    train = load_imdb(args.data, ["train"])["train"]
    found = rule.pair_texts(record_file, train.texts, train.labels)  # hashes checked
    written = written_pairs()
    texts = ([p["positive"] for p in found] + [p["negative"] for p in found]
             + [p["positive"] for p in written] + [p["negative"] for p in written])
    counting = counting_models(args, train)
    scores = {name: margins(model, texts) if name != "majority"
              else [float(v) for v in model.predict(texts).tolist()]
              for name, model in counting["models"].items()}
    scores["served"], served = served_scores(texts)
    with tempfile.TemporaryDirectory() as folder:
        served["python_check"] = python_check(texts[:PYTHON_CHECK_TEXTS],
                                              scores["served"][:PYTHON_CHECK_TEXTS],
                                              Path(folder))
    remedies = {}
    if args.checkpoint is not None:
        scores["retrain"], remedies["retrain"] = retrain(args.checkpoint, texts)
    for name, run in args.remedy:
        classify = load_classifier(run.with_suffix("") / "best.pt", torch.device("cpu"))
        scores[name] = [row["probabilities"]["positive"] for row in classify(texts)]
        ran = json.loads(run.read_text())
        sha256 = file_sha256(run.with_suffix("") / "best.pt")
        if sha256 != ran["checkpoint_sha256"]:
            raise SystemExit(f"{run}: its best.pt is not the one the run recorded")
        remedies[name] = {"run": shown_path(run), "checkpoint_sha256": sha256,
                          "scored_by": "scratchformer.train.classify.load_classifier",
                          **{key: ran[key] for key in (
                              "command", "remedy", "training_pairs", "replay_reviews", "lr",
                              "epochs", "batch_size", "updates_per_epoch", "choice",
                              "history", "chosen_epoch", "test", "minutes")}}
    n, m = len(found), len(written)
    sets = {"found, validation half": [i for i, p in enumerate(found)
                                       if p["half"] == "validation"],
            "found, test half": [i for i, p in enumerate(found) if p["half"] == "test"],
            "found, all": list(range(n))}
    table = {}
    for name, values in scores.items():
        pair_scores = [(values[i], values[n + i]) for i in range(n)]
        written_scores = [(values[2 * n + j], values[2 * n + m + j]) for j in range(m)]
        table[name] = {**{key: outcome_counts([pair_scores[i] for i in rows])
                          for key, rows in sets.items()},
                       "written": outcome_counts(written_scores)}
    record = {
        **tool_command("ch11_order_scores.py", argv),
        "pairs": {"file": shown_path(rule.PAIRS), "sha256": file_sha256(rule.PAIRS),
                  "size": n, "halves": record_file["halves"],
                  "provenance": record_file["provenance"], "source": record_file["source"],
                  "check": record_file["check"]["result"]},
        "written": {"file": shown_path(WRITTEN), "sha256": file_sha256(WRITTEN), "size": m,
                    "provenance": WRITTEN_PROVENANCE},
        "measure": "a pair is ordered when its positive text scores strictly higher (P(positive) "
                   "for the served model and bag of words, the margin w.x+b for NBSVM and bag "
                   "of words alike, the predicted label for the majority class), tied when "
                   "the two score the same, reversed otherwise; a coin orders half",
        "models": {
            "majority": {"name": "majority class", "fitted_on": "seed 0's fit split"},
            "bag_of_words": {"name": "bag of words, logistic regression",
                             "fitted_on": "seed 0's fit split",
                             "settings": counting["settings"]["bag_of_words"],
                             "features": len(counting["models"]["bag_of_words"].vocabulary)},
            "nbsvm": {"name": "NBSVM, uni+bigrams", "fitted_on": "seed 0's fit split",
                      "settings": counting["settings"]["nbsvm"],
                      "features": len(counting["models"]["nbsvm"].vocabulary)},
            "served": {"name": "the served Transformer (ONNX, as the box runs it)", **served},
            **remedies},
        "counting_fit": {"reviews": counting["fit_reviews"], "seconds": counting["seconds"],
                         "split": "holdout(train.labels, 2500, 0, 'blocks')[1]"},
        "table": table,
        "seconds_total": time.perf_counter() - started,
    }
    ORDER_PAIRS_SCORES.write(record, args.record)
    for name, row in table.items():
        print(name, {k: (v["ordered"], v["tied"], v["reversed"]) for k, v in row.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
