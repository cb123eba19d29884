"""Where the classifier box's token parts point, on a fixed set of clear reviews.

Each review of `tests/data/clear_reviews.json` (written, with the words that carry its verdict,
before any part was computed on them) is read by the model the box serves, its exported ONNX
file in ONNX Runtime, through chapter 11's `reading_contributions`: each token's part of the
logit gap against the empty review, as the box computes it. A review is a hit when its
hardest-pushing token (the largest part in size, the darkest colour in the box) lies inside one of
its sentiment words, by the rule the set's file states. The record keeps every review's tokens,
parts, baseline and gap, the hits, and, for the page's sentence on why the box does not colour
by chapter 11's per-position contributions, those contributions for the first review of the
book's written set.

    python benchmarks/web_contributions.py --record book/results/web_contributions.json

What this deliberately does not handle: reviews longer than one frame (254 tokens), other
models than an export of `scratchformer export-web`, and the browser (the browser test holds
the box to this record).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import existing_file, existing_folder, output_file

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "_static" / "models" / "imdb"
DEFAULT_REVIEWS = ROOT / "tests" / "data" / "clear_reviews.json"
WRITTEN = ROOT / "book" / "results" / "handwritten_reviews.jsonl"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: an exported classifier's folder, the set, `--record`
    writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=existing_folder, default=DEFAULT_MODEL,
                        help="a folder of `scratchformer export-web` (default: the served one)")
    parser.add_argument("--reviews", type=existing_file, default=DEFAULT_REVIEWS,
                        help="the set: JSON with reviews of text, label and sentiment_words")
    parser.add_argument("--record", type=output_file, default=None,
                        help="write the record here (default: print only)")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported
    ARGUMENTS = parse()

import json
import platform
import time

import numpy as np
import torch

from scratchformer import __version__
from scratchformer.data.framing import SpecialIds, clean_review, review_encoding, review_token_lists
from scratchformer.data.review_windows import review_windows
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.evaluation import reading_contributions
from scratchbook.records import WEB_CONTRIBUTIONS
from scratchformer.runs.folders import command_record


def token_spans(text: str, tokens: list[int]) -> list[tuple[int, int]]:
    """Each token's characters in `text` (its cleaned form): (start, end)."""
    spans, at = [], 0
    for token in tokens:
        piece = review_encoding().decode([token])
        spans.append((at, at + len(piece)))
        at += len(piece)
    if at != len(text):
        raise SystemExit(f"the tokens of {text!r} do not spell it out (ASCII reviews only)")
    return spans


def word_spans(text: str, words: list[str]) -> list[tuple[int, int]]:
    """Every place each of `words` occurs in `text`, case included: (start, end)."""
    spans = []
    for word in words:
        start = text.find(word)
        if start < 0:
            raise SystemExit(f"the sentiment word {word!r} is not in {text!r}")
        while start >= 0:
            spans.append((start, start + len(word)))
            start = text.find(word, start + 1)
    return spans


