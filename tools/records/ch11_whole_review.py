"""Chapter 11's classifier reading whole reviews: its seeds' runs gathered into one record,
set beside the head+tail runs and the counting baselines.

Each run is `scratchformer train-imdb ... --set truncation=windows --set seed=N` (the review's
every token, in windows of 254, the windows' logits averaged by their tokens: chapter 11,
"Reading the whole review"), made beforehand; this script reads their `results.json`, checks
that they differ in nothing but the seed, and writes the per-seed validation and test
accuracies, the minutes each run took, and the test accuracy's mean with its 95% t-interval
from `scratchformer.measure.statistics.paired_difference`. Which of the book's classifiers is
its best is chosen on validation: the mean validation accuracy over the seeds every candidate
was run with (the head+tail preset and its `max_len=512` variant from
`book/results/imdb_cpu_ablations.json`, and these runs); the chosen one's test accuracies are
recorded as `best_transformer_test_accuracy`, against bag of words' and NBSVM's from
`book/results/imdb_baselines.json`.

    python tools/records/ch11_whole_review.py --run runs/whole_seed0 ... runs/whole_seed4 \
        --record book/results/imdb_whole_review.json

What this deliberately does not handle: training (the runs are made by `train-imdb`), runs on
other data than the recorded baselines', and candidates other than the three above.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import default_record, record_argument, run_folder

from scratchbook.records import IMDB_BASELINES, IMDB_CPU_ABLATIONS, IMDB_WHOLE_REVIEW


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: finished train-imdb runs, a writable `--record`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=run_folder("train-imdb", ("best.pt", "results.json")),
                        nargs="+", required=True, help="the whole-review runs, one per seed")
    record_argument(parser, IMDB_WHOLE_REVIEW)
    args = parser.parse_args(argv)
    if len(set(args.run)) < 2:
        parser.error("argument --run: an interval needs at least two runs")
    args.record = default_record(parser, args.record, IMDB_WHOLE_REVIEW)
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported
    ARGUMENTS = parse()

import json

from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.statistics import paired_difference

from scratchbook.commands import tool_command

WHOLE = "whole review"
HEAD_TAIL = {"254 tokens": "preset", "510 tokens": "max_len=512"}  # candidate -> variant
COUNTING = {"bag_of_words": "bag of words, logistic regression",
            "nbsvm": "NBSVM, uni+bigrams"}  # the models' names in imdb_baselines.json
KEPT = ("command", "model_config", "train_config", "parameters", "data", "hardware",
        "software", "load_average", "seconds", "best_epoch", "best_step", "validation")


def whole_review_runs(folders: list[Path]) -> dict[str, dict]:
    """Each run's record by seed, checked: read in windows, alike but for the seed."""
    runs = {}
    for folder in folders:
        run = json.loads((folder / "results.json").read_text())
        if run["train_config"]["truncation"] != "windows":
            raise SystemExit(f"{folder}: truncation {run['train_config']['truncation']!r}, "
                             "not 'windows'")
        seed = str(run["train_config"]["seed"])
        if seed in runs:
            raise SystemExit(f"{folder}: seed {seed} twice")
        runs[seed] = {**{key: run[key] for key in KEPT}, "test": {
            key: run["test"][key] for key in ("accuracy", "loss", "examples")},
            "checkpoint_sha256": file_sha256(folder / "best.pt")}
    settings = {json.dumps([{k: v for k, v in run["train_config"].items() if k != "seed"},
                            run["model_config"]], sort_keys=True) for run in runs.values()}
    if len(settings) != 1:
        raise SystemExit("the runs differ in more than their seed")
    return dict(sorted(runs.items(), key=lambda item: int(item[0])))


def candidates(ablations: dict, runs: dict) -> dict[str, dict]:
    """Per candidate: its seeds' validation and test accuracies and minutes."""
    found = {label: ablations["runs"][variant] for label, variant in HEAD_TAIL.items()}
    found[WHOLE] = runs
    return {label: {
        "validation": {seed: run["validation"]["accuracy"] for seed, run in seeds.items()},
        "test": {seed: run["test"]["accuracy"] for seed, run in seeds.items()},
        "minutes": {seed: run["seconds"]["total"] / 60 for seed, run in seeds.items()},
        "precision": {run["train_config"]["precision"] for run in seeds.values()}.pop(),
    } for label, seeds in found.items()}


def main(args: argparse.Namespace, argv: list[str]) -> int:
    runs = whole_review_runs(args.run)
    baselines = IMDB_BASELINES.read()
    counting = {key: next(row for row in baselines["test"] if row["model"] == name)["accuracy"]
                for key, name in COUNTING.items()}
    table = candidates(IMDB_CPU_ABLATIONS.read(), runs)
    shared = sorted(set.intersection(*(set(row["validation"]) for row in table.values())),
                    key=int)
    for row in table.values():
        row["mean_validation_on_shared_seeds"] = (
            sum(row["validation"][seed] for seed in shared) / len(shared))
    chosen = max(table, key=lambda label: table[label]["mean_validation_on_shared_seeds"])
    per_seed = list(table[chosen]["test"].values())
    interval = paired_difference(per_seed)
    best = {"model": chosen, "seeds": list(table[chosen]["test"]), "per_seed": per_seed,
            "mean": interval["mean"], "interval_95": [interval["low"], interval["high"]],
            "df": interval["df"], "minutes": max(table[chosen]["minutes"].values())}
    against = {key: {"accuracy": accuracy,
                     "difference": paired_difference([a - accuracy for a in per_seed]),
                     "lower_end_above": interval["low"] > accuracy}
               for key, accuracy in counting.items()}
    record = {
        **tool_command("ch11_whole_review.py", argv, str(args.record)),
        "sources": {"head_tail": "book/results/imdb_cpu_ablations.json",
                    "counting": "book/results/imdb_baselines.json"},
        "runs": runs,
        "candidates": table,
        "chosen_on": {"shared_seeds": shared,
                      "rule": "the highest mean validation accuracy over the shared seeds"},
        "best_transformer_test_accuracy": best,
        "against_counting": against,
    }
    IMDB_WHOLE_REVIEW.write(record, args.record)
    print(f"wrote {args.record}: {chosen}, test {best['mean']:.4f} "
          f"[{best['interval_95'][0]:.4f}, {best['interval_95'][1]:.4f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
