"""One table of chapter 11's controls: where the taught Transformer's lift comes from.

Rows, five seeds each where run, validation held out in blocks: bag of words and NBSVM
untaught and taught by NBSVM (`tools/records/ch11_counting_taught.py`, `--counting`), the
Transformer untaught, taught by NBSVM and taught by NBSVM with 2 sentences a review (the served
arm), per seed as `book/results/imdb_taught_blocks.json` records them, and the Transformer
taught by itself (`tools/records/ch11_taught.py --teacher transformer`, its own seed's
untaught run as teacher: `--self`). For each row: per-seed validation (the block holdout) and
test accuracy, their means with 95% t-intervals (`paired_difference`, df = seeds - 1), the
optimizer updates a Transformer made and the minutes. For each taught Transformer row, its
paired differences (per seed) with the taught bag of words, untaught NBSVM and taught NBSVM
on validation and test, each with its t-interval; and, where the runs' per-review test
predictions exist (`--predictions`: `tools/records/ch11_test_predictions.py`'s files, each
checked to be of the recorded checkpoint), McNemar's exact test per seed and a bootstrap of
the mean difference over test reviews (`paired_tests.py`). The record ends with one sentence
computed from the intervals.

    python tools/records/ch11_controls.py --counting runs/controls/seed{0..4}.json \
        --self runs/rv/self_seed{0..4}.json --predictions runs/preds

With `--keep RECORD` in place of `--counting`, every row and comparison but the self-taught
Transformer's is kept from RECORD as it was written (its command is kept as `kept_from`), and
that row is made from `--self` alone: its seed intervals against the other rows, and no
per-review test (those need the counting runs' margins).

What this deliberately does not handle: training (every run is made beforehand), holdouts
other than blocks, and teachers other than NBSVM and the Transformer itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import default_record, existing_file, existing_folder, record_argument

from scratchbook.records import IMDB_CONTROLS, IMDB_TAUGHT_BLOCKS

BLOCKS = IMDB_TAUGHT_BLOCKS.path


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    made = parser.add_mutually_exclusive_group(required=True)
    made.add_argument("--counting", type=existing_file, nargs="+",
                      help="runs of ch11_counting_taught.py (.json, .npz beside)")
    made.add_argument("--keep", type=existing_file, metavar="RECORD",
                      help="a record this script wrote: keep its rows and comparisons, all but "
                           "the self-taught row's, which --self gives anew (the counting runs "
                           "need not be at hand; the new row's per-review tests then need them)")
    parser.add_argument("--self", dest="self_taught", type=existing_file, nargs="*",
                        default=[], help="runs of ch11_taught.py --teacher transformer")
    parser.add_argument("--predictions", type=existing_folder, default=None,
                        help="folder of ch11_test_predictions.py's .npz files")
    record_argument(parser, IMDB_CONTROLS)
    args = parser.parse_args(argv)
    args.record = default_record(parser, args.record, IMDB_CONTROLS)
    return args


if __name__ == "__main__":
    ARGUMENTS = parse()

import json
import math
import shlex

import numpy as np

from scratchformer.measure.statistics import paired_difference

from paired_tests import bootstrap_mean_difference, mcnemar_exact
from scratchbook.commands import option, set_values, shown_path, tool_command, validation_held_out

FIT_REVIEWS, UNTAUGHT_EPOCHS, BATCH = 22_500, 2, 32  # the untaught runs' settings
ROWS = {  # key: (name, kind)
    "bag_of_words": "bag of words, untaught",
    "nbsvm": "NBSVM, untaught",
    "transformer": "Transformer, untaught",
    "bag_of_words_taught": "bag of words, taught by NBSVM",
    "nbsvm_taught": "NBSVM, taught by NBSVM",
    "transformer_self": "Transformer, taught by itself",
    "transformer_nbsvm": "Transformer, taught by NBSVM",
    "transformer_served": "Transformer, taught by NBSVM, 2 sentences a review (the served arm)",
}
TAUGHT_TRANSFORMERS = ("transformer_self", "transformer_nbsvm", "transformer_served")
AGAINST = ("bag_of_words_taught", "nbsvm", "nbsvm_taught")
PREDICTION_FILES = {"transformer": "whole_seed{}.npz", "transformer_self": "self_seed{}.npz",
                    "transformer_nbsvm": "nbsvm_seed{}.npz",
                    "transformer_served": "sentences_seed{}.npz"}


def summary(values: list[float]) -> dict:
    """Values over seeds: each, their mean and 95% t-interval."""
    interval = paired_difference(values)
    return {"per_seed": values, "mean": interval["mean"],
            "interval_95": [interval["low"], interval["high"]], "df": interval["df"]}


def counting_rows(paths: list[Path]) -> tuple[dict, dict]:
    """The counting models' rows from ch11_counting_taught.py's runs, and their test margins
    per seed."""
    rows = {key: {} for key in ("bag_of_words", "nbsvm", "bag_of_words_taught",
                                "nbsvm_taught")}
    margins: dict[str, dict[str, np.ndarray]] = {key: {} for key in rows}
    for path in paths:
        run = json.loads(path.read_text())
        if run["holdout"] != "blocks":
            raise SystemExit(f"{path}: validation held out by {run['holdout']}, not blocks")
        seed = str(run["seed"])
        with np.load(path.with_suffix(".npz")) as arrays:
            labels = arrays["test_labels"]
            for key in rows:
                rows[key][seed] = {"validation": run["models"][key]["validation"],
                                   "test": run["models"][key]["test"],
                                   "minutes": run["models"][key]["fit_minutes"],
                                   "command": run["command"]}
                margins[key][seed] = (arrays[f"{key}_test"] > 0) == labels
    return rows, margins


def record_runs(blocks: dict) -> dict:
    """The Transformer rows the blocks record holds, per seed."""
    rows = {"transformer": {}, "transformer_nbsvm": {}, "transformer_served": {}}
    for seed, run in blocks["untaught"].items():
        rows["transformer"][seed] = {
            "validation": run["validation"], "test": run["test"]["accuracy"],
            "minutes": run["minutes"], "command": run["command"],
            "checkpoint_sha256": run["checkpoint_sha256"],
            "updates": math.ceil(FIT_REVIEWS / BATCH) * UNTAUGHT_EPOCHS,
            "updates_from": f"the settings: {UNTAUGHT_EPOCHS} epochs of ceil({FIT_REVIEWS} / "
                            f"{BATCH}) batches"}
    for key, arm in (("transformer_nbsvm", "nbsvm"), ("transformer_served",
                                                      "nbsvm, sentences 2")):
        for seed, run in blocks["runs"][arm].items():
            rows[key][seed] = {"validation": run["validation"],
                               "test": run["test"]["accuracy"], "minutes": run["minutes"],
                               "command": run["command"],
                               "checkpoint_sha256": run["checkpoint_sha256"],
                               "updates": run["history"][-1]["step"],
                               "updates_from": "the run's history"}
    return rows


def self_taught_rows(paths: list[Path], blocks: dict) -> dict:
    """The Transformer taught by itself, per seed, from ch11_taught.py's run files: each with
    its teacher's test accuracy and whether the teacher is, to the last bit, that seed's
    untaught run in the blocks record (the same checkpoint)."""
    from scratchformer.io.fingerprint import file_sha256
    from scratchformer.runs.folders import reader_command

    rows = {}
    for path in paths:
        run = json.loads(path.read_text())
        words = shlex.split(run.get("command_as_run", run["command"]))
        if (run["teacher"] != "transformer" or run.get("test") is None
                or validation_held_out(words) != "blocks"
                or any(item not in ("epochs=1", "validation=blocks")
                       for item in set_values(words))):
            raise SystemExit(f"{path}: not a tested run taught by a Transformer, blocks")
        teacher = Path(option(words, "--teacher-checkpoint"))
        teacher_results = json.loads((teacher.parent / "results.json").read_text())
        if teacher_results["train_config"]["seed"] != run["seed"]:
            raise SystemExit(f"{path}: its teacher is of another seed")
        teacher_sha256 = file_sha256(teacher)
        untaught = blocks["untaught"].get(str(run["seed"]), {})
        rows[str(run["seed"])] = {
            "validation": max(row["val_accuracy"] for row in run["history"]),
            "test": run["test"]["accuracy"],
            "minutes": run["minutes_to_trained"] + teacher_results["seconds"]["total"] / 60,
            "minutes_note": "the teacher's own run included",
            "command": reader_command(words),
            "teacher_checkpoint_sha256": teacher_sha256,
            "teacher_test": teacher_results["test"]["accuracy"],
            "teacher_is_the_untaught_run": teacher_sha256 == untaught.get("checkpoint_sha256"),
            "processor": teacher_results["hardware"]["cpu"],
            "checkpoint_sha256": file_sha256(path.with_suffix("") / "best.pt"),
            "updates": run["history"][-1]["step"], "updates_from": "the run's history"}
    return rows


def predictions(folder: Path | None, key: str, seed: str, sha256: str
                ) -> tuple[np.ndarray | None, str | None]:
    """A run's per-review test right/wrong `(N,)` and whose weights made them, if its
    predictions file exists and is of the checkpoint `sha256`; (None, None) otherwise."""
    if folder is None:
        return None, None
    path = folder / PREDICTION_FILES[key].format(seed)
    if not path.is_file():
        return None, None
    with np.load(path) as arrays:
        about = json.loads(str(arrays["about"]))
        if about["checkpoint_sha256"] != sha256:
            raise SystemExit(f"{path}: predictions of another checkpoint than the record's "
                             f"{key} seed {seed}")
        return arrays["logits"].argmax(1) == arrays["labels"], about.get("weights")


def compare(rows: dict, right: dict, key: str, other: str) -> dict:
    """`key` less `other`: per-seed paired differences (two seeds or more), and the
    per-review tests on the seeds where both have predictions."""
    seeds = sorted(set(rows[key]) & set(rows[other]), key=int)
    result: dict = {"seeds": seeds}
    if len(seeds) >= 2:
        for measure in ("validation", "test"):
            result[measure] = paired_difference([rows[key][s][measure] for s in seeds],
                                                [rows[other][s][measure] for s in seeds])
    else:
        result["note"] = "fewer than two seeds: no interval"
    both = [s for s in seeds if right[key].get(s) is not None
            and right[other].get(s) is not None]
    result["per_review"] = {
        "seeds_with_predictions": both,
        "mcnemar_test": {s: mcnemar_exact(right[key][s], right[other][s]) for s in both},
        "bootstrap_test": (bootstrap_mean_difference(np.stack([right[key][s] for s in both]),
                                                     np.stack([right[other][s] for s in both]))
                           if both else None)}
    return result


def said(difference: dict, name: str) -> str:
    """A paired difference in words: above, below or not told apart from `name`, by its
    95% interval."""
    low, high = 100 * difference["low"], 100 * difference["high"]
    verdict = "above" if low > 0 else "below" if high < 0 else "not told apart from"
    return (f"{verdict} {name} ({100 * difference['mean']:+.2f} points, 95% interval "
            f"{low:+.2f} to {high:+.2f})")


def lift(table: dict, key: str, base: str) -> dict | None:
    """`key` less `base` on test, seed by seed, or None under two shared seeds."""
    seeds = sorted(set(table[key]["rows"]) & set(table[base]["rows"]), key=int)
    if len(seeds) < 2:
        return None
    return paired_difference([table[key]["rows"][s]["test"] for s in seeds],
                             [table[base]["rows"][s]["test"] for s in seeds])


def where_from(table: dict, comparisons: dict) -> str:
    """One sentence read off the intervals: each taught Transformer against taught bag of
    words and untaught NBSVM on test, what teaching by NBSVM adds to bag of words and to the
    Transformer, each against its own untaught runs, and what the Transformer taught by those
    untaught runs gains on them."""
    parts = []
    for key in TAUGHT_TRANSFORMERS:
        versus = comparisons.get(key, {})
        if "test" not in versus.get("bag_of_words_taught", {}):
            continue
        bag = ("bag of words taught by NBSVM" if key == "transformer_self"
               else "bag of words taught the same way")
        parts.append(f"{ROWS[key]} is {said(versus['bag_of_words_taught']['test'], bag)}"
                     f" and {said(versus['nbsvm']['test'], 'NBSVM untaught')}")
    gains = [(name, lift(table, key, base)) for name, key, base in (
        ("bag of words", "bag_of_words_taught", "bag_of_words"),
        ("the Transformer", "transformer_nbsvm", "transformer"))]
    gains_text = ", ".join(f"{name} {said(gain, 'its untaught runs')}"
                           for name, gain in gains if gain is not None)
    self_gain = lift(table, "transformer_self", "transformer")
    return ("On test: " + "; ".join(parts or ["no taught Transformer shares two seeds with the counting models"])
            + (f". Taught by NBSVM, {gains_text}" if gains_text else "")
            + (f". Taught by its own untaught runs, the Transformer is "
               f"{said(self_gain, 'them')}" if self_gain is not None else "") + ".")


def kept_rows(record: dict) -> dict:
    """Each row's per-seed runs as `--keep`'s record holds them, all but the self-taught row."""
    return {key: dict(entry["rows"]) for key, entry in record["table"].items()
            if key != "transformer_self"}


def main(args: argparse.Namespace, argv: list[str]) -> int:
    blocks = IMDB_TAUGHT_BLOCKS.read()
    kept = IMDB_CONTROLS.read(args.keep) if args.keep else None
    if kept is not None:
        counting, counting_right = kept_rows(kept), {}
        if kept["sources"]["transformer_runs"] != shown_path(BLOCKS):
            raise SystemExit(f"{args.keep}: its Transformer runs are not {shown_path(BLOCKS)}'s")
    else:
        counting, counting_right = counting_rows(args.counting)
    rows = {**counting, **record_runs(blocks),
            "transformer_self": self_taught_rows(args.self_taught, blocks)}
    right = {key: dict(counting_right.get(key, {})) for key in ROWS}
    made_by: dict[str, dict[str, str]] = {key: {} for key in ROWS}
    for key in PREDICTION_FILES:
        for seed, run in rows[key].items():
            right[key][seed], weights = predictions(args.predictions, key, seed,
                                                    run["checkpoint_sha256"])
            if weights is not None:
                made_by[key][seed] = weights
    table = {}
    for key, name in ROWS.items():
        seeds = sorted(rows[key], key=int)
        entry = {"name": name, "seeds": seeds,
                 "rows": {s: rows[key][s] for s in seeds}}
        if len(seeds) >= 2:
            entry["validation"] = summary([rows[key][s]["validation"] for s in seeds])
            entry["test"] = summary([rows[key][s]["test"] for s in seeds])
            entry["minutes"] = summary([rows[key][s]["minutes"] for s in seeds])
        if key.startswith("transformer"):
            entry["updates"] = {s: rows[key][s]["updates"] for s in seeds}
        if not seeds:
            entry["note"] = "no runs given: this row is not measured"
        entry["test_predictions"] = {s: made_by[key].get(s, "the fit model's margins")
                                     for s in seeds if right[key].get(s) is not None}
        table[key] = entry
    comparisons = {key: {other: compare(rows, right, key, other) for other in AGAINST}
                   for key in TAUGHT_TRANSFORMERS
                   if rows[key] and (kept is None or key == "transformer_self")}
    if kept is not None:  # the kept rows as they were written, per-review tests included
        table = {**kept["table"], "transformer_self": table["transformer_self"]}
        comparisons = {**{key: value for key, value in kept["comparisons"].items()
                          if key != "transformer_self"}, **comparisons}
    record = {
        **tool_command("ch11_controls.py", argv, str(args.record)),
        "holdout": "blocks",
        **({"kept_from": {"record": shown_path(args.keep), "command": kept["command"]}}
           if kept is not None else {}),
        "sources": {"transformer_runs": shown_path(BLOCKS),
                    "counting_runs": (kept["sources"]["counting_runs"] if kept is not None
                                      else [shown_path(p) for p in args.counting]),
                    "self_taught_runs": [shown_path(p) for p in args.self_taught]},
        "measures": {"validation": "accuracy on the seed's 2,500 validation reviews held out "
                                   "in blocks (a Transformer: its best validation, which "
                                   "chose its weights)",
                     "test": "accuracy on IMDB's 25,000 test reviews, tested once",
                     "intervals": "mean over seeds with its 95% t-interval "
                                  "(scratchformer.measure.statistics.paired_difference, "
                                  "df = seeds - 1)",
                     "updates": "optimizer updates the Transformer made",
                     "minutes": "minutes to the trained model, teachers included"},
        "table": table,
        "comparisons": comparisons,
        "reading": where_from(table, comparisons),
    }
    IMDB_CONTROLS.write(record, args.record)
    for key, entry in table.items():
        if "test" in entry:
            print(f"{entry['name']}: test {entry['test']['mean']:.4f} "
                  f"[{entry['test']['interval_95'][0]:.4f}, {entry['test']['interval_95'][1]:.4f}]")
    print(record["reading"])
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
