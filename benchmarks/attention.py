"""Speed of scratchformer's MultiHeadAttention against PyTorch's own, forward + backward.

Two comparisons, each against a reference measured in the same run:

- `explicit` (every step in plain tensor code) vs `torch.nn.MultiheadAttention`;
- `sdpa` (our module handing attention to `torch.nn.functional.scaled_dot_product_attention`)
  vs the bare kernel with the same four projections and nothing else.

The timings interleave the contestants round by round (rotating their order) and report each
one's fastest round, so that a shared, noisy machine slows all of them alike and the ratios stay
meaningful. On the CPU the clock is, by default, the process's CPU time with one torch thread:
it counts the work done, not the time spent waiting for the machine's other users (use
`--clock wall --threads N` for wall-clock time with N threads). On a GPU it is wall-clock time
between synchronizations.

    python benchmarks/attention.py                      # fp32 on CPU, B=16, T=256, d=256, 8 heads
    python benchmarks/attention.py --device cuda --dtype bfloat16 --seq-lens 256 1024
    python benchmarks/attention.py --json book/results/attention_benchmark_cpu.json   # also record it
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import device, non_negative_int, output_file, positive_int

DTYPE_NAMES = ("bfloat16", "float16", "float32")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: counts positive, `--heads` dividing `--d-model`, `--device`
    present, `--json` writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=device, default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--dtype", default="float32", choices=DTYPE_NAMES)
    parser.add_argument("--batch", type=positive_int, default=16)
    parser.add_argument("--seq-lens", type=positive_int, nargs="+", default=[256])
    parser.add_argument("--d-model", type=positive_int, default=256)
    parser.add_argument("--heads", type=positive_int, default=8)
    parser.add_argument("--masks", nargs="+", default=["none", "causal", "padding+causal"],
                        choices=["none", "causal", "padding", "padding+causal"])
    parser.add_argument("--rounds", type=positive_int, default=10)
    parser.add_argument("--warmup", type=non_negative_int, default=2)
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="torch threads (default: 1 on the CPU)")
    parser.add_argument("--clock", choices=["cpu", "wall"], default=None,
                        help="cpu: process CPU time (default on the CPU); wall: wall-clock time (default on a GPU)")
    parser.add_argument("--json", type=output_file, default=None, help="also write the table and its rows here")
    parser.add_argument("--allow-busy", action="store_true",
                        help="record the timings even if the machine was busy (marked so)")
    args = parser.parse_args(argv)
    if args.d_model % args.heads:
        parser.error(f"argument --heads: {args.heads} heads do not divide --d-model {args.d_model}")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import os
import platform
import shlex
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scratchformer.nn.attention import MultiHeadAttention, causal_mask, padding_mask
from scratchformer.runs.hardware import (MachineBusy, check_quiet, one_minute_load,
                                         timing_load)

from scratchbook.records import ATTENTION_BENCHMARK_CPU

DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}


class BareSDPA(nn.Module):
    """The least a multi-head layer can do: four projections around torch's attention kernel."""

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_model, d_model, bias=False)
        self.W_key = nn.Linear(d_model, d_model, bias=False)
        self.W_value = nn.Linear(d_model, d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor, attn_mask: Tensor | None, is_causal: bool) -> Tensor:
        B, T, C = x.shape
        q, k, v = (
            proj(x).view(B, T, self.num_heads, C // self.num_heads).transpose(1, 2)
            for proj in (self.W_query, self.W_key, self.W_value)
        )
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
        return self.out_proj(context.transpose(1, 2).reshape(B, T, C))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_rounds(
    steps: dict[str, Callable[[], None]], rounds: int, warmup: int, device: torch.device, clock: Callable[[], float]
) -> dict[str, float]:
    """Fastest seconds per call of each step, calling them in turn, round after round.

    The order rotates from round to round so that no step always follows the same one. The
    minimum is reported because on a shared machine other work only ever adds time.
    """
    for _ in range(warmup):
        for step in steps.values():
            step()
    synchronize(device)
    names = list(steps)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            synchronize(device)
            start = clock()
            steps[name]()
            synchronize(device)
            samples[name].append(clock() - start)
    return {name: min(times) for name, times in samples.items()}


def forward_backward(module: nn.Module, x: Tensor, call: Callable[[Tensor], Tensor]) -> Callable[[], None]:
    def step() -> None:
        module.zero_grad(set_to_none=True)
        x.grad = None
        call(x).float().square().mean().backward()

    return step


def main(args: argparse.Namespace, argv: list[str]) -> None:
    load_at_start = one_minute_load()

    device, dtype = torch.device(args.device), DTYPES[args.dtype]
    clock_name = args.clock or ("cpu" if device.type == "cpu" else "wall")
    clock = time.process_time if clock_name == "cpu" else time.perf_counter
    threads = args.threads if args.threads is not None else (1 if device.type == "cpu" else None)
    if threads is not None:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    B, C, H = args.batch, args.d_model, args.heads
    explicit = MultiHeadAttention(C, C, H, impl="explicit")
    ours_sdpa = MultiHeadAttention(C, C, H, impl="sdpa")
    reference = nn.MultiheadAttention(C, H, bias=True, batch_first=True)
    bare = BareSDPA(C, H)
    for module in (explicit, ours_sdpa, reference, bare):
        module.to(device=device, dtype=dtype).train()

    hardware = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads"
    )
    header = (
        f"torch {torch.__version__}, {device.type} ({hardware}), {args.dtype}, B={B}, d={C}, heads={H}, "
        f"forward+backward, {clock_name} time, best of {args.rounds} interleaved rounds"
    )
    table = [
        "| T | mask | explicit ms | nn.MultiheadAttention ms | ratio | sdpa ms | bare SDPA + projections ms | ratio |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    print(header, "", *table, sep="\n", flush=True)
    rows = []
    for T in args.seq_lens:
        x = torch.randn(B, T, C, device=device, dtype=dtype, requires_grad=True)
        ids = torch.ones(B, T, dtype=torch.long, device=device)
        ids[B // 2 :, 3 * T // 4 :] = 0  # half the batch ends in a quarter of padding
        for mask_name in args.masks:
            causal = "causal" in mask_name
            padded = "padding" in mask_name
            pad = padding_mask(ids, 0) if padded else None  # (B, 1, 1, T), True = real token
            explicit.causal = ours_sdpa.causal = causal
            # torch's conventions: True = may NOT attend, for both of these masks
            key_padding = (ids == 0) if padded else None
            future = ~causal_mask(T, device=device) if causal else None
            bare_mask = None
            if padded:
                bare_mask = pad & causal_mask(T, device=device) if causal else pad
            steps = {
                "explicit": forward_backward(explicit, x, lambda x: explicit(x, mask=pad)),
                "torch_mha": forward_backward(reference, x, lambda x: reference(
                    x, x, x, key_padding_mask=key_padding, attn_mask=future, is_causal=causal, need_weights=False)[0]),
                "sdpa": forward_backward(ours_sdpa, x, lambda x: ours_sdpa(x, mask=pad)),
                "bare": forward_backward(bare, x, lambda x: bare(x, bare_mask, causal and not padded)),
            }
            ms = {name: 1000 * seconds for name, seconds in time_rounds(steps, args.rounds, args.warmup, device, clock).items()}
            row = {
                "T": T, "mask": mask_name,
                "explicit_ms": ms["explicit"], "torch_mha_ms": ms["torch_mha"],
                "explicit_ratio": ms["explicit"] / ms["torch_mha"],
                "sdpa_ms": ms["sdpa"], "bare_sdpa_ms": ms["bare"], "sdpa_ratio": ms["sdpa"] / ms["bare"],
            }
            rows.append(row)
            table.append(
                f"| {T} | {mask_name} | {row['explicit_ms']:.1f} | {row['torch_mha_ms']:.1f} | "
                f"{row['explicit_ratio']:.2f}x | {row['sdpa_ms']:.1f} | {row['bare_sdpa_ms']:.1f} | "
                f"{row['sdpa_ratio']:.2f}x |"
            )
            print(table[-1], flush=True)
    print()
    print("Targets: explicit within 2x of nn.MultiheadAttention; sdpa within 1.1x of the bare kernel.")
    if args.json is not None:
        load = timing_load(load_at_start, one_minute_load(), own=(0, torch.get_num_threads()))
        try:
            check_quiet(load, args.allow_busy)
        except MachineBusy as err:
            raise SystemExit(f"{args.json} not written: {err}") from None
        command = "python benchmarks/attention.py " + shlex.join(argv)
        ATTENTION_BENCHMARK_CPU.write({
            "command": command.strip(),
            "hardware": header,
            "table": table,
            "rows": rows,
            "recorded": time.strftime("%Y-%m-%d"),
            "load": load,
        }, args.json)


if __name__ == "__main__":
    main(ARGUMENTS, sys.argv[1:])
