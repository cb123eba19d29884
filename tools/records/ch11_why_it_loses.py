"""Chapter 11's "why it loses" experiments: the cpu preset against one change at a time.

Every variant is `scratchformer train-imdb --config cpu` with seeds 0, 1 and 2, each run
tested once; the variants are the preset itself, no attention at all (`num_layers=0`: the
same GPT-2 tokens, embedded and pooled), twice the context (`max_len=512`), and the same
reviews lower-cased before tokenizing. `record` gathers the runs into one file the chapter
reads, with, for the preset's runs, each validation and test review's probability and
NBSVM's score for it (NBSVM trained on the same 22,500 reviews, with the settings
`benchmarks/baselines.py` chose), from which the chapter measures where the two err and
their ensemble.

    python tools/records/ch11_why_it_loses.py run --data $IMDB_DIR --work runs/why
    python tools/records/ch11_why_it_loses.py record --data $IMDB_DIR --work runs/why \
        --record book/results/imdb_cpu_ablations.json

What this deliberately does not handle: other presets, several processes, and resuming a
half-finished run (delete its folder and run again).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import default_record, existing_folder, record_argument

from scratchbook.records import IMDB_BASELINES, IMDB_CPU_ABLATIONS


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the data folder; for `record`, the work folder's runs and a
    writable `--record`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["run", "record"])
    parser.add_argument("--data", type=existing_folder, required=True, help="the IMDB folder")
    parser.add_argument("--work", type=Path, required=True,
                        help="the folder the runs are made in (and read from by `record`)")
    record_argument(parser, IMDB_CPU_ABLATIONS)
    args = parser.parse_args(argv)
    if args.action == "record":
        if not (args.work / "runs").is_dir():
            parser.error(f"argument --work: {args.work} holds no runs/ folder: "
                         "make the runs first with `run`")
        args.record = default_record(parser, args.record, IMDB_CPU_ABLATIONS)
    elif args.work.exists() and not args.work.is_dir():
        parser.error(f"argument --work: {args.work} is a file, not a folder")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import gzip
import json
import subprocess

import torch

from scratchbook.commands import tool_command

SEEDS = (0, 1, 2)
VARIANTS = {  # name -> extra arguments of train-imdb
    "preset": [],
    "no attention": ["--set", "num_layers=0"],
    "lower-cased": [],  # reads the lower-cased copy of the data
    "max_len=512": ["--set", "max_len=512"],
}


def lower_cased_copy(data: Path, work: Path) -> Path:
    """The train and test splits of `data` with every text lower-cased, written once."""
    folder = work / "data_lower"
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        target = folder / f"{split}.jsonl.gz"
        if target.exists():
            continue
        with gzip.open(data / f"{split}.jsonl.gz", "rt") as lines, \
                gzip.open(target.with_suffix(".tmp"), "wt") as out:
            for line in lines:
                review = json.loads(line)
                review["text"] = review["text"].lower()
                out.write(json.dumps(review) + "\n")
        target.with_suffix(".tmp").rename(target)
    return folder


def run(args: argparse.Namespace) -> None:
    for name, extra in VARIANTS.items():
        data = lower_cased_copy(args.data, args.work) if name == "lower-cased" else args.data
        cache = args.work / ("cache_lower" if name == "lower-cased" else "cache")
        for seed in SEEDS:
            out = args.work / "runs" / f"{name.replace(' ', '_')}_seed{seed}"
            if (out / "results.json").exists():
                continue
            command = ["scratchformer", "train-imdb", "--data", str(data), "--out", str(out),
                       "--config", "cpu", "--threads", "1", "--no-progress",
                       "--cache", str(cache), "--set", f"seed={seed}", *extra]
            print(" ".join(command), flush=True)
            subprocess.run(command, check=True)


def positive_probabilities(run_folder: Path, ids: torch.Tensor) -> list[float]:
    """The saved model's probability of "positive" for each row of `ids` `(N, max_len)`."""
    from scratchformer.runs.checkpoint import load_checkpoint

    model = load_checkpoint(run_folder)
    with torch.no_grad():
        return [round(p, 5) for batch in ids.split(256)
                for p in torch.softmax(model(batch).float(), dim=-1)[:, 1].tolist()]


