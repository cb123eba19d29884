"""Chapter 12's "Reviews on demand": does the GPT the page serves read its sentiment token?

Training saw every labelled review as `<|endoftext|> <|positive|> text` (or with
`<|negative|>`). For held-out test reviews chosen at random (seed 0), score each review's
text framed so, after `<|endoftext|>` and its true sentiment token and after `<|endoftext|>`
and the flipped one, and record the per-review difference of the mean loss per text token
(flipped minus true, nats): positive where the true token makes the review likelier. Only
the text's tokens are scored. The page computes the mean and its 95% interval.

The model is a GPT's web export (`scratchformer export-web`), the files the page's box
serves, run in ONNX Runtime as the box runs it: the two framing tokens at once, then the
text one token at a time with the key/value cache. Its tokenizer is rebuilt from the
export's. So the record needs no training run, only the repository:

    python tools/records/ch12_sentiment_token.py --data $IMDB_DIR --model _static/models/gpt \
        --reviews 500 --record book/results/gpt_cpu_sentiment_token.json

What this deliberately does not handle: text beyond the model's context. Each review is
cut to its first `context_length - 2` tokens, so every scored token sees the sentiment
token.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scratchbook.arguments import existing_folder, output_file, positive_int, refuse

EXPORT_FILES = ("manifest.json", "model.onnx", "tokenizer.json")


def gpt_export(text: str) -> Path:
    """An argparse type: the folder of a GPT's web export (`scratchformer export-web`)."""
    folder = existing_folder(text)
    missing = [name for name in EXPORT_FILES if not (folder / name).is_file()]
    if missing:
        raise argparse.ArgumentTypeError(
            f"{folder} holds no {', '.join(missing)}: not a web export "
            "(scratchformer export-web --checkpoint runs/gpt_cpu --out FOLDER)")
    try:
        kind = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["kind"]
    except (ValueError, KeyError, TypeError) as err:
        raise argparse.ArgumentTypeError(f"{folder}/manifest.json is not a web export's "
                                         f"manifest ({err})") from None
    if kind != "gpt":
        raise argparse.ArgumentTypeError(f"{folder} is the web export of a {kind}, not of a GPT")
    return folder


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the data folder, a GPT's web export, a positive count of
    reviews, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=existing_folder, help="the IMDB folder")
    parser.add_argument("--model", required=True, type=gpt_export,
                        help="a GPT's web export, e.g. _static/models/gpt")
    parser.add_argument("--reviews", type=positive_int, default=500,
                        help="test reviews to score, at most the test split's")
    parser.add_argument("--record", required=True, type=output_file, help="JSON file to write")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before the model is read
    ARGUMENTS = parse()

import time

import numpy as np

from scratchformer.data.framing import clean_review
from scratchformer.data.imdb import load_imdb
from scratchformer.data.windows import END_OF_TEXT, SENTIMENT_TOKENS, special_ids
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.statistics import interval_text, paired_difference
from scratchformer.tokenize.bpe import BPETokenizer

from scratchbook.records import GPT_CPU_SENTIMENT_TOKEN

from onnx_reviews import one_thread_session
from scratchbook.commands import tool_command


def export_tokenizer(record: dict) -> BPETokenizer:
    """The export's `tokenizer.json` as the package's tokenizer: its tokens, in id order,
    are the merge ranks; the same special tokens and pattern."""
    ranks = {bytes.fromhex(token): i for i, token in enumerate(record["tokens"])}
    return BPETokenizer(ranks, record["special_tokens"], record["pattern"])


def text_loss(session, prefix: list[int], text_ids: list[int], cache_shape: tuple) -> float:
    """Mean loss (nats) per token of `text_ids` after `prefix`: the prefix read at once,
    then each text token but the last fed alone with the cache, as the page's box steps."""
    empty = np.zeros(cache_shape, dtype=np.float32)  # (L, 1, H, 0, head_dim)
    names = ["logits", "keys", "values"]
    logits, keys, values = session.run(names, {"ids": np.array([prefix]),
                                               "past_keys": empty, "past_values": empty})
    total = 0.0
    for step, token in enumerate(text_ids):
        scores = logits[0].astype(np.float64)  # (V,): the next token's logits
        total += np.logaddexp.reduce(scores) - scores[token]  # -log p(token)
        if step + 1 < len(text_ids):
            logits, keys, values = session.run(names, {"ids": np.array([[token]]),
                                                       "past_keys": keys, "past_values": values})
    return total / len(text_ids)


def main(args: argparse.Namespace, argv: list[str]) -> int:
    started = time.perf_counter()
    manifest = json.loads((args.model / "manifest.json").read_text(encoding="utf-8"))
    onnx_sha = file_sha256(args.model / "model.onnx")
    if onnx_sha != manifest["files"]["model.onnx"]["sha256"]:
        refuse(f"argument --model: {args.model}/model.onnx is not the file its manifest names")
    tokenizer = export_tokenizer(json.loads((args.model / "tokenizer.json").read_text()))
    ids = special_ids(tokenizer)
    config = manifest["config"]
    cache_shape = (config["num_layers"], 1, config["num_heads"], 0, manifest["head_dim"])
    session = one_thread_session(args.model / "model.onnx")
    test = load_imdb(args.data)["test"]
    if args.reviews > len(test):
        refuse(f"argument --reviews: {args.reviews} is more than the {len(test):,} test reviews")
    chosen = np.random.default_rng(0).permutation(len(test.texts))[: args.reviews]
    keep = config["context_length"] - 2  # after <|endoftext|> and the sentiment token
    differences, lengths = [], []
    for index in chosen.tolist():
        text_ids = tokenizer.encode(clean_review(test.texts[index]))[:keep]
        if not text_ids:
            raise ValueError(f"test review {index} has no text to score")
        label = test.labels[index]
        loss = {}
        for name, token_label in (("true", label), ("flipped", 1 - label)):
            prefix = [ids[END_OF_TEXT], ids[SENTIMENT_TOKENS[token_label]]]
            loss[name] = text_loss(session, prefix, text_ids, cache_shape)
        differences.append(loss["flipped"] - loss["true"])
        lengths.append(len(text_ids))
    shown = tool_command("ch12_sentiment_token.py", argv, str(args.record))
    record = {**shown,
              "checkpoint_sha256": manifest["checkpoint"]["sha256"],  # what was exported
              "model_onnx_sha256": onnx_sha, "model_command": manifest.get("command"),
              "reviews": len(differences), "review_indices": chosen.tolist(),
              "text_tokens": lengths, "flipped_minus_true_nats_per_token": differences,
              "seconds": time.perf_counter() - started}
    GPT_CPU_SENTIMENT_TOKEN.write(record, args.record)
    gap = paired_difference(differences)
    print(f"flipped minus true, nats per token: {interval_text(gap, digits=5, unit='')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
