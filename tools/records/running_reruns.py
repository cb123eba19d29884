"""Chapter 11's recorded command run again on another processor: what it gives there.

Each run folder holds `results.json` of `scratchformer train-imdb` run with the recorded
command's settings (`book/results/imdb_cpu.json`: the `cpu` preset, one thread); the record
keeps, per run, its processor, torch, minutes, the loss of its first steps, each validation
accuracy and the test accuracy, beside the recorded run's, so that the appendix "Running it
for real" can say how far a rerun on another processor moves from the record, and whether two
runs on that processor agree with each other.

    python tools/records/running_reruns.py --runs runs/rerun_a runs/rerun_b \
        --record book/results/imdb_cpu_reruns.json

What this deliberately does not handle: runs of other settings (refused), and checkpoints
(only the numbers the runs printed and saved are compared).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scratchbook.arguments import existing_folder, output_file

FIRST_STEPS = 5  # the losses kept of each run's first steps
# Settings the package gained after the record was made, at the value its run had then.
LATER_SETTINGS = {"train_config": {"validation": "reviews"}}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: at least two run folders, each with its results.json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", required=True, nargs="+", type=existing_folder,
                        help="folders of train-imdb runs of the recorded command")
    parser.add_argument("--record", required=True, type=output_file, help="JSON file to write")
    args = parser.parse_args(argv)
    if len(args.runs) < 2:
        parser.error("argument --runs: name two runs or more (whether a processor repeats "
                     "itself takes two)")
    missing = [str(folder) for folder in args.runs if not (folder / "results.json").is_file()]
    if missing:
        parser.error(f"argument --runs: no results.json in {', '.join(missing)} (a finished "
                     "train-imdb run writes one)")
    return args


def same_settings(results: dict, key: str) -> object:
    """What must match the record under `key`: the data by the reviews' fingerprints (the folder
    they were read from may be another), the rest whole, settings added since at their value
    then."""
    if key != "data":
        return {**LATER_SETTINGS.get(key, {}), **results[key]}
    return {split: {name: value for name, value in found.items() if name != "source"}
            for split, found in results["data"]["splits"].items()}


def summary(results: dict) -> dict:
    """What the record keeps of one run's results.json."""
    return {
        "hardware": results["hardware"],
        "software": {key: results["software"][key] for key in ("torch", "python")},
        "minutes": round(results["seconds"]["total"] / 60, 2),
        "first_step_losses": results["history"][0]["step_losses"][:FIRST_STEPS],
        "val_accuracy": [row["val_accuracy"] for row in results["history"]],
        "test_accuracy": results["test"]["accuracy"],
    }


def main(args: argparse.Namespace, argv: list[str]) -> int:
    from scratchbook.commands import tool_command
    from scratchbook.records import IMDB_CPU, IMDB_CPU_RERUNS

    recorded = IMDB_CPU.read()
    runs = []
    for folder in args.runs:
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        differs = [key for key in ("model_config", "train_config", "data")
                   if same_settings(results, key) != same_settings(recorded, key)]
        if differs or results["hardware"]["torch_threads"] != 1:
            what = ", ".join(differs) or "threads"
            print(f"{folder}: not the recorded command's run (its {what} differ from "
                  "book/results/imdb_cpu.json)", file=sys.stderr)
            return 2
        runs.append(summary(results))
    IMDB_CPU_RERUNS.write({**tool_command("running_reruns.py", argv, str(args.record)),
                           "recorded": summary(recorded), "runs": runs}, args.record)
    print(f"wrote {args.record}: {len(runs)} runs on {runs[0]['hardware']['cpu']}")
    return 0


if __name__ == "__main__":
    ARGUMENTS = parse()
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
