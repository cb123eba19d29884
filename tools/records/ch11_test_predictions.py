"""Per-review test predictions of one of chapter 11's whole-review classifiers, for paired
per-review tests: the kept weights (`best.pt`) of a `train-imdb` run folder or of a
`tools/records/ch11_taught.py` run, read on IMDB's 25,000 test reviews in windows, batched
exactly as the run's own test batched them (128 reviews, sorted by length), so that every
verdict is the one the run's recorded test accuracy counted; that accuracy is checked to
the last review before anything is written.

    python tools/records/ch11_test_predictions.py --run runs/rv/whole_seed0 \
        --data $IMDB_DIR --cache runs/cache --out runs/preds/whole_seed0.npz

`--out` (NumPy's .npz) holds `logits` `(N, 2)` float32, `labels` `(N,)`, and a JSON string
`about` (the run, the sha256 of its `best.pt`, the test split's fingerprint, the accuracy).
It stays under `runs/`: it holds nothing of IMDB's texts, but it is a run's output, not a
record.

With `--served` instead of `--run`, the served model, its weights read from its committed
ONNX file (`served_weights.py`: the token table as the box has it, float16), checked against
the page's recorded test accuracy.

What this deliberately does not handle: runs read with a cut (head+tail) rather than
windows, checkpoints without their run's record, and any split but test.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import existing_folder, existing_file, output_file_in_new_folder


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before torch is imported."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", type=Path,
                        help="a train-imdb run folder, or a ch11_taught.py run's .json")
    source.add_argument("--served", action="store_true",
                        help="the served model, its weights read from its ONNX file")
    parser.add_argument("--data", type=existing_folder, required=True)
    parser.add_argument("--cache", type=Path, required=True, help="the token cache")
    parser.add_argument("--out", type=output_file_in_new_folder, required=True,
                        help="the .npz to write")
    args = parser.parse_args(argv)
    if args.served:
        args.folder = None
    else:
        run_checks(parser, args)
    if args.out.suffix != ".npz":
        parser.error(f"--out {args.out}: name a .npz file")
    return args


def run_checks(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """`--run`: a run's .json or folder, with its best.pt."""
    try:
        if args.run.suffix == ".json":
            existing_file(str(args.run))
            args.folder = args.run.with_suffix("")
        else:
            args.folder = existing_folder(str(args.run))
    except argparse.ArgumentTypeError as err:
        parser.error(f"argument --run: {err}")
    if not (args.folder / "best.pt").is_file():
        parser.error(f"--run {args.run}: no best.pt in {args.folder}")


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported
    ARGUMENTS = parse()

import io
import json

import numpy as np
import torch

from scratchformer.data.batches import ReviewLoader, WindowedReviews
from scratchformer.data.imdb import load_imdb
from scratchformer.data.review_cache import review_tokens
from scratchformer.data.review_windows import review_windows
from scratchformer.io.files import write_atomically
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.evaluation import logits_of
from scratchformer.runs.checkpoint import load_checkpoint, read_checkpoint

from served_weights import FOLDER, served_model
from scratchbook.commands import tool_command

EVAL_BATCH = 128  # 4 x the runs' batch of 32, as both tools test


def recorded_test(args: argparse.Namespace) -> dict:
    """The run's recorded test (accuracy, examples), from its JSON or its results.json; for
    the served model, the page's manifest."""
    if args.served:
        manifest = json.loads((FOLDER / "manifest.json").read_text())
        return {"accuracy": manifest["test_accuracy"], "examples": 25_000}
    source = args.run if args.run.suffix == ".json" else args.folder / "results.json"
    run = json.loads(source.read_text())
    if run.get("test") is None:
        raise SystemExit(f"{source}: the run was not tested")
    return run["test"]


@torch.no_grad()
def test_logits(model: torch.nn.Module, loader: ReviewLoader) -> torch.Tensor:
    """Every test review's logits `(N, 2)`, in the split's order, batch by batch as
    `evaluate` reads the loader."""
    logits = torch.zeros(len(loader.labels), 2)
    for index, (ids, mask, _) in zip(loader.batch_indices(), loader):
        logits[index] = logits_of(model, ids, mask).float()
    return logits


def main(args: argparse.Namespace, argv: list[str]) -> int:
    torch.set_num_threads(1)
    if args.served:
        model, served = served_model()
        sha256, weights = served["checkpoint_sha256_served"], served["rebuilt"]
    else:
        checkpoint = args.folder / "best.pt"
        payload = read_checkpoint(checkpoint)
        if payload["truncation"] != "windows":
            raise SystemExit(f"{checkpoint}: trained with truncation "
                             f"{payload['truncation']!r}, not windows")
        model = load_checkpoint(checkpoint, torch.device("cpu")).eval()
        sha256, weights = file_sha256(checkpoint), "the checkpoint's"
    test = load_imdb(args.data, ["test"])["test"]
    windows = WindowedReviews.from_reviews(
        [review_windows(t.tolist(), model.config.max_len)
         for t in review_tokens(test, args.cache)])
    labels = torch.tensor(test.labels)
    loader = ReviewLoader(windows, labels, EVAL_BATCH, length_groups=1)
    logits = test_logits(model, loader)
    right = int((logits.argmax(1) == labels).sum())
    recorded = recorded_test(args)
    if right != round(recorded["accuracy"] * recorded["examples"]):
        raise SystemExit(f"{args.run or 'the served model'}: {right} test reviews right "
                         "here, the run recorded "
                         f"{recorded['accuracy']} of {recorded['examples']}")
    about = {**tool_command("ch11_test_predictions.py", argv),
             "run": str(args.run or "served"), "checkpoint_sha256": sha256,
             "weights": weights,
             "test_fingerprint": test.fingerprint(), "right": right,
             "accuracy": right / len(labels)}

    def write(handle: io.BufferedWriter) -> None:
        np.savez(handle, logits=logits.numpy(), labels=labels.numpy(),
                 about=np.array(json.dumps(about)))

    write_atomically(args.out, write)
    print(f"{args.out}: {right} of {len(labels)} right ({right / len(labels):.5f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