def measure(args: argparse.Namespace) -> dict:
    """The parts of every review of the set, its hits, and the comparisons the record keeps."""
    import onnxruntime

    manifest = json.loads((args.model / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("kind") != "classifier":
        raise SystemExit(f"{args.model} holds no exported classifier")
    framing = json.loads((args.model / "tokenizer.json").read_text(encoding="utf-8"))["framing"]
    special = SpecialIds(pad=framing["pad"], cls=framing["cls"], sep=framing["sep"])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(args.model / "model.onnx"), options)

    def log_probabilities(ids: torch.Tensor) -> torch.Tensor:
        """The page's logits: log P, whose difference is the logit gap."""
        probabilities = session.run(["probabilities"], {"ids": ids.numpy()})[0]
        return torch.from_numpy(probabilities.astype(np.float64)).log()  # (B, 2)

    clear = json.loads(args.reviews.read_text(encoding="utf-8"))
    rows, hits = [], 0
    other_hits = {"position": 0, "position_less_mean": 0}
    for review in clear["reviews"]:
        text = clean_review(review["text"])
        tokens = review_token_lists([review["text"]])[0]
        parts, baseline = reading_contributions(log_probabilities, tokens, framing["max_len"],
                                                special)
        spans = token_spans(text, tokens)
        words = word_spans(text, review["sentiment_words"])
        hardest = int(parts.abs().argmax())
        start, end = spans[hardest]
        hit = any(start < w_end and w_start < end for w_start, w_end in words)
        hits += hit
        # for comparison, the same rule on chapter 11's per-position contributions, as they
        # are and less their mean over the tokens ([CLS] and [SEP] left out)
        window = review_windows(tokens, framing["max_len"], special)[0]
        shares = session.run(["contributions"], {"ids": np.array([window], dtype=np.int64)})[0]
        shares = shares[0, 1 : 1 + len(tokens)].astype(np.float64)
        for name, values in (("position", shares), ("position_less_mean", shares - shares.mean())):
            at = spans[int(np.abs(values).argmax())]
            other_hits[name] += any(at[0] < w_end and w_start < at[1] for w_start, w_end in words)
        gap = baseline + parts.sum().item()
        rows.append({"text": review["text"], "label": review["label"],
                     "sentiment_words": review["sentiment_words"],
                     "tokens": [review_encoding().decode([t]) for t in tokens],
                     "parts": parts.tolist(), "baseline": baseline, "gap": gap,
                     "probability": 1 / (1 + np.exp(-gap)), "hardest": hardest,
                     "hardest_token": review_encoding().decode([tokens[hardest]]), "hit": hit})
        print(f"{'hit ' if hit else 'miss'} {rows[-1]['hardest_token']!r:>16} "
              f"{parts[hardest]:+.2f}  {review['text']}")
    first = json.loads(WRITTEN.read_text(encoding="utf-8").splitlines()[0])["text"]
    tokens = review_token_lists([first])[0]
    window = review_windows(tokens, framing["max_len"], special)[0]
    shares = session.run(["contributions"], {"ids": np.array([window], dtype=np.int64)})[0][0]
    alike = {"tokens": [review_encoding().decode([t]) for t in tokens],
             "contributions": shares[1 : 1 + len(tokens)].tolist()}
    signed = sum(row["hit"] and (row["parts"][row["hardest"]] > 0) == (row["label"] == 1)
                 for row in rows)
    print(f"{hits} of {len(rows)} hits, {signed} of them pushing towards the review's label "
          f"(per-position contributions: {other_hits}); "
          "the first written review's per-position contributions: " + ", ".join(
              f"{token!r} {share:+.3f}" for token, share in zip(*alike.values())))
    return {"manifest": manifest, "clear": clear, "hits": hits, "hits_towards_label": signed,
            "other_hits": other_hits, "reviews": rows, "first": first, "alike": alike,
            "onnxruntime": onnxruntime.__version__}


def main(args: argparse.Namespace, argv: list[str]) -> None:
    started = time.perf_counter()
    found = measure(args)
    manifest, clear = found["manifest"], found["clear"]
    if args.record is None:
        return
    record = {
        **command_record(["python", "benchmarks/web_contributions.py", *argv]),
        "what": "the box's token parts (chapter 11's reading_contributions) on the clear reviews",
        "model": {"folder": args.model.relative_to(ROOT).as_posix() if args.model.is_relative_to(ROOT)
                  else args.model.name,
                  "model_onnx_sha256": file_sha256(args.model / "model.onnx"),
                  "checkpoint_sha256": manifest["checkpoint"]["sha256"],
                  "run_command": manifest.get("command")},
        "reviews_file": {"file": args.reviews.relative_to(ROOT).as_posix()
                         if args.reviews.is_relative_to(ROOT) else args.reviews.name,
                         "sha256": file_sha256(args.reviews), "made_by": clear["made_by"],
                         "rule": clear["rule"]},
        "software": {"python": platform.python_version(), "torch": torch.__version__,
                     "onnxruntime": found["onnxruntime"], "scratchformer": __version__},
        "hits": found["hits"],
        "hits_towards_label": found["hits_towards_label"],
        "hits_towards_label_what": "hits whose hardest token pushes towards the review's own "
                                   "label (not part of the set's rule; recorded beside it)",
        "reviews": found["reviews"],
        "hits_by_other_colourings": found["other_hits"],
        "hits_by_other_colourings_what": "the set's rule applied to chapter 11's per-position "
                                         "contributions as they are, and less their mean",
        "alike": {"text": found["first"], **found["alike"],
                  "what": "chapter 11's token_contributions (the ONNX file's per-position "
                          "contributions) of the first review of the written set, [CLS] and "
                          "[SEP] left out"},
        "seconds": time.perf_counter() - started,
    }
    WEB_CONTRIBUTIONS.write(record, args.record)
    print(f"wrote {args.record}")


if __name__ == "__main__":
    main(ARGUMENTS, sys.argv[1:])
