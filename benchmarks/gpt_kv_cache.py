"""Speed of generation with and without chapter 11's key/value cache.

`scratchformer.models.gpt.generate` writes greedy continuations of a one-token prompt (`<|endoftext|>`)
with `use_cache=True` and with `use_cache=False`, for 64, 256 and as many new tokens as the
context holds (lengths beyond the context are skipped), one sequence at a time. The reference
for each length is the uncached loop, measured in the same run; the ratio is cached tokens per
second over uncached. Both loops must write the same tokens, or the benchmark stops.

The model is a run's best checkpoint (`--checkpoint`), or else a freshly initialised model of
the `cpu` preset's sizes: the time a step takes does not depend on what the weights have
learned. The variants run in turn, round after round, and each reports its fastest round, so a
shared, noisy machine slows all of them alike; one torch thread, wall time.

    python benchmarks/gpt_kv_cache.py
    python benchmarks/gpt_kv_cache.py --checkpoint runs/gpt_cpu --json book/results/gpt_kv_cache.json
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import checkpoint, output_file, positive_int, refuse

LENGTHS = (64, 256)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: a train-gpt run or checkpoint, counts positive, `--json`
    writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=checkpoint("train-gpt"),
                        help="a train-gpt run's folder or checkpoint (default: a fresh model of "
                             "the cpu preset's sizes)")
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--lengths", type=positive_int, nargs="+", default=None,
                        help="new tokens to time (default: 64, 256 and a full context)")
    parser.add_argument("--json", type=output_file, default=None, help="also write the table and rows here")
    parser.add_argument("--allow-busy", action="store_true",
                        help="record the timings even if the machine was busy (marked so)")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import os
import time

import torch

from scratchformer.models.gpt import GPTModel, generate
from scratchformer.runs.folders import command_record
from scratchformer.runs.hardware import (MachineBusy, check_quiet, hardware_info,
                                         one_minute_load, timing_load)
from scratchformer.train.gpt import gpt_preset, load_gpt

from scratchbook.records import GPT_KV_CACHE


def main(args: argparse.Namespace, argv: list[str]) -> None:
    load_at_start = one_minute_load()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.checkpoint:
        try:
            model = load_gpt(args.checkpoint)
        except ValueError as err:  # a file that is not a GPT checkpoint
            refuse(f"argument --checkpoint: {err}")
    else:
        model = GPTModel(gpt_preset("cpu")[0]).eval()
    config = model.config
    prompt = torch.tensor([[config.vocab_size - 3]])  # <|endoftext|>, the first special token
    full = config.context_length - prompt.shape[1]
    beyond = [n for n in args.lengths or () if n > full]
    if beyond:
        refuse(f"argument --lengths: {beyond[0]} new tokens do not fit the context of "
               f"{config.context_length} after a one-token prompt (at most {full})")
    wanted = set(args.lengths) if args.lengths else {*LENGTHS, full}
    lengths = sorted(n for n in wanted if n <= full)

    def run(new_tokens: int, use_cache: bool) -> tuple[float, torch.Tensor]:
        start = time.perf_counter()
        written = generate(model, prompt, new_tokens, temperature=0, use_cache=use_cache)
        return time.perf_counter() - start, written

    variants = [(n, cached) for n in lengths for cached in (False, True)]
    samples: dict[tuple[int, bool], list[float]] = {variant: [] for variant in variants}
    outputs: dict[tuple[int, bool], torch.Tensor] = {}
    run(8, True), run(8, False)  # warm-up
    for round_index in range(args.rounds):
        shift = round_index % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            seconds, outputs[variant] = run(*variant)
            samples[variant].append(seconds)
    for n in lengths:
        if not torch.equal(outputs[n, True], outputs[n, False]):
            raise SystemExit(f"cached and uncached greedy generation differ at {n} new tokens")
    best = {variant: min(times) for variant, times in samples.items()}
    hardware = hardware_info(torch.device("cpu"))
    header = (
        f"torch {torch.__version__}, {hardware['cpu']}, {os.cpu_count()} CPUs, {args.threads} torch "
        f"thread(s); GPT d_model {config.d_model}, {config.num_layers} blocks, context "
        f"{config.context_length}, vocabulary {config.vocab_size}; greedy, batch 1; wall time, best of "
        f"{args.rounds} interleaved rounds" 
    )
    table = ["| new tokens | uncached: s | uncached: tokens/s | cached: s | cached: tokens/s "
             "| speed-up (cached ÷ uncached) |", "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    rows = []
    for n in lengths:
        plain, cached = best[n, False], best[n, True]
        rows.append({"new_tokens": n, "uncached_seconds": plain, "cached_seconds": cached,
                     "uncached_tokens_per_second": n / plain, "cached_tokens_per_second": n / cached,
                     "ratio": plain / cached})
        table.append(f"| {n} | {plain:.2f} | {n / plain:,.0f} | {cached:.2f} | {n / cached:,.0f} "
                     f"| {plain / cached:.1f}x |")
    print(header, "", *table, sep="\n")
    if args.json is not None:
        load = timing_load(load_at_start, one_minute_load(), own=(0, args.threads))
        try:
            check_quiet(load, args.allow_busy)
        except MachineBusy as err:
            raise SystemExit(f"{args.json} not written: {err}") from None
        record = {
            **command_record(["python", "benchmarks/gpt_kv_cache.py", *argv]),
            "hardware": {"cpu": hardware["cpu"], "logical_cpus": hardware["logical_cpus"]},
            "torch": torch.__version__,
            "load": load,
            "model_config": {"d_model": config.d_model, "num_layers": config.num_layers,
                             "num_heads": config.num_heads, "context_length": config.context_length,
                             "vocab_size": config.vocab_size},
            "header": header,
            "table": "\n".join(table),
            "rows": rows,
        }
        GPT_KV_CACHE.write(record, args.json)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main(ARGUMENTS, sys.argv[1:])
