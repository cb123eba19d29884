"""Chapter 11's classifiers on short texts: one sentence of each validation review, scored by
each run's kept weights and by the counting models, and the served model chosen on them.

What a reader types into the book's box is a sentence or two; the whole-review runs learn and
are validated on reviews of a few hundred tokens. Here every run (a `train-imdb` folder, or a
folder of `tools/records/ch11_taught.py`, with or without `--sentences`) is scored on one
sentence (3 to 60 tokens, `scratchformer.data.sentences`, drawn with the run's seed) of each
review of its own validation slice, labelled as its review is: a noisy stand-in for a short
review (many sentences say nothing of the verdict), the same for every model of a seed; and on
those of a random draw of them to which two annotators (two language models, each given the
written guide; no person) gave the same verdict
(`labelled_sentences.py`), the measure the served model is chosen on. Bag of words and NBSVM,
with the settings `book/results/imdb_baselines.json` chose, are fitted on each seed's fit
split and scored on the same sentences. The record gives each arm's accuracies, the paired
differences between arms on both kinds of sentence and on whole reviews (the runs' own best
validation), and the model `SERVED` chooses for the box. A run taught with
`--sentences K` is of the arm `sentences K`; each arm of two seeds or more is compared with
the one before it (untaught, taught, then by sentences a review, fewest first). An arm run on
seed 0 alone is a try: `tried` records seed 0's whole-review plus sentence validation accuracy
of every arm taught with sentences, and the one `TRIED` picks.

    python tools/records/ch11_sentences.py --data $IMDB_DIR --cache runs/cache \
        --run runs/rv/whole_seed{0..4} runs/rv/nbsvm_seed{0..4} \
        runs/rv/sentences_seed{0..4} runs/rv/sentences4_seed0 runs/rv/sentences8_seed{0..4} \
        --record book/results/imdb_sentences.json

What this deliberately does not handle: test (the choice reads validation only; each run's
test score is its own record's), and runs read in other ways than whole-review windows.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from labelled_sentences import LABELS
from scratchbook.arguments import default_record, existing_file, existing_folder, record_argument

from scratchbook.records import IMDB_BASELINES, IMDB_SENTENCES


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: run folders, the data, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True, help="IMDB's files")
    parser.add_argument("--cache", type=Path, required=True, help="the token cache")
    parser.add_argument("--run", type=existing_folder, nargs="+", required=True,
                        help="run folders, each with best.pt and results.json")
    parser.add_argument("--labelled", type=existing_file, default=LABELS,
                        help="validation sentences labelled as texts (ch11_label_sentences.py)")
    record_argument(parser, IMDB_SENTENCES)
    args = parser.parse_args(argv)
    args.record = default_record(parser, args.record, IMDB_SENTENCES)
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported
    ARGUMENTS = parse()

import json
import shlex

import numpy as np
import torch

from scratchformer.data.batches import ReviewLoader, WindowedReviews
from scratchformer.data.framing import review_encoding
from scratchformer.data.holdout import holdout
from scratchformer.data.imdb import load_imdb
from scratchformer.data.review_cache import review_tokens
from scratchformer.data.review_windows import review_windows
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.baselines import fit_bag_of_words, fit_nbsvm
from scratchformer.measure.evaluation import evaluate
from scratchformer.measure.statistics import paired_difference
from scratchbook.records.taught import (TAUGHT_MODEL, per_review, sentence_arms,
                                        sentences_kept)
from scratchformer.runs.checkpoint import load_checkpoint
from scratchformer.train.presets import preset

from labelled_sentences import (PER_SEED, kept_labels, read_labels,
                                validation_sentences)
from scratchbook.commands import option, shown_path, tool_command, validation_held_out

SERVED = ("the taught model, replaced by each model taught with more sentences a review "
          "(fewest first) whose paired difference with the model kept so far has a 95% "
          "interval above zero on the validation sentences labelled as texts and one that "
          "reaches above zero on whole validation reviews")
TRIED = ("the most sentences a review whose seed-0 run has the highest sum of validation "
         "accuracy on whole reviews and on sentences")
MEASURES = ("validation", "validation_sentences", "validation_labelled")
KEPT = ("the sentences both annotators (two language models, each given the written guide "
        "tools/records/labelling_guide.md; no person) gave the same verdict, positive or "
        "negative")


def labelled_counts(rows: list[dict], seed: int, kept: dict[int, int],
                    review_labels: list[int]) -> dict[str, int]:
    """How the seed's drawn sentences were labelled: drawn, labelled alike by both annotators,
    kept with a verdict, of them positive, and of them labelled as their review is."""
    drawn = [row for row in rows if row["seed"] == seed]
    return {"drawn": len(drawn),
            "alike": sum(row["labels"][0] == row["labels"][1] for row in drawn),
            "kept": len(kept), "positive": sum(kept.values()),
            "as_review": sum(label == review_labels[i] for i, label in kept.items())}


def model_name(arm: str) -> str:
    """An arm's model as the records name it."""
    count = per_review(arm)
    if count is not None:
        return f"{TAUGHT_MODEL}, with {count} sentences a review"
    return {"untaught": "whole review, untaught", "taught": TAUGHT_MODEL}[arm]


