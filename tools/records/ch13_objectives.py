"""Gather chapter 13's comparison of three pretraining objectives on equal terms.

Reads a folder made by the commands in the appendix ("Experiments behind chapter 13", "Three
objectives on equal terms"): `scratchformer pretrain` runs named `<objective>_s<seed>` (`mlm`, `electra`,
`next-token`; the same encoder, tokenizer of the seed, windows and minutes), and under
`tune/` the `scratchformer train-imdb --init` runs: `<arm>_s0_lr<lr>` (validation only, the
learning rates tried) and `<arm>_s<seed>` (the chosen rate, tested once; seed 0's is the
chosen `_s0_lr<lr>` run, copied and tested with `--resume`), where `<arm>` is an objective
or `scratch` (step 0 of the masked model's run of the same seed: an untrained encoder with
the same tokenizer). Writes each run's command, minutes and final validation loss, and each
objective's mean minutes; each arm's validation accuracy at every rate tried and the rate
chosen (the highest); the tested runs; each objective's gain over `scratch` and each pair of
objectives, seed by seed, as paired differences with their 95% t-intervals
(`paired_difference`).

    python tools/records/ch13_objectives.py --runs runs/objectives \
        --record book/results/pretrain_objectives_cpu.json

What this deliberately does not handle: other names of runs than the above, fine-tuning
runs that did not start from their arm's last snapshot (refused), and unequal numbers of
seeds between arms (refused).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from statistics import fmean

from scratchbook.arguments import existing_folder, output_file

OBJECTIVES = ("mlm", "electra", "next-token")
ARMS = ("scratch", *OBJECTIVES)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: `--runs` holds `tune/` and the pretraining runs of at
    least two seeds of each objective, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", required=True, type=existing_folder,
                        help="the folder of pretraining runs and tune/")
    parser.add_argument("--record", required=True, type=output_file, help="JSON file to write")
    args = parser.parse_args(argv)
    if not (args.runs / "tune").is_dir():
        parser.error(f"argument --runs: {args.runs} has no tune/ folder of fine-tuning runs")
    for objective in OBJECTIVES:
        seeds = [p for p in args.runs.glob(f"{objective}_s*") if (p / "results.json").is_file()]
        if len(seeds) < 2:
            parser.error(f"argument --runs: {args.runs} holds {len(seeds)} finished "
                         f"{objective} runs ({objective}_s<seed>/results.json); an "
                         "interval needs at least two")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported
    ARGUMENTS = parse()

from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.statistics import paired_difference

from scratchbook.records import PRETRAIN_OBJECTIVES_CPU


def read_results(folder: Path) -> dict:
    """A run's `results.json`, refused with its path if it is missing or not JSON."""
    path = folder / "results.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"{path}: cannot read it ({err})") from None


def pretraining_runs(runs: Path) -> dict[str, dict[int, dict]]:
    """Each objective's pretraining runs by seed: command, steps, minutes, final loss."""
    found: dict[str, dict[int, dict]] = {}
    for objective in OBJECTIVES:
        for folder in sorted(runs.glob(f"{objective}_s*")):
            seed = int(re.fullmatch(rf"{re.escape(objective)}_s(\d+)", folder.name)[1])
            results = read_results(folder)
            settings = results["settings"]
            if (settings["objective"], settings["seed"]) != (objective, seed):
                raise SystemExit(f"{folder}: its settings say {settings['objective']}, seed "
                                 f"{settings['seed']}; the folder's name does not")
            found.setdefault(objective, {})[seed] = {
                "command": results["command"], "steps": settings["steps"],
                "window": settings["window"], "batch_size": settings["batch_size"],
                "model_config": results["model_config"],
                "tokenizer_sha256": results["tokenizer"]["sha256"],
                "minutes": results["history"][-1]["seconds"] / 60,  # the updates alone
                "final_validation_loss": results["history"][-1]["val_loss"],
                "last_snapshot": str(folder / f"snapshot-{settings['steps']:07d}.pt"),
                "step0_snapshot": str(folder / "snapshot-0000000.pt")}
    return found


def tuned(folder: Path) -> dict:
    """A fine-tuning run: command, start, rate, validation and (if tested) test accuracy."""
    results = read_results(folder)
    return {"name": folder.name, "command": results["command"],
            "init": (results.get("init") or {}).get("checkpoint"),
            "init_sha256": (results.get("init") or {}).get("sha256"),
            "lr": results["train_config"]["lr"], "seed": results["train_config"]["seed"],
            "validation_accuracy": results["validation"]["accuracy"],
            "test_accuracy": (results.get("test") or {}).get("accuracy"),
            "minutes": sum(r["seconds"] for r in results["history"]) / 60}  # of training


