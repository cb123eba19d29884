"""Chapter 11's whole-review classifier taught on unlabelled reviews: the runs of
`tools/records/ch11_taught.py` gathered into one record, set beside the untaught whole-review
runs of the same seeds and the counting baselines.

Per teacher and seed: the best validation accuracy, the test accuracy of the kept weights, the
minutes to the trained model (the teacher's work included, a teacher checkpoint's own run
excepted: its minutes are added from its `results.json`), the sha256 of the run's `best.pt`. For each
teacher with at least two seeds: the test accuracies' mean and 95% t-interval, and the paired
differences with the untaught runs (`book/results/imdb_whole_review.json`) on validation and on
test, and with bag of words and NBSVM (`book/results/imdb_baselines.json`), every interval from
`scratchformer.measure.statistics.paired_difference`; and the choice validation makes between
taught and untaught (`CHOICE`), with the chosen model's test accuracies.

    python tools/records/ch11_taught_record.py --run runs/taught/nbsvm_seed0.json ... \
        --record book/results/imdb_taught.json

With `--untaught`, the untaught runs are those `train-imdb` folders instead of the
whole-review record's: runs whose validation was held out in blocks of consecutive reviews
(`--set validation=blocks`, mostly films the model does not train on), taught and untaught
alike; the chosen model's test accuracies are then recorded as
`best_transformer_test_accuracy`, the book's best Transformer.

    python tools/records/ch11_taught_record.py --run runs/blocks/nbsvm_seed0.json ... \
        --untaught runs/blocks/whole_seed0 ... --record book/results/imdb_taught_blocks.json

Runs of `ch11_taught.py --sentences K` are the arm `nbsvm, sentences K`. With `--short` (the
record `tools/records/ch11_sentences.py` writes of the same runs, scored on one sentence of
each validation review), the taught model, once chosen, gives way to the one taught with
sentences that record's rule serves, if any.

What this deliberately does not handle: training (the runs are made beforehand), and teachers
or settings other than the script's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import default_record, existing_file, existing_folder, record_argument

from scratchbook.record import book_root
from scratchbook.records import IMDB_BASELINES, IMDB_TAUGHT, IMDB_TAUGHT_BLOCKS, IMDB_WHOLE_REVIEW


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the runs' JSON files, a writable `--record`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=existing_file, nargs="+", required=True,
                        help="runs of tools/records/ch11_taught.py, with --test")
    parser.add_argument("--untaught", type=existing_folder, nargs="+", default=None,
                        help="train-imdb run folders: the untaught runs of the same seeds")
    parser.add_argument("--short", type=existing_file, default=None,
                        help="with --untaught: ch11_sentences.py's record of the same runs")
    record_argument(parser, IMDB_TAUGHT)
    args = parser.parse_args(argv)
    args.record = default_record(parser, args.record, IMDB_TAUGHT)
    if args.short is not None and args.untaught is None:
        parser.error("--short goes with --untaught")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported
    ARGUMENTS = parse()

import json
import os
import shlex

from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.statistics import paired_difference
from scratchbook.records.taught import (TAUGHT_MODEL, per_review, sentences_arm,
                                        short_arm)
from scratchformer.runs.folders import reader_command, reader_path

from scratchbook.commands import option, set_values, tool_command, validation_held_out

CHOICE = ("the taught model if its paired difference with the untaught runs on validation "
          "has a 95% interval above zero, else the untaught")
COUNTING = {"bag_of_words": "bag of words, logistic regression",
            "nbsvm": "NBSVM, uni+bigrams"}  # the models' names in imdb_baselines.json


def shown_command(words: list[str]) -> str:
    """A run's command as the pages show it (data as `$IMDB_DIR`, runs under `runs/`)."""
    words = list(words)
    checkpoint = option(words, "--teacher-checkpoint")
    if checkpoint is not None:
        at = words.index("--teacher-checkpoint") + 1
        words[at] = reader_path("--teacher-checkpoint", checkpoint)
    return reader_command(words)


