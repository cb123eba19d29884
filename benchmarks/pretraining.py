"""Throughput of chapter 13's pretraining step on this machine: masked language modelling
and ELECTRA, with windows of 128 and 256 tokens, at the same number of tokens per step.

Each setting trains the `cpu` pretraining preset's encoder (with ELECTRA's generator where
it applies) on random token windows for `--steps` timed steps after `--warmup` untimed ones,
in bf16 autocast on one CPU thread, as `scratchformer pretrain --threads 1` does. Prints a
table and each setting's speed relative to masked language modelling on 256-token windows,
measured in the same run.

    python benchmarks/pretraining.py --steps 20 --json book/results/pretraining_throughput.json

What this deliberately does not measure: GPUs, several threads, and how much a step of each
objective teaches (chapter 13 measures that by fine-tuning).
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import non_negative_int, output_file, positive_int


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: counts positive, `--json` writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=20)
    parser.add_argument("--warmup", type=non_negative_int, default=3)
    parser.add_argument("--json", type=output_file, help="also write the table to this file")
    parser.add_argument("--allow-busy", action="store_true",
                        help="record the timings even if the machine was busy (marked so)")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import time

import torch

from scratchformer.cli.pretrain import pretrain_preset
from scratchformer.data.framing import SpecialIds
from scratchformer.measure.evaluation import autocast
from scratchformer.models.pretraining import mask_tokens
from scratchformer.runs.folders import command_record
from scratchformer.runs.hardware import (MachineBusy, check_quiet, one_minute_load,
                                         return_freed_memory, timing_load)
from scratchformer.train.loop import make_optimizer
from scratchformer.train.pretrain import PretrainingLoss, build_pretrainer

from scratchbook.records import PRETRAINING_THROUGHPUT

TOKENS_PER_STEP = 8192


def seconds_per_step(objective: str, window: int, steps: int, warmup: int) -> float:
    config, settings = pretrain_preset("cpu")
    settings.objective = objective
    torch.manual_seed(0)
    model = build_pretrainer(config, settings)
    loss_of = PretrainingLoss(model)
    optimizer = make_optimizer(model, settings.lr, settings.weight_decay)
    vocab = config.vocab_size
    special, mask_id = SpecialIds(vocab - 4, vocab - 3, vocab - 2), vocab - 1
    generator = torch.Generator().manual_seed(0)
    batch = TOKENS_PER_STEP // window
    device = torch.device("cpu")
    for step in range(warmup + steps):
        if step == warmup:
            start = time.perf_counter()
        ids = torch.randint(vocab - 4, (batch, window), generator=generator)
        inputs, labels = mask_tokens(ids, mask_id=mask_id, vocab_size=vocab,
                                     special_ids=[*special, mask_id], generator=generator)
        with autocast(device, "bf16"):
            loss = loss_of(inputs, labels, generator)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return (time.perf_counter() - start) / steps


def main(args: argparse.Namespace, argv: list[str]) -> int:
    load_at_start = one_minute_load()
    torch.set_num_threads(1)
    return_freed_memory()
    rows = {(objective, window): seconds_per_step(objective, window, args.steps, args.warmup)
            for objective in ("mlm", "electra") for window in (256, 128)}
    reference = rows[("mlm", 256)]
    print(f"{'objective':>9} {'window':>6} {'batch':>5} {'ms/step':>8} {'tokens/s':>9} "
          f"{'speed vs mlm, 256':>18}")
    for (objective, window), seconds in rows.items():
        print(f"{objective:>9} {window:>6} {TOKENS_PER_STEP // window:>5} "
              f"{1000 * seconds:>8.0f} {TOKENS_PER_STEP / seconds:>9,.0f} "
              f"{reference / seconds:>17.2f}x")
    if args.json:
        load = timing_load(load_at_start, one_minute_load(), own=(0, 1))
        try:
            check_quiet(load, args.allow_busy)
        except MachineBusy as err:
            raise SystemExit(f"{args.json} not written: {err}") from None
        record = {**command_record(["python", "benchmarks/pretraining.py", *argv]), "load": load,
                  "rows": [{"objective": objective, "window": window,
                            "batch": TOKENS_PER_STEP // window, "seconds_per_step": seconds,
                            "tokens_per_second": TOKENS_PER_STEP / seconds,
                            "speed_vs_mlm_256": reference / seconds}
                           for (objective, window), seconds in rows.items()]}
        PRETRAINING_THROUGHPUT.write(record, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
