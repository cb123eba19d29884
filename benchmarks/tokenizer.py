"""Benchmark scratchformer's pure-Python BPE against tiktoken and HuggingFace `tokenizers`.

Measured in one run, so the ratios stay meaningful on a busy machine:

1. identity: `BPETokenizer.from_gpt2().encode(t) == tiktoken.encode(t, disallowed_special=())`
   for every review of the IMDB training split, and for text built from every Unicode scalar value;
2. encoding speed, one thread, on the same reviews (a fresh tokenizer, so its chunk cache starts
   cold), against tiktoken; the regex pre-tokenization alone is timed as a reference point;
3. training speed: a vocabulary of 256 bytes + N merges on the whole training text, against the
   `tokenizers` BPE trainer on one thread with the same pre-tokenization (GPT-2's regex, then
   bytes), and whether both learn the same tokens in the same order.

    python benchmarks/tokenizer.py --data $IMDB_DIR/train.jsonl.gz
    python benchmarks/tokenizer.py --record book/results/tokenizer_benchmark.json

The data file is JSON Lines (optionally gzipped) with a "text" field per line; without `--data`,
`$IMDB_DIR/train.jsonl.gz`.
"""

from __future__ import annotations

import os

# One thread for HuggingFace tokenizers; must be set before it is imported.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import existing_file, output_file, positive_int


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the data file present, counts positive, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=existing_file, default=None,
                        help="JSON Lines file (optionally .gz) with a 'text' field per line "
                             "(default: $IMDB_DIR/train.jsonl.gz)")
    parser.add_argument("--merges", type=positive_int, default=10_000,
                        help="merges to learn in the training benchmark")
    parser.add_argument("--repeats", type=positive_int, default=2,
                        help="encoding timings: best of this many runs")
    parser.add_argument("--codepoints", action=argparse.BooleanOptionalAction, default=True,
                        help="also check text made of every Unicode scalar value (about a minute)")
    parser.add_argument("--record", type=output_file, help="also write the results as JSON (for the book)")
    parser.add_argument("--allow-busy", action="store_true",
                        help="record the timings even if the machine was busy (marked so)")
    args = parser.parse_args(argv)
    if args.data is None:
        if not os.environ.get("IMDB_DIR"):
            parser.error("name the training reviews with --data, or set IMDB_DIR to the folder "
                         "holding train.jsonl.gz")
        try:
            args.data = existing_file(os.path.join(os.environ["IMDB_DIR"], "train.jsonl.gz"))
        except argparse.ArgumentTypeError as err:
            parser.error(f"argument --data (from IMDB_DIR): {err}")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before the imports below (seconds)
    ARGUMENTS = parse()

try:  # HuggingFace's trainer is the reference; the `bench` extra installs it
    import tokenizers
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
except ImportError:
    sys.exit("benchmarks/tokenizer.py compares with HuggingFace's `tokenizers`, which is not "
             "installed: pip install 'scratchformer[bench]'")

import gzip
import json
import platform
import time
from collections.abc import Callable

import regex
import tiktoken

from scratchformer.runs.folders import command_record
from scratchformer.runs.hardware import (MachineBusy, check_quiet, one_minute_load,
                                         timing_load)
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.tokenize.gpt2_files import (GPT2_PATTERN, bytes_to_unicode,
                                               gpt2_encoding)

from scratchbook.records import TOKENIZER_BENCHMARK


def read_texts(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()]


def seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def codepoint_texts(block: int = 256) -> list[str]:
    """Every Unicode scalar value, each in a few contexts, grouped into texts of `block` code points."""
    scalars = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    return [
        "".join(f"a{chr(c)}b {chr(c)}1{chr(c)} {chr(c)}{chr(c)}\n{chr(c)} " for c in scalars[i:i + block])
        for i in range(0, len(scalars), block)
    ]


