"""Resident memory and speed of a CPU training run of chapter 12's GPT under three glibc
allocator settings: its default (a threshold for `mmap` that rises as blocks are freed), the
threshold fixed at 64 KiB, and fixed at 16 MiB (`scratchformer.runs.hardware.return_freed_memory`'s
default).

Each setting runs in its own process: the `cpu` preset's model on random token windows, a
schedule of `--steps` steps whose warm-up is 5% of them, sampling the resident set size every
`--every` steps and timing the steps after the first `--every`. Prints a table and the ratios
to the default, and with `--json` writes them for the appendix "Running it for real".

    python benchmarks/cpu_memory.py --steps 400 --json book/results/cpu_memory.json

What this deliberately does not measure: GPU memory, and anything but glibc on Linux.
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import output_file, positive_int


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: counts positive, enough steps to time, `--json` writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=400)
    parser.add_argument("--every", type=positive_int, default=50)
    parser.add_argument("--json", type=output_file, help="also write the results to this file")
    parser.add_argument("--allow-busy", action="store_true",
                        help="record the timings even if the machine was busy (marked so)")
    args = parser.parse_args(argv)
    if args.steps <= 2 * args.every:  # the timing runs from the second sample to the last
        parser.error(f"argument --steps: {args.steps} steps give fewer than three samples "
                     f"{args.every} steps apart; use more than {2 * args.every}")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import json
import subprocess

from scratchformer.runs.folders import command_record
from scratchformer.runs.hardware import (MachineBusy, check_quiet, one_minute_load,
                                         timing_load)

from scratchbook.records import CPU_MEMORY

CHILD = """
import json, sys, time, torch
from dataclasses import replace
from scratchformer.data.token_windows import TokenWindows
from scratchformer.models.gpt import GPTModel
from scratchformer.runs.hardware import return_freed_memory
from scratchformer.train.gpt import gpt_preset, train_gpt
import scratchformer.train.gpt as gpt_train

steps, every, threshold = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if threshold:
    assert return_freed_memory(threshold), "not glibc: nothing to compare"
torch.set_num_threads(1)
torch.manual_seed(0)
model_config, train_config = gpt_preset("cpu")
train_config = replace(train_config, steps=steps, evals=1)
stream = torch.randint(0, model_config.vocab_size, (2_000_000,), dtype=torch.int32)
windows = TokenWindows(stream, model_config.context_length, train_config.batch_size)
samples = []
original = gpt_train.lr_multiplier


def sampling_multiplier(step, total, warmup):
    if step % every == 0 and (not samples or samples[-1][0] != step):  # once per step
        pages = int(open("/proc/self/statm").read().split()[1])
        samples.append((step, pages * 4096 / 2**20, time.perf_counter()))
    return original(step, total, warmup)


gpt_train.lr_multiplier = sampling_multiplier
train_gpt(GPTModel(model_config), windows, [windows.windows(torch.arange(4))], train_config,
          progress=False, log=lambda message: None)
print(json.dumps(samples))
"""


SETTINGS = {"glibc default": 0, "fixed at 64 KiB": 64 * 1024, "fixed at 16 MiB": 16 << 20}


def main(args: argparse.Namespace, argv: list[str]) -> int:
    load_at_start = one_minute_load()
    runs = {}
    for name, threshold in SETTINGS.items():
        out = subprocess.run([sys.executable, "-c", CHILD, str(args.steps), str(args.every),
                              str(threshold)], capture_output=True, text=True, check=True)
        runs[name] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{'step':>6}" + "".join(f"{name + ' (MB)':>24}" for name in SETTINGS))
    for rows in zip(*runs.values()):
        print(f"{rows[0][0]:>6}" + "".join(f"{row[1]:>24,.0f}" for row in rows))
    summary = {}
    for name, samples in runs.items():
        (first_step, _, first_time), (last_step, last_mb, last_time) = samples[1], samples[-1]
        summary[name] = {"final_mb": last_mb, "seconds_per_step":
                         (last_time - first_time) / (last_step - first_step)}
    default = summary["glibc default"]
    print(f"{'setting':>18} {'final MB':>10} {'s/step':>8} {'memory vs default':>18} "
          f"{'time vs default':>16}")
    for name, row in summary.items():
        print(f"{name:>18} {row['final_mb']:>10,.0f} {row['seconds_per_step']:>8.3f} "
              f"{row['final_mb'] / default['final_mb']:>17.3f}x "
              f"{row['seconds_per_step'] / default['seconds_per_step']:>15.2f}x")
    print(f"(warm-up ends at step {round(0.05 * args.steps)})")
    if args.json:
        load = timing_load(load_at_start, one_minute_load(), own=(0, 1))
        try:
            check_quiet(load, args.allow_busy)
        except MachineBusy as err:
            raise SystemExit(f"{args.json} not written: {err}") from None
        record = {**command_record(["python", "benchmarks/cpu_memory.py", *argv]),
                  "steps": args.steps, "load": load,
                  "samples": {name: [row[:2] for row in rows] for name, rows in runs.items()},
                  "summary": summary}
        CPU_MEMORY.write(record, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
