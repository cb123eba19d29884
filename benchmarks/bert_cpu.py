"""Speed of one training step of chapter 10's `cpu` preset model: precision and threads.

One step is what `scratchformer.train.engine.train` does per batch: forward under autocast (or not),
cross-entropy, backward, gradient clipping and a fused AdamW update, on a batch of 64 reviews of
256 tokens, a third of them ending in padding. Variants, each against the reference measured in
the same run (float32 with one torch thread):

- `bf16`: autocast to bfloat16 (the preset's setting);
- two torch threads, in float32 and in bf16.

The variants run in turn, round after round, with the order rotating, and each reports its
fastest round, so a shared, noisy machine slows all of them alike. The clock is wall time: the
question is how long training takes, and a second thread only helps if it shortens that.

    python benchmarks/bert_cpu.py
    python benchmarks/bert_cpu.py --json book/results/bert_step_benchmark_cpu.json   # also record it
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import non_negative_int, output_file, positive_int, refuse


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: counts positive, `--json` writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=positive_int, default=64)
    parser.add_argument("--seq-len", type=positive_int, default=256)
    parser.add_argument("--rounds", type=positive_int, default=8)
    parser.add_argument("--warmup", type=non_negative_int, default=2)
    parser.add_argument("--json", type=output_file, default=None, help="also write the table and its rows here")
    parser.add_argument("--allow-busy", action="store_true",
                        help="record the timings even if the machine was busy (marked so)")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import os
import shlex
import time

import torch
import torch.nn.functional as F

from scratchformer.data.framing import PAD_ID
from scratchformer.measure.evaluation import autocast
from scratchformer.models.bert import BertForSequenceClassification
from scratchformer.runs.hardware import (MachineBusy, check_quiet, hardware_info,
                                         one_minute_load, timing_load)
from scratchformer.train.loop import make_optimizer
from scratchformer.train.presets import preset

from scratchbook.records import BERT_STEP_BENCHMARK_CPU


def main(args: argparse.Namespace, argv: list[str]) -> None:
    load_at_start = one_minute_load()

    torch.manual_seed(0)
    model_config, train_config = preset("cpu")
    if args.seq_len > model_config.max_len:
        refuse(f"argument --seq-len: {args.seq_len} is beyond the cpu preset's {model_config.max_len} positions")
    model = BertForSequenceClassification(model_config).train()
    optimizer = make_optimizer(model, train_config.lr, train_config.weight_decay)
    device = torch.device("cpu")
    ids = torch.randint(0, PAD_ID, (args.batch, args.seq_len))
    ids[::3, args.seq_len // 2 :] = PAD_ID  # every third review ends halfway
    mask = ids != PAD_ID
    labels = torch.randint(0, 2, (args.batch,))

    def step(precision: str, threads: int) -> float:
        torch.set_num_threads(threads)
        start = time.perf_counter()
        with autocast(device, precision):
            logits = model(ids, mask)
        loss = F.cross_entropy(logits.float(), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), train_config.grad_clip)
        optimizer.step()
        return time.perf_counter() - start

    variants = [("fp32", 1), ("bf16", 1), ("fp32", 2), ("bf16", 2)]
    for _ in range(args.warmup):
        for variant in variants:
            step(*variant)
    samples: dict[tuple[str, int], list[float]] = {variant: [] for variant in variants}
    for round_index in range(args.rounds):
        shift = round_index % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            samples[variant].append(step(*variant))
    best = {variant: 1000 * min(times) for variant, times in samples.items()}
    reference = best[("fp32", 1)]
    hardware = hardware_info(device)
    header = (
        f"torch {torch.__version__}, {hardware['cpu']}, {os.cpu_count()} CPUs, "
        f"cpu preset (d_model {model_config.d_model}, {model_config.num_layers} block), B={args.batch}, "
        f"T={args.seq_len}, forward+backward+AdamW, wall time, best of {args.rounds} interleaved rounds"
    )
    table = ["| precision | torch threads | ms per step | vs fp32, 1 thread |", "| --- | ---: | ---: | ---: |"]
    rows = []
    for (precision, threads), ms in best.items():
        rows.append({"precision": precision, "threads": threads, "ms_per_step": ms, "ratio": ms / reference})
        table.append(f"| {precision} | {threads} | {ms:.0f} | {ms / reference:.2f}x |")
    print(header, "", *table, sep="\n")
    if args.json is not None:
        load = timing_load(load_at_start, one_minute_load(), own=(0, max(r['threads'] for r in rows)))
        try:
            check_quiet(load, args.allow_busy)
        except MachineBusy as err:
            raise SystemExit(f"{args.json} not written: {err}") from None
        record = {
            "command": shlex.join(["python", "benchmarks/bert_cpu.py", *argv]),
            "hardware": {"cpu": hardware["cpu"], "logical_cpus": hardware["logical_cpus"]},
            "torch": torch.__version__,
            "load": load,
            "header": header,
            "table": "\n".join(table),
            "rows": rows,
        }
        BERT_STEP_BENCHMARK_CPU.write(record, args.json)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main(ARGUMENTS, sys.argv[1:])
