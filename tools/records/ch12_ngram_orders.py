"""Chapter 12's held-out comparison with longer n-grams and bootstrap intervals.

For a `scratchformer train-gpt` run, rebuild the stream its counting models were counted
from (the same documents, shuffle and tokenizer, checked against the run's record), count
interpolated Kneser-Ney models of orders 2, 3 and 4 from it, and score each of the run's
500 held-out test reviews; where the run's checkpoint is present, score the GPT on each
review too. `record` writes, per model, bits per byte with a 95% bootstrap interval over
reviews, and for the GPT the interval of its paired difference from each n-gram:

    python tools/records/ch12_ngram_orders.py --data $IMDB_DIR --cache runs/cache \
        --run runs/gpt_cpu --run runs/gpt_s0 --run runs/gpt_s1 \
        --record book/results/gpt_ngrams.json

What this deliberately does not handle: runs with --limit or --init, and orders above 4.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import existing_folder, output_file, run_folder


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the data folder, train-gpt runs, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True, help="the IMDB folder")
    parser.add_argument("--cache", type=Path, required=True, help="the token cache's folder")
    parser.add_argument("--run", type=run_folder("train-gpt", files=("tokenizer.json",)),
                        action="append", required=True,
                        help="a train-gpt run folder (its best.pt, if present, is scored too)")
    parser.add_argument("--record", type=output_file, required=True, help="JSON file to write")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import json
import random
import shlex
import time

import numpy as np

from scratchformer.cli.gpt import cached_stream, run_documents
from scratchformer.data.framing import clean_review
from scratchformer.data.imdb import load_imdb, load_unlabeled
from scratchformer.data.windows import special_ids
from scratchformer.io.fingerprint import tokenizer_sha256
from scratchformer.measure.ngram import KneserNey, bits_per_byte, document_histories
from scratchformer.models.gpt import document_nll
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.tokenize.gpt2_files import END_OF_TEXT
from scratchformer.train.gpt import load_gpt

from scratchbook.records import GPT_NGRAMS
from scratchbook.commands import tool_command

ORDERS = (2, 3, 4)
RESAMPLES = 2_000


def counted_stream(run: dict, data: dict, unlabeled: list[str], tokenizer: BPETokenizer,
                   cache: Path) -> np.ndarray:
    """The stream `run` counted its n-grams from, rebuilt as `scratchformer train-gpt`
    builds it."""
    if run["data"]["limit"] or run["init"]:
        raise ValueError("runs with --limit or --init are not handled")
    documents = run_documents(data, unlabeled, run["train_config"]["seed"],
                              no_labels="--no-labels" in shlex.split(run["command"]))
    fit_documents = documents[run["data"]["validation_documents"]:]
    stream = cached_stream(tokenizer, fit_documents, cache)
    if len(stream) != run["data"]["training_tokens"]:
        raise ValueError(f"rebuilt {len(stream):,} tokens, the run counted "
                         f"{run['data']['training_tokens']:,}")
    return stream


def interval(values: np.ndarray) -> list[float]:
    """The 2.5% and 97.5% points of bootstrap values."""
    return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]


def score_run(folder: Path, data: dict, unlabeled: list[str], cache: Path) -> dict:
    run = json.loads((folder / "results.json").read_text())
    tokenizer = BPETokenizer.load(folder / "tokenizer.json")
    if tokenizer_sha256(tokenizer) != run["tokenizer"]["sha256"]:
        raise ValueError(f"{folder}: tokenizer.json is not the run's tokenizer")
    started = time.perf_counter()
    stream = counted_stream(run, data, unlabeled, tokenizer, cache)
    texts = random.Random(0).sample(data["test"].texts, run["heldout"]["reviews"])
    eot = special_ids(tokenizer)[END_OF_TEXT]
    cleaned = [clean_review(text) for text in texts]
    documents = [[eot, *tokenizer.encode(text)] for text in cleaned]
    review_bytes = np.array([len(text.encode("utf-8")) for text in cleaned])
    nll = {}  # model -> (reviews,) nats
    for order in ORDERS:
        model = KneserNey(stream, tokenizer.n_vocab, order)
        nll[f"Kneser-Ney {order}-gram"] = np.array([
            -model.log_prob(*document_histories([ids], order)).sum() for ids in documents])
    bigram = bits_per_byte(nll["Kneser-Ney 2-gram"].sum(), int(review_bytes.sum()))
    recorded = run["heldout"]["bits_per_byte"]["Kneser-Ney bigram"]
    if abs(bigram - recorded) > 1e-9:
        raise ValueError(f"the rebuilt bigram scores {bigram}, the run recorded {recorded}")
    if (folder / "best.pt").is_file():
        gpt = load_gpt(folder, "cpu")
        nll["GPT"] = np.array([document_nll(gpt, [ids])[0] for ids in documents])
    generator = np.random.default_rng(0)
    picks = generator.integers(0, len(texts), size=(RESAMPLES, len(texts)))
    resampled_bytes = review_bytes[picks].sum(axis=1)

    def bpb(values: np.ndarray) -> np.ndarray:
        return values[picks].sum(axis=1) / np.log(2) / resampled_bytes

    models = {name: {"bits_per_byte": bits_per_byte(values.sum(), int(review_bytes.sum())),
                     "interval_95": interval(bpb(values))} for name, values in nll.items()}
    if "GPT" in nll:
        models["GPT"]["minus"] = {
            name: {"bits_per_byte": models["GPT"]["bits_per_byte"] - row["bits_per_byte"],
                   "interval_95": interval(bpb(nll["GPT"]) - bpb(nll[name]))}
            for name, row in models.items() if name != "GPT"}
    else:
        models["GPT (recorded)"] = {"bits_per_byte": run["heldout"]["bits_per_byte"]["GPT"]}
    return {"run_command": run["command"], "reviews": len(texts),
            "bytes": int(review_bytes.sum()), "counted_tokens": len(stream),
            "models": models, "seconds": time.perf_counter() - started}


def main(args: argparse.Namespace, argv: list[str]) -> int:
    data = load_imdb(args.data)
    unlabeled = load_unlabeled(args.data)
    runs = {}
    for folder in args.run:
        runs[folder.name] = score_run(folder, data, unlabeled, args.cache)
        print(folder.name, json.dumps(runs[folder.name]["models"], indent=1), flush=True)
    GPT_NGRAMS.write({**tool_command("ch12_ngram_orders.py", argv, str(args.record)),
                      "resamples": RESAMPLES, "runs": runs}, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
