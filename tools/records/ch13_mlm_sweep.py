"""Chapter 13's masked-language-model sweep: which recipe leaves the plateau of no context.

Each run is `scratchformer pretrain --config cpu --set steps=2000` with one recipe change
(learning rate, dropout, masking rate); every snapshot is judged by its loss on the same
held-out windows at the positions that show `[MASK]` (masked 15% with 80/10/10 for every
run, so the numbers compare), next to token frequencies alone at the same positions.

    python tools/records/ch13_mlm_sweep.py --runs runs/sweep --record book/results/pretrain_sweep_cpu.json

What this deliberately does not handle: ELECTRA runs, and runs that differ in tokenizer or
held-out windows (each run's own `val.npy` is read; the recipes here share them).
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import existing_folder, output_file, pretrain_objective


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: a folder holding masked-LM pretrain runs, `--record`
    writable. `args.sweep` lists the runs' folders."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", required=True, type=existing_folder, help="one sub-folder per run")
    parser.add_argument("--record", required=True, type=output_file, help="JSON file to write")
    args = parser.parse_args(argv)
    args.sweep = [folder for folder in sorted(p for p in args.runs.iterdir() if p.is_dir())
                  if pretrain_objective(folder) == "mlm"]
    if not args.sweep:
        parser.error(f"argument --runs: {args.runs} holds no finished masked-LM pretrain run "
                     "(one sub-folder with its results.json per run)")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import json

from scratchformer.tokenize.bpe import BPETokenizer

from scratchbook.records import PRETRAIN_SWEEP_CPU

from ch13_record_pretraining import loss_by_position  # a sibling tool
from scratchbook.commands import tool_command


def main(args: argparse.Namespace, argv: list[str]) -> int:
    runs = {}
    for folder in args.sweep:
        results = json.loads((folder / "results.json").read_text())
        tokenizer = BPETokenizer.load(folder / "tokenizer.json")
        runs[folder.name] = {
            "command": results["command"],
            "settings": results["settings"],
            "model_config": results["model_config"],
            "seconds": results["seconds"],
            "history": results["history"],
            "loss_by_position": loss_by_position(folder, tokenizer,
                                                 window=results["settings"]["window"]),
        }
        print(folder.name, json.dumps(runs[folder.name]["loss_by_position"]), flush=True)
    PRETRAIN_SWEEP_CPU.write({**tool_command("ch13_mlm_sweep.py", argv, str(args.record)),
                              "runs": runs}, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
