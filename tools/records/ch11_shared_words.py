"""How much of a review's rare vocabulary the training reviews already hold: validation reviews
against test reviews, chapter 11's measure of why validation cannot see what teaching on
unlabelled reviews gains.

IMDB's files name no films, so names stand in for them: a *rare* word is one that 2 to 10 of
IMDB's reviews use (train, test and the unlabelled reviews that are in neither, words as bag of
words reads them): names of characters and cast among them. For each seed's split of
train, held out either way `train-imdb` can (`--set validation=reviews`, 2,500 reviews at
random, or `blocks`, blocks of consecutive reviews: `scratchformer.data.holdout`), the record
holds the share of the rare words of the validation reviews, and of all 25,000 test reviews,
that also occur in the 22,500 fitted reviews, and in 22,500 unlabelled reviews drawn with the
seed (pooled: occurrences found over rare words held, a review's word counted once). It also
holds how often a review of the training file shares a rare word with the next one, and with
one drawn at random: the file keeps a film's reviews together.

    python tools/records/ch11_shared_words.py --data $IMDB_DIR \
        --record book/results/imdb_shared_words.json

What it deliberately does not handle: film ids (the release's `urls_*.txt` files would give
them), words as GPT-2 tokens, and anything about labels: no label is read.
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import default_record, existing_folder, record_argument

from scratchbook.records import IMDB_SHARED_WORDS
SEEDS = (0, 1, 2, 3, 4)
RARE = (2, 10)  # a rare word is used by this many reviews, both ends included


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the data folder, a writable `--record`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True,
                        help="IMDB's files: train, test and unsup")
    record_argument(parser, IMDB_SHARED_WORDS)
    args = parser.parse_args(argv)
    args.record = default_record(parser, args.record, IMDB_SHARED_WORDS)
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported
    ARGUMENTS = parse()

import random
from collections import Counter

from scratchformer.data.holdout import HOLDOUTS, holdout
from scratchformer.data.imdb import load_imdb
from scratchformer.measure.baselines import review_words
from scratchformer.train.presets import preset

from ch11_taught import unlabelled_reviews
from scratchbook.commands import tool_command


def shared_share(reviews: list[set[str]], held: set[str]) -> float:
    """Of the reviews' rare words (each review's counted once), the share found in `held`."""
    found = sum(len(words & held) for words in reviews)
    return found / sum(len(words) for words in reviews)


def next_share(reviews: list[set[str]], step: int | None) -> float:
    """Of the training file's reviews, the share that have a rare word in common with the
    review `step` rows further on (`None`: with a review drawn at random, seed 0)."""
    draw = random.Random(0)
    pairs = [(i, i + step if step else draw.randrange(len(reviews)))
             for i in range(len(reviews) - (step or 0))]
    return sum(bool(reviews[i] & reviews[j]) for i, j in pairs) / len(pairs)


def main(args: argparse.Namespace, argv: list[str]) -> int:
    data = load_imdb(args.data, ["train", "test"])
    train, test = data["train"], data["test"]
    unlabelled = unlabelled_reviews(args.data, train, test)  # as the taught runs read them
    words = {name: [set(review_words(text)) for text in texts]
             for name, texts in (("train", train.texts), ("test", test.texts),
                                 ("unlabelled", unlabelled))}
    used_by = Counter(word for reviews in words.values() for review in reviews
                      for word in review)
    rare = {word for word, n in used_by.items() if RARE[0] <= n <= RARE[1]}
    rare_of = {name: [review & rare for review in reviews] for name, reviews in words.items()}
    val_size = preset("cpu")[1].val_size
    seeds = {}
    for seed in SEEDS:
        seeds[str(seed)] = {}
        for by in HOLDOUTS:
            validation, fit = (index.tolist()
                               for index in holdout(train.labels, val_size, seed, by))
            held = {"fit": set().union(*(rare_of["train"][i] for i in fit)),
                    "unlabelled": set().union(*random.Random(seed).sample(
                        rare_of["unlabelled"], len(fit)))}
            seeds[str(seed)][by] = {
                reviews: {source: shared_share(rows, held[source]) for source in held}
                for reviews, rows in (("validation",
                                       [rare_of["train"][i] for i in validation]),
                                      ("test", rare_of["test"]))}
        print(seed, seeds[str(seed)], flush=True)
    neighbours = {"next": next_share(rare_of["train"], 1),
                  "random": next_share(rare_of["train"], None)}
    print("neighbours", neighbours, flush=True)
    record = {**tool_command("ch11_shared_words.py", argv, str(args.record)),
              "rare": {"reviews_using_it": list(RARE), "words": len(rare)},
              "reviews": {"train": len(train), "test": len(test),
                          "unlabelled": len(unlabelled), "validation": val_size},
              "neighbours_sharing_a_rare_word": neighbours,
              "seeds": seeds}
    IMDB_SHARED_WORDS.write(record, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