def preset_outputs(splits: dict, run: dict, folder: Path, cache: Path,
                   baselines: dict) -> dict:
    """For the preset's run `run` (its `results.json`) saved in `folder`: on its validation
    reviews and on the test reviews, the Transformer's probability of "positive" and
    NBSVM's score w . x + b, NBSVM trained on the run's other training reviews with the
    settings `benchmarks/baselines.py` chose."""
    from scratchformer.data.review_cache import encode_reviews
    from scratchformer.measure.baselines import fit_nbsvm

    train, settings = splits["train"], run["train_config"]
    order = torch.randperm(len(train),
                           generator=torch.Generator().manual_seed(settings["seed"]))
    val_index = order[: settings["val_size"]].tolist()  # as train-imdb holds them out
    fit_index = order[settings["val_size"] :].tolist()
    chosen = baselines["validation"]["nbsvm"]["chosen"]
    nbsvm = fit_nbsvm([train.texts[i] for i in fit_index],
                      [train.labels[i] for i in fit_index],
                      **{k: chosen[k] for k in ("ngrams", "alpha", "min_count", "l2", "beta")})
    framing = (run["model_config"]["max_len"], settings["truncation"], cache)
    train_ids, _ = encode_reviews(train, *framing)
    test_ids, _ = encode_reviews(splits["test"], *framing)

    def scores(texts: list[str]) -> list[float]:
        return [round(s, 5) for s in (nbsvm.features(texts) @ nbsvm.weight
                                      + nbsvm.bias).tolist()]

    return {
        "val_index": val_index,
        "val": {"transformer": positive_probabilities(folder, train_ids[val_index]),
                "nbsvm": scores([train.texts[i] for i in val_index])},
        "test": {"transformer": positive_probabilities(folder, test_ids),
                 "nbsvm": scores(splits["test"].texts)},
    }


def record(args: argparse.Namespace, argv: list[str]) -> None:
    from scratchformer.data.imdb import load_imdb

    baselines = IMDB_BASELINES.read()
    runs = {}
    for name in VARIANTS:
        for seed in SEEDS:
            folder = args.work / "runs" / f"{name.replace(' ', '_')}_seed{seed}"
            result = json.loads((folder / "results.json").read_text())
            result["data"]["source"] = "$IMDB_DIR" + (" (lower-cased)"
                                                     if name == "lower-cased" else "")
            for split in result["data"]["splits"].values():
                split["source"] = Path(split["source"]).name
            result["command"] = (result["command"].replace(str(args.data), "$IMDB_DIR")
                                 .replace(str(args.work), "runs/why"))
            result.pop("command_as_run", None)
            runs.setdefault(name, {})[str(seed)] = result
    splits = load_imdb(args.data, ["train", "test"])
    outputs = {seed: preset_outputs(splits, runs["preset"][seed], args.work / "runs" /
                                    f"preset_seed{seed}", args.work / "cache", baselines)
               for seed in runs["preset"]}
    IMDB_CPU_ABLATIONS.write({
        "command": (tool_command("ch11_why_it_loses.py",  # the step that made the runs
                                 ["run", "--data", str(args.data), "--work", str(args.work)])["command"]
                    + " && " + tool_command("ch11_why_it_loses.py", argv, str(args.record))["command"]),
        "variants": {name: VARIANTS[name] for name in VARIANTS},
        "runs": runs,
        "train_labels": splits["train"].labels,
        "test_labels": splits["test"].labels,
        "preset_outputs": outputs,
    }, args.record)
    print(f"wrote {args.record}")


def main(args: argparse.Namespace, argv: list[str]) -> int:
    if args.action == "run":
        run(args)
    else:
        record(args, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