def read_run(path: Path) -> tuple[str, str, str, dict]:
    """(teacher, seed, how its validation was held out, the run's entry), checked: tested,
    one epoch, no limit; a run that also learned from up to K sentences a review is of the
    teacher `sentences_arm(K)`."""
    run = json.loads(path.read_text())
    words = shlex.split(run.get("command_as_run", run["command"]))
    teacher, seed = option(words, "--teacher"), option(words, "--seed") or "0"
    if run.get("test") is None or "--limit-unlabelled" in words:
        raise SystemExit(f"{path}: not tested, or on part of the unlabelled reviews")
    if any(item != "epochs=1" and not item.startswith("validation=")
           for item in set_values(words)):
        raise SystemExit(f"{path}: settings other than the script's")
    minutes = run["minutes_to_trained"]
    teacher_run = None
    checkpoint = option(words, "--teacher-checkpoint")
    if teacher == "transformer":
        teacher_results = json.loads((Path(checkpoint).parent / "results.json").read_text())
        teacher_run = {"command": teacher_results["command"],
                       "minutes": teacher_results["seconds"]["total"] / 60,
                       "seed": teacher_results["train_config"]["seed"],
                       "checkpoint_sha256": file_sha256(Path(checkpoint))}
        if str(teacher_run["seed"]) != seed:
            raise SystemExit(f"{path}: the teacher was trained with seed "
                             f"{teacher_run['seed']}, the run has seed {seed}")
        minutes += teacher_run["minutes"]
    if run.get("sentences"):
        if teacher != "nbsvm":
            raise SystemExit(f"{path}: sentences taught by {teacher}, not NBSVM")
        teacher = sentences_arm(int(option(words, "--sentences")))
    return teacher, seed, validation_held_out(words), {
        "command": shown_command(words),
        "command_as_run": shlex.join(words),
        "unlabelled": run["unlabelled"],
        "sentences": run.get("sentences", 0),
        "validation": max(row["val_accuracy"] for row in run["history"]),
        "history": run["history"],
        "test": {key: run["test"][key] for key in ("accuracy", "loss", "examples")},
        "minutes": minutes,
        "teacher_run": teacher_run,
        "checkpoint_sha256": file_sha256(path.with_suffix("") / "best.pt"),
    }


def read_untaught(folder: Path) -> tuple[str, dict]:
    """(seed, the run's entry) of a train-imdb folder: tested, the whole-review settings."""
    results = json.loads((folder / "results.json").read_text())
    train_config = results["train_config"]
    if ("train-imdb" not in shlex.split(results["command"]) or results.get("test") is None
            or train_config["truncation"] != "windows"):
        raise SystemExit(f"{folder}: not a tested train-imdb run reading whole reviews")
    return str(train_config["seed"]), {
        "command": reader_command(shlex.split(results["command"])),
        "holdout": train_config.get("validation", "reviews"),
        "validation": results["validation"]["accuracy"],
        "test": {key: results["test"][key] for key in ("accuracy", "loss", "examples")},
        "minutes": results["seconds"]["total"] / 60,
        "checkpoint_sha256": file_sha256(folder / "best.pt"),
    }


def accuracies(per_seed: list[float], minutes: float) -> dict:
    """Test accuracies over seeds: each, their mean and 95% t-interval, minutes a run."""
    interval = paired_difference(per_seed)
    return {"per_seed": per_seed, "mean": interval["mean"],
            "interval_95": [interval["low"], interval["high"]], "df": interval["df"],
            "minutes": minutes}


def summary(runs: dict, whole: dict, counting: dict) -> dict:
    """One teacher's test accuracies, mean and interval, and its paired differences."""
    seeds = sorted(runs, key=int)
    per_seed = [runs[seed]["test"]["accuracy"] for seed in seeds]
    taught = accuracies(per_seed, max(run["minutes"] for run in runs.values()))
    shared = [seed for seed in seeds if seed in whole["test"]]
    return {
        "seeds": seeds, **taught,
        "against_whole_review": {
            "seeds": shared,
            "validation": paired_difference([runs[s]["validation"] for s in shared],
                                            [whole["validation"][s] for s in shared]),
            "test": paired_difference([runs[s]["test"]["accuracy"] for s in shared],
                                      [whole["test"][s] for s in shared]),
        },
        "against_counting": {key: {
            "accuracy": accuracy,
            "difference": paired_difference([a - accuracy for a in per_seed]),
            "lower_end_above": taught["interval_95"][0] > accuracy,
        } for key, accuracy in counting.items()},
    }


