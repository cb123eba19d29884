"""Chapter 11's classifiers on short texts: one sentence of each validation review, scored by
each run's kept weights and by the counting models, and the served model chosen on them.

What a reader types into the book's box is a sentence or two; the whole-review runs learn and
are validated on reviews of a few hundred tokens. Here every run (a `train-imdb` folder, or a
folder of `tools/records/ch11_taught.py`, with or without `--sentences`) is scored on one
sentence (3 to 60 tokens, `scratchformer.data.sentences`, drawn with the run's seed) of each
review of its own validation slice, labelled as its review is: a noisy stand-in for a short
review (many sentences say nothing of the verdict), the same for every model of a seed. Bag of
words and NBSVM, with the settings `book/results/imdb_baselines.json` chose, are fitted on
each seed's fit split and scored on the same sentences. The record gives each arm's
accuracies, the paired differences between arms on sentences and on whole reviews (the runs'
own best validation), and the model `SERVED` chooses for the box.

    python tools/records/ch11_sentences.py --data $IMDB_DIR --cache runs/cache \
        --run runs/rv/whole_seed{0..4} runs/rv/nbsvm_seed{0..4} runs/rv/sentences_seed{0..4} \
        --record book/results/imdb_sentences.json

What this deliberately does not handle: test (the choice reads validation only; each run's
test score is its own record's), sentences labelled by hand, and runs read in other ways than
whole-review windows.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from script_arguments import default_record, existing_folder, record_argument

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RECORD = ROOT / "book" / "results" / "imdb_sentences.json"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: run folders, the data, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True, help="IMDB's files")
    parser.add_argument("--cache", type=Path, required=True, help="the token cache")
    parser.add_argument("--run", type=existing_folder, nargs="+", required=True,
                        help="run folders, each with best.pt and results.json")
    record_argument(parser, DEFAULT_RECORD)
    args = parser.parse_args(argv)
    args.record = default_record(parser, args.record, DEFAULT_RECORD)
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
from scratchformer.data.sentences import draw_sentences
from scratchformer.io.files import write_atomically
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.baselines import fit_bag_of_words, fit_nbsvm
from scratchformer.measure.evaluation import evaluate
from scratchformer.measure.statistics import paired_difference
from scratchformer.records.taught import TAUGHT_MODEL
from scratchformer.runs.checkpoint import load_checkpoint
from scratchformer.train.presets import preset

from shown_command import tool_command, validation_held_out

ARMS = {"untaught": "whole review, untaught", "taught": TAUGHT_MODEL,
        "sentences": f"{TAUGHT_MODEL}, with sentences"}
SERVED = ("the model taught with sentences if its paired difference with the taught model on "
          "validation sentences has a 95% interval above zero and on whole validation "
          "reviews an interval that reaches above zero, else the taught model")


def read_run(folder: Path) -> tuple[str, int, str, float, str]:
    """(arm, seed, holdout, best whole-review validation accuracy, command) of a run folder."""
    results = json.loads((folder / "results.json").read_text())
    if "teacher" in results:  # a run of ch11_taught.py
        held = validation_held_out(shlex.split(results["command"]))
        arm = "sentences" if results.get("sentences") else "taught"
        if results["teacher"] != "nbsvm":
            raise SystemExit(f"{folder}: taught by {results['teacher']}, not NBSVM")
        validation = max(row["val_accuracy"] for row in results["history"])
        return arm, int(results["seed"]), held, validation, results["command"]
    config = results["train_config"]
    if config["truncation"] != "windows":
        raise SystemExit(f"{folder}: not a whole-review run (truncation windows)")
    return ("untaught", int(config["seed"]), config.get("validation", "reviews"),
            results["validation"]["accuracy"], results["command"])


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
    baselines = json.loads((ROOT / "book/results/imdb_baselines.json").read_text())["validation"]
    val_size = preset("cpu")[1].val_size
    runs: dict[str, dict[str, dict]] = {arm: {} for arm in ARMS}
    by_seed: dict[int, list[tuple[str, Path, float, str]]] = {}
    held_out = set()
    for folder in args.run:
        arm, seed, held, validation, command = read_run(folder)
        held_out.add(held)
        if str(seed) in runs[arm]:
            raise SystemExit(f"{folder}: arm {arm}, seed {seed} twice")
        runs[arm][str(seed)] = {}
        by_seed.setdefault(seed, []).append((arm, folder, validation, command))
    if len(held_out) != 1:
        raise SystemExit(f"the runs hold out their validation in different ways: {held_out}")
    held = held_out.pop()
    counting: dict[str, dict[str, float]] = {"bag_of_words": {}, "nbsvm": {}}
    sizes = {}
    for seed, members in sorted(by_seed.items()):
        val_index, fit_index = (i.tolist() for i in holdout(train.labels, val_size, seed, held))
        sentences, owners = draw_sentences([tokens[i] for i in val_index], 1, seed)
        labels = [train.labels[val_index[owner]] for owner in owners]
        sizes[str(seed)] = {"sentences": len(sentences), "positive": sum(labels),
                            "mean_tokens": float(np.mean([len(s) for s in sentences]))}
        for arm, folder, validation, command in members:
            model = load_checkpoint(folder / "best.pt", torch.device("cpu")).eval()
            runs[arm][str(seed)] = {"command": command, "validation": validation,
                                    "validation_sentences": accuracy_on(model, sentences, labels),
                                    "checkpoint_sha256": file_sha256(folder / "best.pt")}
            print(arm, seed, runs[arm][str(seed)]["validation_sentences"], flush=True)
        texts = [review_encoding().decode(s.tolist()) for s in sentences]
        fit_texts = [train.texts[i] for i in fit_index]
        fit_labels = [train.labels[i] for i in fit_index]
        for name, fit in (("bag_of_words", fit_bag_of_words), ("nbsvm", fit_nbsvm)):
            counted = fit(fit_texts, fit_labels, **baselines[name]["chosen"])
            right = np.asarray(counted.predict(texts)) == np.asarray(labels)
            counting[name][str(seed)] = float(right.mean())
            print(name, seed, counting[name][str(seed)], flush=True)

    def difference(arm: str, other: str, key: str) -> dict:
        seeds = sorted(set(runs[arm]) & set(runs[other]), key=int)
        return paired_difference([runs[arm][s][key] for s in seeds],
                                 [runs[other][s][key] for s in seeds])

    differences = {f"{arm} - {other}": {key: difference(arm, other, key)
                                        for key in ("validation", "validation_sentences")}
                   for arm, other in (("taught", "untaught"), ("sentences", "taught"))
                   if len(set(runs[arm]) & set(runs[other])) >= 2}
    versus = differences.get("sentences - taught")
    served = ("sentences" if versus and versus["validation_sentences"]["low"] > 0
              and versus["validation"]["high"] > 0 else "taught")
    record = {
        **tool_command("ch11_sentences.py", argv, str(args.record)),
        "holdout": held,
        "sentences": {"per_review": 1, "shortest": 3, "longest": 60,
                      "label": "the review's", "per_seed": sizes},
        "runs": {arm: dict(sorted(seeds.items(), key=lambda item: int(item[0])))
                 for arm, seeds in runs.items() if seeds},
        "counting": counting,
        "differences": differences,
        "served": {"arm": served, "model": ARMS[served], "rule": SERVED},
    }
    write_atomically(args.record,
                     lambda handle: handle.write((json.dumps(record, indent=2) + "\n").encode()))
    print("served:", ARMS[served])
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
