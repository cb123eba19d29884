"""Chapter 13's ELECTRA run, its two losses apart: at each snapshot, on held-out windows,
the generator's loss at the chosen positions and the discriminator's replaced-token loss,
each next to what knowing no context buys (token frequencies; always answering the share
of replaced tokens).

    python tools/records/ch13_electra_losses.py --run runs/electra \\
        --record book/results/pretrain_electra_losses_cpu.json

The windows are masked as `tools/records/ch13_record_pretraining.py` masks them for the masked
language model, so the generator's numbers compare with its. What this deliberately does
not handle: masked-LM runs (that tool reads those).
"""

from __future__ import annotations

import argparse
import json
import sys

from scratchbook.arguments import output_file, pretrain_objective, run_folder


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: an ELECTRA pretrain run, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, type=run_folder("pretrain", ("tokenizer.json",)),
                        help="a pretrain run folder")
    parser.add_argument("--record", required=True, type=output_file, help="JSON file to write")
    args = parser.parse_args(argv)
    objective = pretrain_objective(args.run)
    if objective != "electra":
        parser.error(f"argument --run: {args.run} is a {objective} run, not an ELECTRA run")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import math
from pathlib import Path

import torch

from scratchformer.models.bert import BertConfig
from scratchformer.models.pretraining import IGNORED
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.pretrain import (PretrainConfig, build_pretrainer,
                                          read_pretraining)

from scratchbook.records import PRETRAIN_ELECTRA_LOSSES_CPU

from ch13_record_pretraining import held_out_masked, snapshot_seconds  # a sibling tool
from scratchbook.commands import tool_command


@torch.no_grad()
def snapshot_losses(snapshot: Path, masked: list[tuple[torch.Tensor, ...]]) -> dict:
    """Mean generator loss, replaced-token loss and replaced share of one snapshot, with
    the generator's samples drawn from seed 0 (the same draws at every snapshot)."""
    payload = read_pretraining(snapshot)
    model = build_pretrainer(BertConfig(**payload["config"]),
                             PretrainConfig(**payload["settings"]))
    model.load_state_dict(payload["model"])
    model.eval()
    sampler = torch.Generator().manual_seed(0)
    parts = torch.tensor([model.loss_parts(inputs, labels, sampler) for inputs, labels, _
                          in masked], dtype=torch.float64)  # (batches, 3)
    generator_loss, rtd_loss, replaced_share = parts.mean(dim=0).tolist()
    return {"generator": generator_loss, "replaced_token": rtd_loss,
            "replaced_share": replaced_share,
            "always_the_share": -(replaced_share * math.log(replaced_share)
                                  + (1 - replaced_share) * math.log(1 - replaced_share))}


def main(args: argparse.Namespace, argv: list[str]) -> int:
    results = json.loads((args.run / "results.json").read_text())
    tokenizer = BPETokenizer.load(args.run / "tokenizer.json")
    masked, unigram = held_out_masked(args.run, tokenizer,
                                      window=results["settings"]["window"])
    chosen = torch.cat([labels[labels != IGNORED] for _, labels, _ in masked])
    snapshots = {}
    for path in sorted(args.run.glob("snapshot-*.pt")):
        step = read_pretraining(path)["training"]["step"]
        snapshots[str(step)] = snapshot_losses(path, masked)
        print(step, json.dumps(snapshots[str(step)]), flush=True)
    record = {**tool_command("ch13_electra_losses.py", argv, str(args.record)),
              "run": {key: results[key] for key in (
                  "command", "command_as_run", "model_config", "settings", "parameters",
                  "hardware", "seconds", "history")},
              "snapshot_seconds": {str(step): seconds for step, seconds
                                   in snapshot_seconds(args.run).items()},
              "frequencies_at_chosen": float(-unigram[chosen].mean()),
              "snapshots": snapshots}
    PRETRAIN_ELECTRA_LOSSES_CPU.write(record, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
