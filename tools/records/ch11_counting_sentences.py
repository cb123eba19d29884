"""The counting models given the served Transformer's inputs, one seed: bag of words and NBSVM
fitted on exactly the texts and labels the arm "nbsvm, sentences 2" learned from, and scored
on the same validation sentences as `tools/records/ch11_sentences.py` scores every run.

The arm's training set, rebuilt as `tools/records/ch11_taught.py --sentences 2` builds it: the
seed's fit split (validation held out in blocks) with its labels, IMDB's unlabelled reviews
(those also in train or test removed) with the hard verdicts of NBSVM fitted on the fit split,
and up to 2 sentences of each of these reviews (`scratchformer.data.sentences.draw_sentences`,
the seed's draw), each labelled as its review, decoded from GPT-2's tokens to the text a
counting model reads. Up to three versions of each counting model (`--versions`; by default
the first and the last), all with the settings
`book/results/imdb_baselines.json` chose: fitted on the fit split (`untaught`, as the
sentences record's own), on the fit split and the labelled unlabelled reviews (`taught`), and
on those and the sentences (`sentences`, the arm's inputs). Each is scored on one sentence of
each validation review (labelled as its review) and on the labelled ones
(`book/results/sentences_labelled.jsonl`); `--out` (.json) records the accuracies and fits, the
`.npz` beside it every margin, for per-sentence paired tests (under `runs/`).

    python tools/records/ch11_counting_sentences.py --data $IMDB_DIR --cache runs/cache \
        --seed 0 --out runs/sentences_counting/seed0.json

What this deliberately does not handle: test (the sentences are the validation slice's), and
settings chosen anew for sentences.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import existing_folder, output_file_in_new_folder, seed_int

from scratchbook.records import IMDB_BASELINES
PER_REVIEW = 2  # the served arm's sentences a review
VERSIONS = ("untaught", "taught", "sentences")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before torch is imported."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True)
    parser.add_argument("--cache", type=Path, required=True, help="the token cache")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--versions", nargs="+", choices=VERSIONS,
                        default=["untaught", "sentences"],
                        help="which versions to fit (default: untaught and sentences)")
    parser.add_argument("--out", type=output_file_in_new_folder, required=True)
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

from scratchformer.data.framing import review_encoding
from scratchformer.data.holdout import holdout
from scratchformer.data.imdb import ReviewSplit, load_imdb
from scratchformer.data.review_cache import review_tokens
from scratchformer.data.sentences import draw_sentences
from scratchformer.io.files import write_atomically
from scratchformer.measure.baselines import fit_bag_of_words, fit_nbsvm
from scratchformer.train.presets import preset

from ch11_counting_taught import margins
from ch11_taught import unlabelled_reviews
from labelled_sentences import kept_labels, read_labels, validation_sentences
from scratchbook.commands import tool_command

HOLDOUT = "blocks"  # as the served arm's runs held out their validation


def main(args: argparse.Namespace, argv: list[str]) -> int:
    torch.set_num_threads(1)
    started = time.perf_counter()
    chosen = IMDB_BASELINES.read()["validation"]
    settings = {name: chosen[name]["chosen"] for name in ("bag_of_words", "nbsvm")}
    data = load_imdb(args.data, ["train", "test"])
    train, test = data["train"], data["test"]
    unlabelled = unlabelled_reviews(args.data, train, test)
    val_size = preset("cpu")[1].val_size
    _, fit_index = (i.tolist() for i in holdout(train.labels, val_size, args.seed, HOLDOUT))
    fit_texts = [train.texts[i] for i in fit_index]
    fit_labels = [train.labels[i] for i in fit_index]
    clock = time.perf_counter()
    teacher = fit_nbsvm(fit_texts, fit_labels, **settings["nbsvm"])
    verdicts = teacher.predict(unlabelled).tolist()
    teacher_seconds = time.perf_counter() - clock
    train_tokens = review_tokens(train, args.cache)
    unlabelled_tokens = review_tokens(ReviewSplit(unlabelled, [0] * len(unlabelled), "unsup"),
                                      args.cache)
    taught_tokens = [train_tokens[i] for i in fit_index] + list(unlabelled_tokens)
    taught_labels = fit_labels + verdicts
    sentences, owners = draw_sentences(taught_tokens, PER_REVIEW, args.seed)
    decode = review_encoding().decode
    sentence_texts = [decode(s.tolist()) for s in sentences]
    sentence_labels = [taught_labels[owner] for owner in owners]
    print(f"seed {args.seed}: {len(unlabelled)} unlabelled, {len(sentences)} sentences",
          flush=True)
    inputs = {"untaught": (fit_texts, fit_labels),
              "taught": (fit_texts + unlabelled, taught_labels),
              "sentences": (fit_texts + unlabelled + sentence_texts,
                            taught_labels + sentence_labels)}
    val_sentences, val_labels = validation_sentences(train.labels, train_tokens, args.seed,
                                                     HOLDOUT, val_size)
    kept = kept_labels(read_labels(), args.seed, val_sentences)
    val_texts = [decode(s.tolist()) for s in val_sentences]
    places = sorted(kept)
    scored, result = {}, {}
    for version, (texts, labels) in ((v, inputs[v]) for v in args.versions):
        for name, fit in (("bag_of_words", fit_bag_of_words), ("nbsvm", fit_nbsvm)):
            clock = time.perf_counter()
            model = (teacher if (version, name) == ("untaught", "nbsvm")
                     else fit(texts, labels, **settings[name]))
            seconds = (teacher_seconds if (version, name) == ("untaught", "nbsvm")
                       else time.perf_counter() - clock)
            margin = margins(model, val_texts)
            key = f"{name}_{version}"
            scored[key] = margin
            right = (margin > 0) == np.array(val_labels)
            labelled_right = (margin[places] > 0) == np.array([kept[p] for p in places])
            result[key] = {"texts": len(texts), "features": len(model.vocabulary),
                           "fit_seconds": seconds,
                           "validation_sentences": float(right.mean()),
                           "validation_labelled": float(labelled_right.mean())}
            print(f"  {key}: {result[key]}", flush=True)
    record = {
        **tool_command("ch11_counting_sentences.py", argv),
        "seed": args.seed, "holdout": HOLDOUT, "per_review": PER_REVIEW,
        "fit_reviews": len(fit_index), "unlabelled": len(unlabelled),
        "sentences": len(sentences),
        "teacher_verdicts_sha256": hashlib.sha256(bytes(verdicts)).hexdigest(),
        "validation_sentences": len(val_texts), "labelled": len(places),
        "settings": settings, "models": result,
        "minutes_total": (time.perf_counter() - started) / 60,
    }

    def write_arrays(handle: io.BufferedWriter) -> None:
        np.savez(handle, labels=np.array(val_labels), labelled_places=np.array(places),
                 labelled_labels=np.array([kept[p] for p in places]), **scored)

    write_atomically(args.out.with_suffix(".npz"), write_arrays)
    text = json.dumps(record, indent=1) + "\n"
    write_atomically(args.out, lambda h: h.write(text.encode("utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