def hf_train(text: str, vocab_size: int) -> tuple[list[bytes], float]:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(GPT2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=0, show_progress=False, special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    elapsed = seconds(lambda: tokenizer.train_from_iterator([text], trainer=trainer))
    byte_of = {char: b for b, char in bytes_to_unicode().items()}
    by_id = sorted((i, token) for token, i in tokenizer.get_vocab().items())
    return [bytes(byte_of[c] for c in token) for _, token in by_id], elapsed


def main(args: argparse.Namespace, argv: list[str]) -> int:
    load_before = os.getloadavg()
    texts = read_texts(args.data)
    text_bytes = sum(len(t.encode("utf-8")) for t in texts)
    encoding = gpt2_encoding()
    rows: list[tuple[str, str, str, str]] = []

    # 1. Identity.
    ours = BPETokenizer.from_gpt2()
    same = sum(ours.encode(t) == encoding.encode(t, disallowed_special=()) for t in texts)
    identity = f"{same:,}/{len(texts):,} = {100 * same / len(texts):.3f}%"
    rows.append((f"identity, {args.data.name} reviews", identity, "", ""))
    probes = codepoint_texts() if args.codepoints else []
    same_probes = sum(ours.encode(t) == encoding.encode(t, disallowed_special=()) for t in probes)
    if probes:
        rows.append(("identity, every Unicode scalar value", f"{same_probes:,}/{len(probes):,} texts", "", ""))

    # 2. Encoding speed, one thread; each side's best of `repeats`, interleaved.
    tiktoken_times, our_times, regex_times = [], [], []
    chunker = regex.compile(GPT2_PATTERN)
    for _ in range(args.repeats):
        tiktoken_times.append(seconds(lambda: [encoding.encode(t, disallowed_special=()) for t in texts]))
        fresh = BPETokenizer.from_gpt2()  # cold chunk cache
        our_times.append(seconds(lambda: [fresh.encode(t) for t in texts]))
        regex_times.append(seconds(lambda: [chunker.findall(t) for t in texts]))
    t_tik, t_ours, t_regex = min(tiktoken_times), min(our_times), min(regex_times)
    mb = text_bytes / 1e6
    rows.append(("encode, tiktoken (Rust)", f"{t_tik:.2f} s", f"{mb / t_tik:.2f} MB/s", "1.00x"))
    rows.append(("encode, BPETokenizer (pure Python)", f"{t_ours:.2f} s", f"{mb / t_ours:.2f} MB/s", f"{t_ours / t_tik:.2f}x"))
    rows.append(("  of which regex pre-tokenization", f"{t_regex:.2f} s", f"{mb / t_regex:.2f} MB/s", f"{t_regex / t_tik:.2f}x"))

    # 3. Training speed, one thread each, same text and pre-tokenization.
    corpus = "\n".join(texts)
    vocab_size = 256 + args.merges
    hf_tokens, t_hf = hf_train(corpus, vocab_size)
    trained: list[BPETokenizer] = []
    t_train = seconds(lambda: trained.append(BPETokenizer.train(corpus, vocab_size)))
    our_tokens = [trained[0].decode_bytes([i]) for i in range(trained[0].n_vocab)]
    matching = sum(a == b for a, b in zip(our_tokens, hf_tokens))
    rows.append((f"train {args.merges:,} merges, tokenizers (Rust, 1 thread)", f"{t_hf:.2f} s", "", "1.00x"))
    rows.append((f"train {args.merges:,} merges, BPETokenizer.train", f"{t_train:.2f} s", "", f"{t_train / t_hf:.2f}x"))
    rows.append(("  same tokens, same order as tokenizers", f"{matching:,}/{max(len(our_tokens), len(hf_tokens)):,}", "", ""))
    load_after = os.getloadavg()

    width = max(len(r[0]) for r in rows)
    lines = [f"{'measurement':<{width}}  {'result':>22}  {'speed':>11}  {'ratio':>6}",
             "-" * (width + 45)]
    lines += [f"{name:<{width}}  {result:>22}  {speed:>11}  {ratio:>6}" for name, result, speed, ratio in rows]
    lines.append(f"{len(texts):,} texts, {mb:.1f} MB of UTF-8; load average {load_before[0]:.1f} before, "
                 f"{load_after[0]:.1f} after, on {os.cpu_count()} CPUs")
    table = "\n".join(lines)
    print(table)

    if args.record:
        load_at_start = load_before[0]
        load = timing_load(load_at_start, one_minute_load(), own=(0, 1))
        try:
            check_quiet(load, args.allow_busy)
        except MachineBusy as err:
            raise SystemExit(f"{args.record} not written: {err}") from None
        hardware = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
                    f"{platform.python_version()}, tiktoken {tiktoken.__version__}, tokenizers {tokenizers.__version__}")
        record = {
            **command_record(["python", "benchmarks/tokenizer.py", *argv]),
            "hardware": hardware,
            "table": table,
            "identity": identity,
            "encode_ratio": t_ours / t_tik,
            "regex_ratio": t_regex / t_tik,
            "train_ratio": t_train / t_hf,
            "merges": args.merges,
            "train_tokens_matching": matching,
            "train_tokens_total": max(len(our_tokens), len(hf_tokens)),
            "load": load,
        }
        TOKENIZER_BENCHMARK.write(record, args.record)
    return 0 if same == len(texts) and same_probes == len(probes) else 1


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
