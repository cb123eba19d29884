"""Chapter 12's "Reviews on demand": does a `train-gpt` model read its sentiment token?

For held-out test reviews chosen at random (seed 0), score each review's text after its
true sentiment token and after the flipped one, and record the per-review difference of
the mean loss per text token (flipped minus true, nats): positive where the true token
makes the review likelier. The page computes the mean and its standard error.

    python tools/records/ch12_sentiment_token.py --data $IMDB_DIR --run runs/gpt_cpu --reviews 500 \
        --record book/results/gpt_cpu_sentiment_token.json

What this deliberately does not handle: text beyond the model's context. Each review is
cut to its first `context_length - 1` tokens, so every scored token sees the sentiment
token.
"""

from __future__ import annotations

import argparse
import sys

from script_arguments import existing_folder, output_file, positive_int, refuse, run_folder


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the data folder, a train-gpt run, a positive count of
    reviews, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=existing_folder, help="the IMDB folder")
    parser.add_argument("--run", required=True, type=run_folder("train-gpt", ("best.pt", "tokenizer.json")),
                        help="a train-gpt run folder")
    parser.add_argument("--reviews", type=positive_int, default=500,
                        help="test reviews to score, at most the test split's")
    parser.add_argument("--record", required=True, type=output_file, help="JSON file to write")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import json
import time

import numpy as np
import torch

from scratchformer.data.framing import clean_review
from scratchformer.data.imdb import load_imdb
from scratchformer.data.windows import SENTIMENT_TOKENS, special_ids
from scratchformer.io.files import write_atomically
from scratchformer.io.fingerprint import file_sha256
from scratchformer.models.gpt import document_nll
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.gpt import load_gpt

from shown_command import tool_command


def main(args: argparse.Namespace, argv: list[str]) -> int:
    started = time.perf_counter()
    torch.set_num_threads(1)
    model = load_gpt(args.run)
    tokenizer = BPETokenizer.load(args.run / "tokenizer.json")
    sentiment_ids = special_ids(tokenizer)
    test = load_imdb(args.data)["test"]
    if args.reviews > len(test):
        refuse(f"argument --reviews: {args.reviews} is more than the {len(test):,} test reviews")
    chosen = np.random.default_rng(0).permutation(len(test.texts))[: args.reviews]
    keep = model.config.context_length - 1
    differences, lengths = [], []
    for index in chosen.tolist():
        text_ids = tokenizer.encode(clean_review(test.texts[index]))[:keep]
        label = test.labels[index]
        loss = {}
        for name, token_label in (("true", label), ("flipped", 1 - label)):
            token = sentiment_ids[SENTIMENT_TOKENS[token_label]]
            total, count = document_nll(model, [[token, *text_ids]])
            loss[name] = total / count
        differences.append(loss["flipped"] - loss["true"])
        lengths.append(len(text_ids))
    shown = tool_command("ch12_sentiment_token.py", argv, str(args.record))
    record = {**shown,
              "checkpoint_sha256": file_sha256(args.run / "best.pt"),
              "reviews": len(differences), "review_indices": chosen.tolist(),
              "text_tokens": lengths, "flipped_minus_true_nats_per_token": differences,
              "seconds": time.perf_counter() - started}
    text = json.dumps(record) + "\n"
    write_atomically(args.record, lambda handle: handle.write(text.encode()))
    mean = float(np.mean(differences))
    se = float(np.std(differences, ddof=1) / len(differences) ** 0.5)
    print(f"flipped minus true: {mean:+.5f} nats per token (standard error {se:.5f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
