"""The served arm against the counting models given the same inputs: chapter 11's Transformer
taught by NBSVM with 2 sentences a review (the arm the box serves) beside bag of words and
NBSVM fitted on exactly the texts and labels it learned from, and on whole reviews only, all
scored on the same validation sentences.

Per seed, the counting models' accuracies come from `tools/records/ch11_counting_sentences.py`
(`--counting`): three versions of each (fitted on the fit split; on it and the unlabelled
reviews labelled by NBSVM; on those and 2 sentences a review, the served arm's inputs). The
served arm's accuracies on the same sentences come from `book/results/imdb_sentences.json`
(arm "sentences 2"). Two measures: one sentence of each validation review, labelled as its
review is, and the drawn sentences two annotators gave one verdict
(`book/results/sentences_labelled.jsonl`; the annotators were two language models working
independently from a written guide, `tools/records/labelling_guide.md`, not people). For each
counting model and version: means over seeds with 95% t-intervals, and the served arm less it,
seed by seed, with its t-interval; with `--served` (seed 0's served model, its weights
read from its committed ONNX file, the only served-arm weights kept), McNemar's exact test on
seed 0's sentences, sentence by sentence, its accuracies first checked against the record's.

    python tools/records/ch11_sentences_equal.py \
        --counting runs/sentences_counting/seed{0..4}.json \
        --data $IMDB_DIR --cache runs/cache --served

What this deliberately does not handle: test (every measure is validation), and arms other
than the served one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import (default_record, existing_file, existing_folder,
                              record_argument)

from scratchbook.records import IMDB_SENTENCES, IMDB_SENTENCES_EQUAL

SENTENCES = IMDB_SENTENCES.path


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counting", type=existing_file, nargs="+", required=True)
    parser.add_argument("--data", type=existing_folder, default=None,
                        help="IMDB's files (with --served)")
    parser.add_argument("--cache", type=Path, default=None, help="the token cache")
    parser.add_argument("--served", action="store_true",
                        help="per-sentence tests on seed 0, with the served model's weights "
                             "read from its ONNX file")
    record_argument(parser, IMDB_SENTENCES_EQUAL)
    args = parser.parse_args(argv)
    args.record = default_record(parser, args.record, IMDB_SENTENCES_EQUAL)
    if args.served and (args.data is None or args.cache is None):
        parser.error("--served needs --data and --cache")
    return args


if __name__ == "__main__":
    ARGUMENTS = parse()

import json

import numpy as np

from scratchformer.measure.statistics import paired_difference

from paired_tests import mcnemar_exact
from scratchbook.commands import shown_path, tool_command

ARM = "sentences 2"
MODELS = ("bag_of_words", "nbsvm")
VERSIONS = {"untaught": "fitted on the fit split (whole reviews, their labels)",
            "taught": "fitted on the fit split and the unlabelled reviews labelled by NBSVM",
            "sentences": "fitted on the served arm's inputs: those reviews and 2 sentences "
                         "of each, labelled as their review"}
MEASURES = {"validation_sentences": "one sentence of each validation review, labelled as "
                                    "its review",
            "validation_labelled": "the drawn validation sentences both annotators (two "
                                   "language models, from a written guide) gave one verdict"}


def served_right(seed: str, data: Path, cache: Path) -> tuple[dict[str, np.ndarray], dict]:
    """The served model's right/wrong on each of seed 0's sentences of both measures (its
    weights read from the ONNX file, `served_weights.py`), batched as ch11_sentences.py
    batches them."""
    import torch

    from scratchformer.data.batches import ReviewLoader, WindowedReviews
    from scratchformer.data.imdb import load_imdb
    from scratchformer.data.review_cache import review_tokens
    from scratchformer.data.review_windows import review_windows
    from scratchformer.train.presets import preset

    from ch11_test_predictions import test_logits
    from labelled_sentences import kept_labels, read_labels, validation_sentences
    from served_weights import served_model

    torch.set_num_threads(1)
    model, served = served_model()
    train = load_imdb(data, ["train"])["train"]
    tokens = review_tokens(train, cache)
    sentences, labels = validation_sentences(train.labels, tokens, int(seed), "blocks",
                                             preset("cpu")[1].val_size)
    kept = kept_labels(read_labels(), int(seed), sentences)
    right = {}
    for key, chosen, truth in (
            ("validation_sentences", sentences, labels),
            ("validation_labelled", [sentences[i] for i in sorted(kept)],
             [kept[i] for i in sorted(kept)])):
        windows = WindowedReviews.from_reviews(
            [review_windows(s.tolist(), model.config.max_len) for s in chosen])
        loader = ReviewLoader(windows, torch.tensor(truth), 128, length_groups=1)
        right[key] = (test_logits(model, loader).argmax(1) == torch.tensor(truth)).numpy()
    return right, served


def main(args: argparse.Namespace, argv: list[str]) -> int:
    record_in = IMDB_SENTENCES.read()
    served = record_in["runs"][ARM]
    per_seed: dict[str, dict] = {}
    right: dict[str, dict] = {}
    for path in args.counting:
        run = json.loads(path.read_text())
        seed = str(run["seed"])
        per_seed[seed] = run
        with np.load(path.with_suffix(".npz")) as arrays:
            labels = arrays["labels"]
            places = arrays["labelled_places"]
            labelled = arrays["labelled_labels"]
            right[seed] = {f"{m}_{v}": {
                "validation_sentences": (arrays[f"{m}_{v}"] > 0) == labels,
                "validation_labelled": (arrays[f"{m}_{v}"][places] > 0) == labelled}
                for m in MODELS for v in VERSIONS if f"{m}_{v}" in arrays}
    seeds = sorted(set(per_seed) & set(served), key=int)
    counts = {s: {"validation_sentences": per_seed[s]["validation_sentences"],
                  "validation_labelled": per_seed[s]["labelled"]} for s in seeds}
    consistency = {m: {s: {k: round((per_seed[s]["models"][f"{m}_untaught"][k]
                                     - record_in["counting"][m][s][k]) * counts[s][k])
                           for k in MEASURES} for s in seeds} for m in MODELS}
    table = {"served": {"name": "Transformer taught by NBSVM, 2 sentences a review (served "
                                "arm)", **{k: {"per_seed": [served[s][k] for s in seeds],
                                              **paired_difference([served[s][k]
                                                                   for s in seeds])}
                                           for k in MEASURES}}}
    comparisons = {}
    fitted = [v for v in VERSIONS if all(f"bag_of_words_{v}" in per_seed[s]["models"]
                                         for s in seeds)]
    for m in MODELS:
        for v in fitted:
            how = VERSIONS[v]
            key = f"{m}_{v}"
            values = {k: [per_seed[s]["models"][key][k] for s in seeds] for k in MEASURES}
            table[key] = {"how": how,
                          "texts": {s: per_seed[s]["models"][key]["texts"] for s in seeds},
                          **{k: {"per_seed": values[k], **paired_difference(values[k])}
                             for k in MEASURES}}
            comparisons[f"served - {key}"] = {
                k: paired_difference([served[s][k] for s in seeds], values[k])
                for k in MEASURES}
    per_sentence, served_weights = {}, None
    if args.served:
        seed = "0"  # the seed the box serves
        mine, served_weights = served_right(seed, args.data, args.cache)
        for k in MEASURES:
            if not np.isclose(mine[k].mean(), served[seed][k], atol=1e-12):
                raise SystemExit(f"the served model: {k} {mine[k].mean()} here, "
                                 f"{served[seed][k]} recorded")
        per_sentence[seed] = {f"served - {m}_{v}": {
            k: mcnemar_exact(mine[k], right[seed][f"{m}_{v}"][k]) for k in MEASURES}
            for m in MODELS for v in fitted}
    record = {
        **tool_command("ch11_sentences_equal.py", argv, str(args.record)),
        "sources": {"served": shown_path(SENTENCES),
                    "counting": [shown_path(p) for p in args.counting]},
        "seeds": seeds,
        "measures": MEASURES,
        "versions": {v: VERSIONS[v] for v in fitted},
        "labelled_provenance": ("labels made by two language models working independently "
                                "from a written guide (tools/records/labelling_guide.md), "
                                "not by people; a sentence is kept where both gave one "
                                "verdict"),
        "untaught_as_sentences_record": {
            "sentences_more_right_here": consistency,
            "note": "the untaught versions are the sentences record's own counting models "
                    "fitted again; a difference of a sentence or two is floating point in the "
                    "fit (that record's tool ran torch with two threads, this one with one)"},
        "table": table,
        "comparisons": comparisons,
        "per_sentence": {"seeds": sorted(per_sentence, key=int), "tests": per_sentence,
                         "served_weights": served_weights,
                         "note": "McNemar's exact test needs each sentence's verdict: only "
                                 "seed 0's served model is kept (its ONNX file); the other "
                                 "seeds' checkpoints are not"},
    }
    IMDB_SENTENCES_EQUAL.write(record, args.record)
    for name, diff in comparisons.items():
        print(name, {k: f"{100 * d['mean']:+.2f} [{100 * d['low']:+.2f}, {100 * d['high']:+.2f}]"
                     for k, d in diff.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
