"""Resident memory of a CPU training run of chapter 12's GPT, with and without
`scratchformer.hardware.return_freed_memory` (glibc's mmap threshold fixed at 64 KiB).

Each setting runs in its own process: the `cpu` preset's model on random token windows, a
schedule of `--steps` steps whose warm-up is 5% of them, sampling the resident set size every
`--every` steps. Prints a table and the ratio of the final sizes.

    python benchmarks/cpu_memory.py --steps 400

What this deliberately does not measure: GPU memory, and anything but glibc on Linux.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import json, sys, torch
from dataclasses import replace
from scratchformer.gpt import GPTModel
from scratchformer.gpt_data import TokenWindows
from scratchformer.gpt_train import gpt_preset, train_gpt
from scratchformer.hardware import return_freed_memory
import scratchformer.gpt_train as gpt_train

steps, every, fixed = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
if fixed:
    assert return_freed_memory(), "not glibc: nothing to compare"
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
        samples.append((step, pages * 4096 / 2**20))
    return original(step, total, warmup)


gpt_train.lr_multiplier = sampling_multiplier
train_gpt(GPTModel(model_config), windows, [windows.windows(torch.arange(4))], train_config,
          progress=False, log=lambda message: None)
print(json.dumps(samples))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--every", type=int, default=50)
    args = parser.parse_args()
    runs = {}
    for fixed in (False, True):
        out = subprocess.run([sys.executable, "-c", CHILD, str(args.steps), str(args.every),
                              "1" if fixed else "0"], capture_output=True, text=True, check=True)
        runs[fixed] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{'step':>6} {'glibc default (MB)':>20} {'mmap threshold 64 KiB (MB)':>28}")
    for (step, plain), (_, fixed) in zip(runs[False], runs[True]):
        print(f"{step:>6} {plain:>20,.0f} {fixed:>28,.0f}")
    last_plain, last_fixed = runs[False][-1][1], runs[True][-1][1]
    print(f"final resident size, default / fixed: {last_plain / last_fixed:.1f}x "
          f"(warm-up ends at step {round(0.05 * args.steps)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
