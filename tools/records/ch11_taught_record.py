"""Chapter 11's whole-review classifier taught on unlabelled reviews: the runs of
`tools/records/ch11_taught.py` gathered into one record, set beside the untaught whole-review
runs of the same seeds and the counting baselines.

Per teacher and seed: the best validation accuracy, the test accuracy of the kept weights, the
minutes to the trained model (the teacher's work included, a teacher checkpoint's own run
excepted: its minutes are added from its `results.json`), the sha256 of the run's `best.pt`. For each
teacher with at least two seeds: the test accuracies' mean and 95% t-interval, and the paired
differences with the untaught runs (`book/results/imdb_whole_review.json`) on validation and on
test, and with bag of words and NBSVM (`book/results/imdb_baselines.json`), every interval from
`scratchformer.measure.statistics.paired_difference`.

    python tools/records/ch11_taught_record.py --run runs/taught/nbsvm_seed0.json ... \
        --record book/results/imdb_taught.json

What this deliberately does not handle: training (the runs are made beforehand), and teachers
or settings other than the script's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from script_arguments import default_record, existing_file, output_file

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "book" / "results"
DEFAULT_RECORD = RESULTS / "imdb_taught.json"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the runs' JSON files, a writable `--record`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=existing_file, nargs="+", required=True,
                        help="runs of tools/records/ch11_taught.py, with --test")
    parser.add_argument("--record", type=output_file, default=None,
                        help=f"JSON file to write (default: {DEFAULT_RECORD.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    args.record = default_record(parser, args.record, DEFAULT_RECORD)
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported
    ARGUMENTS = parse()

import json
import shlex

from scratchformer.io.files import write_atomically
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.statistics import paired_difference
from scratchformer.runs.folders import reader_command, reader_path

from shown_command import tool_command

COUNTING = {"bag_of_words": "bag of words, logistic regression",
            "nbsvm": "NBSVM, uni+bigrams"}  # the models' names in imdb_baselines.json


def option(words: list[str], name: str) -> str | None:
    """The value of `--name` in a command's words (the last one if given twice)."""
    found = [words[i + 1] for i, word in enumerate(words[:-1]) if word == name]
    return found[-1] if found else None


def shown_command(words: list[str]) -> str:
    """A run's command as the pages show it (data as `$IMDB_DIR`, runs under `runs/`)."""
    words = list(words)
    checkpoint = option(words, "--teacher-checkpoint")
    if checkpoint is not None:
        at = words.index("--teacher-checkpoint") + 1
        words[at] = reader_path("--teacher-checkpoint", checkpoint)
    return reader_command(words)


def read_run(path: Path) -> tuple[str, str, dict]:
    """(teacher, seed, the run's entry), checked: tested, one epoch, no limit."""
    run = json.loads(path.read_text())
    words = shlex.split(run.get("command_as_run", run["command"]))
    teacher, seed = option(words, "--teacher"), option(words, "--seed") or "0"
    if run.get("test") is None or "--limit-unlabelled" in words:
        raise SystemExit(f"{path}: not tested, or on part of the unlabelled reviews")
    if any(item != "epochs=1" for item in
           [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--set"]):
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
    return teacher, seed, {
        "command": shown_command(words),
        "command_as_run": shlex.join(words),
        "unlabelled": run["unlabelled"],
        "validation": max(row["val_accuracy"] for row in run["history"]),
        "history": run["history"],
        "test": {key: run["test"][key] for key in ("accuracy", "loss", "examples")},
        "minutes": minutes,
        "teacher_run": teacher_run,
        "checkpoint_sha256": file_sha256(path.with_suffix("") / "best.pt"),
    }


def summary(runs: dict, whole: dict, counting: dict) -> dict:
    """One teacher's test accuracies, mean and interval, and its paired differences."""
    seeds = sorted(runs, key=int)
    per_seed = [runs[seed]["test"]["accuracy"] for seed in seeds]
    interval = paired_difference(per_seed)
    shared = [seed for seed in seeds if seed in whole["test"]]
    return {
        "seeds": seeds, "per_seed": per_seed, "mean": interval["mean"],
        "interval_95": [interval["low"], interval["high"]], "df": interval["df"],
        "minutes": max(run["minutes"] for run in runs.values()),
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
            "lower_end_above": interval["low"] > accuracy,
        } for key, accuracy in counting.items()},
    }


def main(args: argparse.Namespace, argv: list[str]) -> int:
    runs: dict[str, dict] = {}
    for path in args.run:
        teacher, seed, entry = read_run(path)
        if seed in runs.setdefault(teacher, {}):
            raise SystemExit(f"{path}: teacher {teacher}, seed {seed} twice")
        runs[teacher][seed] = entry
    whole = json.loads((RESULTS / "imdb_whole_review.json").read_text())
    whole = whole["candidates"]["whole review"]
    baselines = json.loads((RESULTS / "imdb_baselines.json").read_text())
    counting = {key: next(row for row in baselines["test"] if row["model"] == name)["accuracy"]
                for key, name in COUNTING.items()}
    record = {
        **tool_command("ch11_taught_record.py", argv, str(args.record)),
        "sources": {"whole_review": "book/results/imdb_whole_review.json",
                    "counting": "book/results/imdb_baselines.json"},
        "runs": {teacher: dict(sorted(seeds.items(), key=lambda item: int(item[0])))
                 for teacher, seeds in sorted(runs.items())},
        "taught": {teacher: summary(seeds, whole, counting)
                   for teacher, seeds in sorted(runs.items()) if len(seeds) >= 2},
    }
    write_atomically(args.record,
                     lambda handle: handle.write((json.dumps(record, indent=2) + "\n").encode()))
    for teacher, row in record["taught"].items():
        print(f"{teacher}: test {row['mean']:.4f} "
              f"[{row['interval_95'][0]:.4f}, {row['interval_95'][1]:.4f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