def chosen_on_validation(taught: dict, untaught: dict, short: dict | None = None) -> dict:
    """The model `CHOICE` keeps, NBSVM-taught or untaught, with its test accuracies, as
    `best_transformer_test_accuracy`; where the taught model is kept and `short` (the
    record of `ch11_sentences.py`) serves a model taught with sentences, that one, by the
    rule `short` states."""
    versus = taught["nbsvm"]["against_whole_review"]
    if versus["validation"]["low"] > 0:
        rule, arm, name = CHOICE, "nbsvm", TAUGHT_MODEL
        if short is not None:
            rule = f"{CHOICE}; then {short['served']['rule']}"
            count = per_review(short["served"]["arm"])
            if count is not None:
                arm, name = sentences_arm(count), short["served"]["model"]
        return {"model": name, "arm": arm, "rule": rule, "seeds": taught[arm]["seeds"],
                **{key: taught[arm][key] for key in
                   ("per_seed", "mean", "interval_95", "df", "minutes")}}
    seeds = versus["seeds"]
    return {"model": "whole review, untaught", "arm": "none", "rule": CHOICE, "seeds": seeds,
            **accuracies([untaught["test"][s] for s in seeds],
                         max(untaught["minutes"][s] for s in seeds))}


def read_short(path: Path, runs: dict) -> dict:
    """`ch11_sentences.py`'s record, checked to score the same weights as these runs."""
    short = json.loads(path.read_text())
    for teacher, seeds in runs.items():  # the untaught runs are not of `runs`
        for seed, run in seeds.items():
            scored = short["runs"].get(short_arm(teacher), {}).get(seed)
            if scored is None or scored["checkpoint_sha256"] != run["checkpoint_sha256"]:
                raise SystemExit(f"{path}: scores other weights than {teacher} seed {seed}")
    return short


def main(args: argparse.Namespace, argv: list[str]) -> int:
    runs: dict[str, dict] = {}
    holdouts = set()
    for path in args.run:
        teacher, seed, holdout, entry = read_run(path)
        holdouts.add(holdout)
        if seed in runs.setdefault(teacher, {}):
            raise SystemExit(f"{path}: teacher {teacher}, seed {seed} twice")
        runs[teacher][seed] = entry
    if args.untaught:
        untaught = dict(read_untaught(folder) for folder in args.untaught)
        holdouts |= {run["holdout"] for run in untaught.values()}
        whole = {"validation": {seed: run["validation"] for seed, run in untaught.items()},
                 "test": {seed: run["test"]["accuracy"] for seed, run in untaught.items()},
                 "minutes": {seed: run["minutes"] for seed, run in untaught.items()}}
        source = ({"short": os.path.relpath(args.short.resolve(), book_root())} if args.short
                  else {})
    else:
        whole_record = IMDB_WHOLE_REVIEW.read()
        whole = whole_record["candidates"]["whole review"]
        holdouts.add("reviews")  # as the whole-review runs held out their validation
        source = {"whole_review": "book/results/imdb_whole_review.json"}
    if len(holdouts) != 1:
        raise SystemExit(f"the runs hold out their validation in different ways: {holdouts}")
    baselines = IMDB_BASELINES.read()
    counting = {key: next(row for row in baselines["test"] if row["model"] == name)["accuracy"]
                for key, name in COUNTING.items()}
    record = {
        **tool_command("ch11_taught_record.py", argv, str(args.record)),
        **({"holdout": holdouts.pop(),
            "untaught": {seed: untaught[seed] for seed in sorted(untaught, key=int)}}
           if args.untaught else {}),
        "sources": {**source, "counting": "book/results/imdb_baselines.json"},
        "runs": {teacher: dict(sorted(seeds.items(), key=lambda item: int(item[0])))
                 for teacher, seeds in sorted(runs.items())},
        "taught": {teacher: summary(seeds, whole, counting)
                   for teacher, seeds in sorted(runs.items()) if len(seeds) >= 2},
    }
    if args.untaught:
        short = read_short(args.short, record["runs"]) if args.short else None
        record["best_transformer_test_accuracy"] = chosen_on_validation(
            record["taught"], whole, short)
    (IMDB_TAUGHT_BLOCKS if args.untaught else IMDB_TAUGHT).write(record, args.record)
    for teacher, row in record["taught"].items():
        print(f"{teacher}: test {row['mean']:.4f} "
              f"[{row['interval_95'][0]:.4f}, {row['interval_95'][1]:.4f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
