"""Honest baselines on IMDB: majority class, bag-of-words logistic regression, NBSVM.

Hyper-parameters are chosen on a validation slice of the training split only: `--val-size`
reviews (2,500) held out with a fixed seed, the rest used to fit. A small grid is tried for each
model and the setting with the best validation accuracy kept (ties go to the earlier setting in
the grid). Each chosen model is then trained on all 25,000 training reviews and evaluated once
on the 25,000 test reviews, the same split chapter 10's Transformer is trained and tested on.
Times are wall-clock seconds on this machine, from raw texts to predictions: tokenizing,
building the vocabulary and features, fitting, and predicting.

    python benchmarks/baselines.py --data /path/to/imdb
    python benchmarks/baselines.py --data /path/to/imdb --record book/results/imdb_baselines.json
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import (existing_folder, non_negative_int, output_file, positive_int,
                                   refuse)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the data folder present, counts positive, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=existing_folder, required=True,
                        help="IMDB folder, as `scratchformer.data.imdb.load_imdb` reads it")
    parser.add_argument("--record", type=output_file, default=None, help="also write the results here (JSON)")
    parser.add_argument("--val-size", type=positive_int, default=2500)
    parser.add_argument("--seed", type=non_negative_int, default=0, help="draws the validation reviews")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch threads (the Transformer's run used 1)")
    parser.add_argument("--allow-busy", action="store_true",
                        help="record the timings even if the machine was busy (marked so)")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import itertools
import platform
import time
from collections.abc import Callable, Sequence

import torch

from scratchformer import __version__
from scratchformer.data.imdb import ReviewSplit, load_imdb
from scratchformer.measure.baselines import (LinearTextClassifier, MajorityClass,
                                             accuracy, build_vocabulary, count_features,
                                             fit_bag_of_words, fit_majority, fit_nbsvm,
                                             interpolate, log_count_ratio, review_words,
                                             scale_columns, train_linear, word_ngrams)
from scratchformer.runs.folders import command_record
from scratchformer.runs.hardware import (MachineBusy, check_quiet, hardware_info,
                                         one_minute_load, timing_load)

from scratchbook.records import IMDB_BASELINES

L2_GRID = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
BAG_OF_WORDS_GRID = {"binary": (True, False), "min_count": (1, 2, 5), "l2": L2_GRID}
NBSVM_GRID = {"min_count": (1, 2), "l2": L2_GRID, "beta": (0.25, 0.5, 1.0)}
NBSVM_NGRAMS, NBSVM_ALPHA = 2, 1.0  # the paper's bigrams and smoothing, not tuned


def split_validation(train: ReviewSplit, size: int, seed: int) -> tuple[ReviewSplit, ReviewSplit]:
    """(fit, validation): `size` training reviews drawn with `seed` are held out."""
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(seed)).tolist()
    held, kept = order[:size], order[size:]

    def pick(rows: list[int]) -> ReviewSplit:
        return ReviewSplit([train.texts[i] for i in rows], [train.labels[i] for i in rows])

    return pick(kept), pick(held)


def bag_of_words_grid(fit: ReviewSplit, val: ReviewSplit) -> list[dict]:
    """Validation accuracy of each bag-of-words setting; features are built once per vocabulary."""
    fit_docs = [review_words(text) for text in fit.texts]
    val_docs = [review_words(text) for text in val.texts]
    results = []
    for binary, min_count in itertools.product(BAG_OF_WORDS_GRID["binary"], BAG_OF_WORDS_GRID["min_count"]):
        vocabulary = build_vocabulary(fit_docs, min_count)
        fit_x = count_features(fit_docs, vocabulary, binary)
        val_x = count_features(val_docs, vocabulary, binary)
        for l2 in BAG_OF_WORDS_GRID["l2"]:
            start = time.perf_counter()
            weight, bias = train_linear(fit_x, fit.labels, "logistic", l2)
            model = LinearTextClassifier(vocabulary, 1, binary, weight, bias)
            predictions = (val_x @ model.weight + model.bias > 0).long()
            results.append({
                "binary": binary, "min_count": min_count, "l2": l2, "features": len(vocabulary),
                "val_accuracy": accuracy(predictions, val.labels),
                "lbfgs_seconds": time.perf_counter() - start,
            })
            print(f"  bag of words {results[-1]}", flush=True)
    return results


def nbsvm_grid(fit: ReviewSplit, val: ReviewSplit) -> list[dict]:
    """Validation accuracy of each NBSVM setting; beta needs no refit, only a new interpolation."""
    fit_docs = [word_ngrams(review_words(text), NBSVM_NGRAMS) for text in fit.texts]
    val_docs = [word_ngrams(review_words(text), NBSVM_NGRAMS) for text in val.texts]
    results = []
    for min_count in NBSVM_GRID["min_count"]:
        vocabulary = build_vocabulary(fit_docs, min_count)
        fit_x = count_features(fit_docs, vocabulary, binary=True)
        val_x = count_features(val_docs, vocabulary, binary=True)
        ratio = log_count_ratio(fit_x, fit.labels, NBSVM_ALPHA)
        scaled = scale_columns(fit_x, ratio)
        for l2 in NBSVM_GRID["l2"]:
            start = time.perf_counter()
            weight, bias = train_linear(scaled, fit.labels, "squared_hinge", l2)
            seconds = time.perf_counter() - start
            for beta in NBSVM_GRID["beta"]:
                predictions = (val_x @ (interpolate(weight, beta) * ratio) + bias > 0).long()
                results.append({
                    "min_count": min_count, "l2": l2, "beta": beta, "features": len(vocabulary),
                    "val_accuracy": accuracy(predictions, val.labels), "lbfgs_seconds": seconds,
                })
                print(f"  nbsvm {results[-1]}", flush=True)
    return results


def best(results: list[dict], keys: Sequence[str]) -> dict:
    """The setting with the highest validation accuracy (the earliest among equals)."""
    top = max(results, key=lambda row: row["val_accuracy"])
    return {key: top[key] for key in keys}


def measure(
    name: str, fit: Callable[[], MajorityClass | LinearTextClassifier], train: ReviewSplit, test: ReviewSplit
) -> dict:
    """Train on all of `train`, predict all of `test` once; accuracy and wall-clock seconds."""
    start = time.perf_counter()
    model = fit()
    fitted = time.perf_counter()
    predictions = model.predict(test.texts)
    done = time.perf_counter()
    correct = int((predictions.cpu() == torch.tensor(test.labels)).sum())
    row = {
        "model": name,
        "accuracy": correct / len(test),
        "correct": correct,
        "examples": len(test),
        "features": len(model.vocabulary) if isinstance(model, LinearTextClassifier) else 0,
        "seconds": {"fit": fitted - start, "predict": done - fitted, "total": done - start},
    }
    print(f"  {name}: {row['accuracy']:.4f} in {row['seconds']['total']:.1f} s", flush=True)
    return row


def main(args: argparse.Namespace, argv: list[str]) -> None:
    torch.set_num_threads(args.threads)
    load_at_start = one_minute_load()
    started = time.perf_counter()

    data = load_imdb(args.data)
    train, test = data["train"], data["test"]
    if args.val_size >= len(train):
        refuse(f"argument --val-size: {args.val_size} would hold out all {len(train):,} training reviews")
    fit, val = split_validation(train, args.val_size, args.seed)
    print(f"validation: {len(val):,} of {len(train):,} training reviews held out (seed {args.seed})")
    bow_results = bag_of_words_grid(fit, val)
    nbsvm_results = nbsvm_grid(fit, val)
    bow_choice = best(bow_results, ["binary", "min_count", "l2"])
    nbsvm_choice = {"ngrams": NBSVM_NGRAMS, "alpha": NBSVM_ALPHA, **best(nbsvm_results, ["min_count", "l2", "beta"])}
    print(f"chosen: bag of words {bow_choice}, NBSVM {nbsvm_choice}")

    print(f"test: trained on {len(train):,} reviews, tested once on {len(test):,}")
    rows = [
        measure("majority class", lambda: fit_majority(train.texts, train.labels), train, test),
        measure("bag of words, logistic regression",
                lambda: fit_bag_of_words(train.texts, train.labels, **bow_choice), train, test),
        measure("NBSVM, uni+bigrams", lambda: fit_nbsvm(train.texts, train.labels, **nbsvm_choice), train, test),
    ]
    table = [
        "| model | features | test accuracy | train + predict, s |",
        "| --- | ---: | ---: | ---: |",
        *(f"| {row['model']} | {row['features']:,} | {100 * row['accuracy']:.2f}% | {row['seconds']['total']:.1f} |"
          for row in rows),
    ]
    print("", *table, sep="\n")

    if args.record is not None:
        load = timing_load(load_at_start, one_minute_load(), own=(0, args.threads))
        try:
            check_quiet(load, args.allow_busy)
        except MachineBusy as err:
            raise SystemExit(f"{args.record} not written: {err}") from None
        record = {
            **command_record(["python", "benchmarks/baselines.py", *argv]),
            "hardware": hardware_info(torch.device("cpu")),
            "software": {"torch": torch.__version__, "python": platform.python_version(), "scratchformer": __version__},
            "load": load,
            "data": {
                "source": str(args.data),
                "splits": {name: {"reviews": len(split), "positive": sum(split.labels),
                                  "fingerprint": split.fingerprint()} for name, split in data.items()},
            },
            "validation": {
                "seed": args.seed, "reviews": len(val), "fit_reviews": len(fit),
                "bag_of_words": {"grid": BAG_OF_WORDS_GRID, "results": bow_results, "chosen": bow_choice},
                "nbsvm": {"grid": NBSVM_GRID, "loss": "squared_hinge", "results": nbsvm_results,
                          "chosen": nbsvm_choice},
            },
            "test": rows,
            "seconds_total": time.perf_counter() - started,
            "table": "\n".join(table),
        }
        IMDB_BASELINES.write(record, args.record)
        print(f"\nwrote {args.record}")


if __name__ == "__main__":
    main(ARGUMENTS, sys.argv[1:])