def expected_start(arm: str, seed: int, pretraining: dict) -> str:
    """The sha256 of the snapshot a fine-tuning run of `arm` and `seed` must start from."""
    run = pretraining["mlm" if arm == "scratch" else arm][seed]
    return file_sha256(run["step0_snapshot" if arm == "scratch" else "last_snapshot"])


def gather(runs: Path) -> dict:
    """The record: runs, rates, tested runs and paired differences."""
    pretraining = pretraining_runs(runs)
    seeds = sorted(pretraining["mlm"])
    for objective, by_seed in pretraining.items():
        if sorted(by_seed) != seeds:
            raise SystemExit(f"{objective} has seeds {sorted(by_seed)}, mlm {seeds}: "
                             "each seed needs every objective")
        shapes = {json.dumps(run["model_config"], sort_keys=True) for run in by_seed.values()}
        if len(shapes) != 1:
            raise SystemExit(f"{objective}'s runs differ in their encoder")
    for seed in seeds:
        tokenizers = {pretraining[o][seed]["tokenizer_sha256"] for o in OBJECTIVES}
        if len(tokenizers) != 1:
            raise SystemExit(f"seed {seed}: the objectives' tokenizers differ")
    selection, chosen, tested = {}, {}, {}
    for arm in ARMS:
        starts = {seed: expected_start(arm, seed, pretraining) for seed in seeds}
        tried = [tuned(f) for f in sorted((runs / "tune").glob(f"{arm}_s0_lr*"))]
        if not tried:
            raise SystemExit(f"{runs / 'tune'} has no {arm}_s0_lr<lr> runs to choose from")
        for run in tried:
            if run["test_accuracy"] is not None or run["init_sha256"] != starts[0]:
                raise SystemExit(f"{run['name']}: a rate is chosen on validation alone, "
                                 f"from the arm's snapshot of seed 0")
        selection[arm] = sorted(tried, key=lambda r: r["lr"])
        chosen_run = max(tried, key=lambda r: r["validation_accuracy"])
        chosen[arm] = chosen_run["lr"]
        tested[arm] = []
        for seed in seeds:
            run = tuned(runs / "tune" / f"{arm}_s{seed}")
            if (run["lr"], run["seed"], run["init_sha256"]) != (chosen[arm], seed, starts[seed]):
                raise SystemExit(f"{run['name']}: expected lr {chosen[arm]}, seed {seed}, "
                                 f"from the arm's snapshot of seed {seed}")
            if run["test_accuracy"] is None:
                raise SystemExit(f"{run['name']} was not tested")
            if seed == 0 and run["validation_accuracy"] != chosen_run["validation_accuracy"]:
                raise SystemExit(f"{run['name']} is not {chosen_run['name']} tested: their "
                                 "validation accuracies differ")
            tested[arm].append(run)

    def points(arm: str) -> list[float]:
        return [100 * run["test_accuracy"] for run in tested[arm]]

    gains = {o: paired_difference(points(o), points("scratch")) for o in OBJECTIVES}
    between = {f"{a} - {b}": paired_difference(points(a), points(b))
               for i, a in enumerate(OBJECTIVES) for b in OBJECTIVES[i + 1:]}
    mean_minutes = {o: fmean(pretraining[o][s]["minutes"] for s in seeds) for o in OBJECTIVES}
    return {"seeds": seeds, "pretraining": {o: {str(s): run for s, run in by_seed.items()}
                                            for o, by_seed in pretraining.items()},
            "mean_minutes": mean_minutes,
            "mean_minutes_max_over_min": max(mean_minutes.values()) / min(mean_minutes.values()),
            "selection": selection, "chosen_lr": chosen, "tested": tested,
            "gain_over_scratch_points": gains, "between_objectives_points": between}


def main(args: argparse.Namespace) -> int:
    record = {"command": "python tools/records/ch13_objectives.py --runs "
                        f"{args.runs} --record {args.record}", **gather(args.runs)}
    PRETRAIN_OBJECTIVES_CPU.write(record, args.record)
    for objective, gain in record["gain_over_scratch_points"].items():
        print(f"{objective}: lr {record['chosen_lr'][objective]}, gain over scratch "
              f"{gain['mean']:+.2f} points [{gain['low']:+.2f}, {gain['high']:+.2f}]")
    print(f"mean pretraining minutes an objective, largest / smallest: "
          f"{record['mean_minutes_max_over_min']:.3f}; wrote {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS))
