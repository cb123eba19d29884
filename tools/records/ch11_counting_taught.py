"""The counting models' controls for chapter 11's taught Transformer, one seed: bag of words
and NBSVM taught exactly as `tools/records/ch11_taught.py --teacher nbsvm` teaches the
Transformer, and the same two untaught.

The seed's validation slice is held out of train as the taught runs held it out
(`scratchformer.data.holdout`, `--holdout`, 2,500 reviews, the seed); NBSVM with the settings
`book/results/imdb_baselines.json` chose, fitted on the rest (the fit split), labels IMDB's
unlabelled reviews (every text also in train or test removed: `ch11_taught.unlabelled_reviews`)
with its hard verdicts. Then, with the same chosen settings:

- `bag_of_words` and `nbsvm` untaught: fitted on the fit split (untaught NBSVM is the teacher);
- `bag_of_words_taught` and `nbsvm_taught`: fitted on the fit split plus the labelled
  unlabelled reviews.

Each is scored on the validation slice and on IMDB's 25,000 test reviews (tested once). `--out`
(a .json) records the accuracies, the fit minutes and the command; beside it, the same name
with `.npz` holds every model's margin (w . x + b) on each validation and test review, for
paired per-review tests (under `runs/`: a run's output, not a record).

    python tools/records/ch11_counting_taught.py --data $IMDB_DIR --seed 0 \
        --out runs/controls/seed0.json

What this deliberately does not handle: other teachers (a Transformer's verdicts), soft labels,
and settings chosen anew for the larger training set (the recorded ones are kept).
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import existing_folder, output_file_in_new_folder, seed_int

from scratchbook.records import IMDB_BASELINES
HOLDOUTS = ("reviews", "blocks")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before torch is imported."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True,
                        help="IMDB's files: train, test and unsup")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--holdout", choices=HOLDOUTS, default="blocks")
    parser.add_argument("--out", type=output_file_in_new_folder, required=True,
                        help="the seed's .json (its .npz beside it)")
    args = parser.parse_args(argv)
    if args.out.suffix != ".json":
        parser.error(f"--out {args.out}: name a .json file")
    return args


if __name__ == "__main__":
    ARGUMENTS = parse()

import hashlib
import io
import json
import time

import numpy as np
import torch

from scratchformer.data.holdout import holdout
from scratchformer.data.imdb import load_imdb
from scratchformer.io.files import write_atomically
from scratchformer.measure.baselines import fit_bag_of_words, fit_nbsvm
from scratchformer.train.presets import preset

from ch11_taught import unlabelled_reviews
from scratchbook.commands import tool_command

MODELS = ("bag_of_words", "nbsvm", "bag_of_words_taught", "nbsvm_taught")


def margins(model, texts: list[str], batch: int = 2000) -> np.ndarray:
    """w . x + b of each text `(N,)`, float64."""
    parts = [(model.features(texts[i:i + batch]) @ model.weight + model.bias).double()
             for i in range(0, len(texts), batch)]
    return torch.cat(parts).numpy()


def main(args: argparse.Namespace, argv: list[str]) -> int:
    torch.set_num_threads(1)
    started = time.perf_counter()
    settings = IMDB_BASELINES.read()["validation"]
    chosen = {"bag_of_words": settings["bag_of_words"]["chosen"],
              "nbsvm": settings["nbsvm"]["chosen"]}
    data = load_imdb(args.data, ["train", "test"])
    train, test = data["train"], data["test"]
    unlabelled = unlabelled_reviews(args.data, train, test)
    val_size = preset("cpu")[1].val_size  # the taught runs' 2,500
    val_index, fit_index = (i.tolist() for i in holdout(train.labels, val_size, args.seed,
                                                        args.holdout))
    fit_texts = [train.texts[i] for i in fit_index]
    fit_labels = [train.labels[i] for i in fit_index]
    seconds, models = {}, {}
    clock = time.perf_counter()
    models["nbsvm"] = fit_nbsvm(fit_texts, fit_labels, **chosen["nbsvm"])  # the teacher
    seconds["nbsvm"] = time.perf_counter() - clock
    clock = time.perf_counter()
    verdicts = models["nbsvm"].predict(unlabelled).tolist()
    seconds["labelling"] = time.perf_counter() - clock
    print(f"seed {args.seed}: {len(unlabelled)} unlabelled reviews, "
          f"{sum(verdicts) / len(verdicts):.3f} labelled positive", flush=True)
    taught_texts, taught_labels = fit_texts + unlabelled, fit_labels + verdicts
    for name, texts, labels in (("bag_of_words", fit_texts, fit_labels),
                                ("bag_of_words_taught", taught_texts, taught_labels),
                                ("nbsvm_taught", taught_texts, taught_labels)):
        clock = time.perf_counter()
        fit = fit_nbsvm if name.startswith("nbsvm") else fit_bag_of_words
        models[name] = fit(texts, labels, **chosen[name.removesuffix("_taught")])
        seconds[name] = time.perf_counter() - clock
        print(f"  {name} fitted in {seconds[name]:.0f} s", flush=True)
    val_texts = [train.texts[i] for i in val_index]
    val_labels = np.array([train.labels[i] for i in val_index])
    test_labels = np.array(test.labels)
    scored = {}
    result = {}
    for name in MODELS:
        val_margin, test_margin = margins(models[name], val_texts), margins(models[name],
                                                                            test.texts)
        scored[f"{name}_validation"], scored[f"{name}_test"] = val_margin, test_margin
        result[name] = {
            "validation": float(((val_margin > 0) == val_labels).mean()),
            "test": float(((test_margin > 0) == test_labels).mean()),
            "features": len(models[name].vocabulary),
            "fit_minutes": seconds[name] / 60
            + (seconds["nbsvm"] + seconds["labelling"]) / 60 * name.endswith("_taught"),
        }
        print(f"  {name}: validation {result[name]['validation']:.4f}, "
              f"test {result[name]['test']:.4f}", flush=True)
    record = {
        **tool_command("ch11_counting_taught.py", argv),
        "seed": args.seed, "holdout": args.holdout, "val_size": val_size,
        "fit_reviews": len(fit_index), "unlabelled": len(unlabelled),
        "teacher_positive": sum(verdicts),
        "teacher_verdicts_sha256": hashlib.sha256(bytes(verdicts)).hexdigest(),
        "settings": chosen,
        "validation_fingerprint": hashlib.sha256(
            json.dumps(val_index).encode()).hexdigest(),
        "models": result,
        "fit_minutes_note": "a taught model's minutes include the teacher's fit and its "
                            "labelling of the unlabelled reviews",
        "minutes_total": (time.perf_counter() - started) / 60,
    }

    def write_arrays(handle: io.BufferedWriter) -> None:
        np.savez(handle, validation_labels=val_labels, test_labels=test_labels,
                 validation_index=np.array(val_index), **scored)

    write_atomically(args.out.with_suffix(".npz"), write_arrays)
    text = json.dumps(record, indent=1) + "\n"
    write_atomically(args.out, lambda h: h.write(text.encode("utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
