"""Chapter 11's gap to counting at equal input: the two counting baselines given exactly what
the Transformer reads.

Bag-of-words logistic regression and NBSVM, with the settings `book/results/imdb_baselines.json`
chose on validation (nothing is tuned here), are fitted on the 25,000 training reviews and tested
once on the 25,000 test reviews, for three inputs: the whole review (as that record did), and the
tokens chapter 11's Transformer reads at its two context lengths: the review cleaned and
tokenized with GPT-2's BPE, cut head+tail by `frame_tokens` to 254 tokens (a 256-token frame
less `[CLS]` and `[SEP]`) or 510 (512), and decoded back to text. Beside them, the Transformer's
recorded test accuracies at the same inputs, read from `book/results/imdb_cpu.json` and
`book/results/imdb_cpu_ablations.json` (the preset, its `max_len=512` variant and its
attention-free variant, three seeds each), not retrained.

    python tools/records/ch11_gap.py --data $IMDB_DIR --cache runs/cache \
        --record book/results/imdb_gap.json

What this deliberately does not handle: other truncations than the Transformer's own, and other
settings than the recorded ones. Where the whole reviews do not reproduce the recorded test
accuracies, it stops without writing: the comparison would not be the recorded one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import default_record, existing_folder, positive_int, record_argument

from scratchbook.records import IMDB_BASELINES, IMDB_CPU, IMDB_CPU_ABLATIONS, IMDB_GAP


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the data folder, a writable `--record`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True, help="the IMDB folder")
    parser.add_argument("--cache", type=Path, default=None,
                        help="the token cache's folder (default: the package's)")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch threads (the recorded baselines used 1)")
    record_argument(parser, IMDB_GAP)
    args = parser.parse_args(argv)
    if args.cache is not None and args.cache.exists() and not args.cache.is_dir():
        parser.error(f"argument --cache: {args.cache} is a file, not a folder")
    args.record = default_record(parser, args.record, IMDB_GAP)
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import platform
import time
from collections.abc import Callable, Sequence

import torch

from scratchformer import __version__
from scratchformer.data.framing import GPT2_VOCAB_SIZE, frame_tokens, review_encoding
from scratchformer.data.imdb import ReviewSplit, load_imdb
from scratchformer.data.review_cache import review_tokens, tokenizer_fingerprint
from scratchformer.measure.baselines import LinearTextClassifier, fit_bag_of_words, fit_nbsvm
from scratchformer.runs.hardware import hardware_info, one_minute_load, timing_load

from scratchbook.commands import tool_command

WHOLE = "whole review"
VARIANTS = {"254 tokens": "preset", "510 tokens": "max_len=512"}  # input -> Transformer run
ATTENTION_FREE = "no attention"  # the preset without its layer, at 254 tokens
RECORDED_NAMES = {"bag_of_words": "bag of words, logistic regression",
                  "nbsvm": "NBSVM, uni+bigrams"}  # the models' names in imdb_baselines.json


def transformer_runs(ablations: dict, chapter_run: dict) -> dict:
    """Per input, the Transformer variant's frame (max_len, truncation) and its seeds' test
    accuracies; the chapter's own preset run must be one of the preset's seeds."""
    runs = {}
    for label, variant in {**VARIANTS, f"{ATTENTION_FREE} (254 tokens)": ATTENTION_FREE}.items():
        seeds = ablations["runs"][variant]
        frames = {(run["model_config"]["max_len"], run["train_config"]["truncation"])
                  for run in seeds.values()}
        if len(frames) != 1:
            raise SystemExit(f"imdb_cpu_ablations.json: the {variant!r} runs differ in framing: "
                             f"{sorted(frames)}")
        max_len, truncation = frames.pop()
        accuracies = {seed: run["test"]["accuracy"] for seed, run in seeds.items()}
        runs[label] = {"variant": variant, "max_len": max_len, "truncation": truncation,
                       "test_accuracy": accuracies,
                       "mean": sum(accuracies.values()) / len(accuracies)}
    preset = runs["254 tokens"]
    seed = str(chapter_run["train_config"]["seed"])
    if (chapter_run["model_config"]["max_len"], chapter_run["train_config"]["truncation"]) != \
            (preset["max_len"], preset["truncation"]) or \
            preset["test_accuracy"].get(seed) != chapter_run["test"]["accuracy"]:
        raise SystemExit("imdb_cpu.json is not the preset's seed-"
                         f"{seed} run of imdb_cpu_ablations.json: their framing or test "
                         "accuracy differ")
    return runs


def framed_texts(split: ReviewSplit, max_len: int, truncation: str, cache: Path | None
                 ) -> tuple[list[str], int]:
    """Each review as the Transformer reads it, in words: its GPT-2 tokens framed by
    `frame_tokens` (the `[CLS]`, `[SEP]` and `[PAD]` ids, all above GPT-2's, dropped) and
    decoded; and how many reviews the frame cut."""
    encoding = review_encoding()
    texts, cut = [], 0
    for tokens in review_tokens(split, cache):
        kept = [i for i in frame_tokens(tokens.tolist(), max_len, truncation)
                if i < GPT2_VOCAB_SIZE]
        cut += len(kept) < len(tokens)
        texts.append(encoding.decode(kept))
    return texts, cut


def test_once(fit: Callable[[], LinearTextClassifier], test_texts: Sequence[str],
              test_labels: Sequence[int]) -> dict:
    """Fit, predict the test reviews once; accuracy, count and wall-clock seconds."""
    start = time.perf_counter()
    model = fit()
    fitted = time.perf_counter()
    predictions = model.predict(test_texts).cpu()
    correct = int((predictions == torch.tensor(test_labels)).sum())
    return {"accuracy": correct / len(test_labels), "correct": correct,
            "examples": len(test_labels), "features": len(model.vocabulary),
            "seconds": {"fit": fitted - start, "predict": time.perf_counter() - fitted}}


def main(args: argparse.Namespace, argv: list[str]) -> int:
    torch.set_num_threads(args.threads)
    load_at_start = one_minute_load()
    started = time.perf_counter()
    baselines = IMDB_BASELINES.read()
    chosen = {"bag_of_words": baselines["validation"]["bag_of_words"]["chosen"],
              "nbsvm": baselines["validation"]["nbsvm"]["chosen"]}
    recorded = {key: next(row for row in baselines["test"] if row["model"] == name)
                for key, name in RECORDED_NAMES.items()}
    runs = transformer_runs(IMDB_CPU_ABLATIONS.read(), IMDB_CPU.read())

    data = load_imdb(args.data, ["train", "test"])
    train, test = data["train"], data["test"]
    for name, split in data.items():
        if split.fingerprint() != baselines["data"]["splits"][name]["fingerprint"]:
            raise SystemExit(f"{args.data}: its {name} split is not the one "
                             "imdb_baselines.json was measured on (fingerprints differ)")
    fits = {"bag_of_words": lambda texts: fit_bag_of_words(texts, train.labels,
                                                           **chosen["bag_of_words"]),
            "nbsvm": lambda texts: fit_nbsvm(texts, train.labels, **chosen["nbsvm"])}

    inputs = {}
    for label in (WHOLE, *VARIANTS):
        if label == WHOLE:
            train_texts, test_texts, cut = train.texts, test.texts, {"train": 0, "test": 0}
            frame = {"max_len": None, "tokens": None, "truncation": None}
        else:
            max_len, truncation = runs[label]["max_len"], runs[label]["truncation"]
            train_texts, train_cut = framed_texts(train, max_len, truncation, args.cache)
            test_texts, test_cut = framed_texts(test, max_len, truncation, args.cache)
            cut = {"train": train_cut, "test": test_cut}
            frame = {"max_len": max_len, "tokens": max_len - 2, "truncation": truncation}
        row = {**frame, "reviews_cut": cut}
        for model, fit in fits.items():
            row[model] = test_once(lambda: fit(train_texts), test_texts, test.labels)
            print(f"{label}, {model}: {row[model]['accuracy']:.5f} "
                  f"({row[model]['seconds']['fit']:.0f} s to fit)", flush=True)
            if label == WHOLE and row[model]["correct"] != recorded[model]["correct"]:
                raise SystemExit(
                    f"{RECORDED_NAMES[model]} on whole reviews: {row[model]['correct']} correct, "
                    f"imdb_baselines.json recorded {recorded[model]['correct']}; nothing written")
        inputs[label] = row

    gaps = {}
    for label, row in inputs.items():
        whole = inputs[WHOLE]
        gaps[label] = {f"truncation_cost_{model}": whole[model]["accuracy"] - row[model]["accuracy"]
                       for model in fits}
        if label in runs:
            transformer = runs[label]["mean"]
            gaps[label] |= {f"transformer_minus_{model}": transformer - row[model]["accuracy"]
                            for model in fits}
    attention_free = runs.pop(f"{ATTENTION_FREE} (254 tokens)")
    gaps["254 tokens"]["no_attention_minus_bag_of_words"] = \
        attention_free["mean"] - inputs["254 tokens"]["bag_of_words"]["accuracy"]

    record = {
        **tool_command("ch11_gap.py", argv, str(args.record)),
        "hardware": hardware_info(torch.device("cpu")),
        "software": {"torch": torch.__version__, "python": platform.python_version(),
                     "scratchformer": __version__},
        "load": timing_load(load_at_start, one_minute_load(), own=(0, args.threads)),
        "data": {"source": "$IMDB_DIR",
                 "splits": {name: {"reviews": len(split), "positive": sum(split.labels),
                                   "fingerprint": split.fingerprint()}
                            for name, split in data.items()},
                 "tokenizer": tokenizer_fingerprint()},
        "settings": {"source": "book/results/imdb_baselines.json", **chosen},
        "counting": inputs,
        "transformer": {"source": "book/results/imdb_cpu_ablations.json", "inputs": runs,
                        "chapter_run": {"source": "book/results/imdb_cpu.json",
                                        "test_accuracy": IMDB_CPU.read()["test"]
                                        ["accuracy"]}},
        "attention_free": {"source": "book/results/imdb_cpu_ablations.json",
                           "input": "254 tokens", **attention_free},
        "gaps": gaps,
        "seconds_total": time.perf_counter() - started,
    }
    IMDB_GAP.write(record, args.record)
    print(f"wrote {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