def read_run(folder: Path) -> tuple[str, int, str, float, str]:
    """(arm, seed, holdout, best whole-review validation accuracy, command) of a run folder."""
    results = json.loads((folder / "results.json").read_text())
    if "teacher" in results:  # a run of ch11_taught.py
        words = shlex.split(results["command"])
        held = validation_held_out(words)
        arm = (f"sentences {option(words, '--sentences')}" if results.get("sentences")
               else "taught")
        if results["teacher"] != "nbsvm":
            raise SystemExit(f"{folder}: taught by {results['teacher']}, not NBSVM")
        validation = max(row["val_accuracy"] for row in results["history"])
        return arm, int(results["seed"]), held, validation, results["command"]
    config = results["train_config"]
    if config["truncation"] != "windows":
        raise SystemExit(f"{folder}: not a whole-review run (truncation windows)")
    return ("untaught", int(config["seed"]), config.get("validation", "reviews"),
            results["validation"]["accuracy"], results["command"])


def tried(runs: dict[str, dict[str, dict]]) -> dict:
    """Seed 0's whole-review plus sentence validation accuracy of each arm taught with
    sentences, and the arm `TRIED` picks."""
    sums = {arm: runs[arm]["0"]["validation"] + runs[arm]["0"]["validation_sentences"]
            for arm in sentence_arms(runs) if "0" in runs[arm]}
    best = max(sums.values(), default=None)
    return {"seed": 0, "rule": TRIED, "sums": sums,
            "picked": max((arm for arm, value in sums.items() if value == best),
                          key=per_review, default=None)}


def accuracy_on(model: torch.nn.Module, sentences: list, labels: list[int]) -> float:
    """The model's accuracy on the sentences, each framed as one window."""
    windows = WindowedReviews.from_reviews([review_windows(s.tolist(), model.config.max_len)
                                            for s in sentences])
    loader = ReviewLoader(windows, torch.tensor(labels), 128, length_groups=1)
    return evaluate(model, loader, "fp32")["accuracy"]


def main(args: argparse.Namespace, argv: list[str]) -> int:
    torch.set_num_threads(2)
    train = load_imdb(args.data, ["train"])["train"]
    tokens = review_tokens(train, args.cache)
    baselines = IMDB_BASELINES.read()["validation"]
    val_size = preset("cpu")[1].val_size
    runs: dict[str, dict[str, dict]] = {"untaught": {}, "taught": {}}
    by_seed: dict[int, list[tuple[str, Path, float, str]]] = {}
    held_out = set()
    for folder in args.run:
        arm, seed, held, validation, command = read_run(folder)
        held_out.add(held)
        if str(seed) in runs.setdefault(arm, {}):
            raise SystemExit(f"{folder}: arm {arm}, seed {seed} twice")
        runs[arm][str(seed)] = {}
        by_seed.setdefault(seed, []).append((arm, folder, validation, command))
    if len(held_out) != 1:
        raise SystemExit(f"the runs hold out their validation in different ways: {held_out}")
    held = held_out.pop()
    labelled_rows = read_labels(args.labelled)
    counting: dict[str, dict[str, dict[str, float]]] = {
        "bag_of_words": {}, "nbsvm": {}}  # per model: per seed, accuracy by measure
    sizes = {}
    for seed, members in sorted(by_seed.items()):
        _, fit_index = (i.tolist() for i in holdout(train.labels, val_size, seed, held))
        sentences, labels = validation_sentences(train.labels, tokens, seed, held, val_size)
        kept = kept_labels(labelled_rows, seed, sentences)  # {place: the annotators' verdict}
        scored = {"validation_sentences": (sentences, labels),
                  "validation_labelled": ([sentences[i] for i in kept], list(kept.values()))}
        sizes[str(seed)] = {
            "sentences": len(sentences), "positive": sum(labels),
            "mean_tokens": float(np.mean([len(s) for s in sentences])),
            "labelled": labelled_counts(labelled_rows, seed, kept, labels)}
        for arm, folder, validation, command in members:
            model = load_checkpoint(folder / "best.pt", torch.device("cpu")).eval()
            runs[arm][str(seed)] = {"command": command, "validation": validation, **{
                key: accuracy_on(model, chosen, truth) for key, (chosen, truth) in scored.items()},
                "checkpoint_sha256": file_sha256(folder / "best.pt")}
            print(arm, seed, runs[arm][str(seed)], flush=True)
        texts = [review_encoding().decode(s.tolist()) for s in sentences]  # decoded once
        read_as = {"validation_sentences": texts,
                   "validation_labelled": [texts[i] for i in kept]}  # as counting reads them
        fit_texts = [train.texts[i] for i in fit_index]
        fit_labels = [train.labels[i] for i in fit_index]
        for name, fit in (("bag_of_words", fit_bag_of_words), ("nbsvm", fit_nbsvm)):
            counted = fit(fit_texts, fit_labels, **baselines[name]["chosen"])
            counting[name][str(seed)] = {
                key: float(np.mean(np.asarray(counted.predict(read_as[key])) == truth))
                for key, (_, truth) in scored.items()}
            print(name, seed, counting[name][str(seed)], flush=True)

    def difference(arm: str, other: str, key: str) -> dict:
        seeds = sorted(set(runs[arm]) & set(runs[other]), key=int)
        return paired_difference([runs[arm][s][key] for s in seeds],
                                 [runs[other][s][key] for s in seeds])

    def compared(arm: str, other: str) -> dict | None:
        """The paired differences of `arm` less `other`, recorded; None under two seeds."""
        if len(set(runs[arm]) & set(runs[other])) < 2:
            return None
        differences[f"{arm} - {other}"] = {key: difference(arm, other, key) for key in MEASURES}
        return differences[f"{arm} - {other}"]

    differences: dict[str, dict] = {}
    repeated = [arm for arm in sentence_arms(runs) if len(runs[arm]) >= 2]
    ladder = ["untaught", "taught", *repeated]
    for arm, other in zip(ladder[1:], ladder):
        compared(arm, other)
    served = "taught"
    for arm in repeated:
        versus = compared(arm, served)
        if versus and sentences_kept(versus):
            served = arm
    record = {
        **tool_command("ch11_sentences.py", argv, str(args.record)),
        "holdout": held,
        "sentences": {"per_review": 1, "shortest": 3, "longest": 60,
                      "label": ("the review's; of those both annotators (two language "
                                "models) gave one verdict, that verdict"),
                      "labelled": {"file": shown_path(args.labelled),
                                   "sha256": file_sha256(args.labelled),
                                   "drawn_per_seed": PER_SEED, "kept": KEPT},
                      "per_seed": sizes},
        "runs": {arm: dict(sorted(seeds.items(), key=lambda item: int(item[0])))
                 for arm, seeds in runs.items() if seeds},
        "counting": counting,
        "differences": differences,
        "tried": tried(runs),
        "served": {"arm": served, "model": model_name(served), "rule": SERVED},
    }
    IMDB_SENTENCES.write(record, args.record)
    print("served:", model_name(served))
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
