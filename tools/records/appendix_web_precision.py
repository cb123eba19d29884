"""What a float16 token table costs the exported classifier, on all 25,000 test reviews.

Exports a classifier run twice with `scratchformer.web.export.export_web`, its token table
as float32 and as float16, runs both with ONNX Runtime on every test review (framed as the
checkpoint was trained: cut, or read whole in windows as the page reads it), and records
each file's size, each export's test accuracy, the largest differences between the two in
probability and in a token's contribution, and how many verdicts differ:

    python tools/records/appendix_web_precision.py --run runs/imdb_cpu --data $IMDB_DIR \
        --record book/results/web_classifier_precision.json

`--run` may also name a checkpoint file, such as the `best.pt` of a run of
`tools/records/ch11_taught.py`.

What this deliberately does not handle: GPT exports (their table is also the output layer)
and other quantizations than float16.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import checkpoint, existing_folder, output_file


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: a train-imdb run or a checkpoint, the data folder,
    `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, type=checkpoint("train-imdb"),
                        help="a train-imdb run folder, or a classifier's checkpoint file "
                             "(the results.json beside it gives the command and score)")
    parser.add_argument("--data", required=True, type=existing_folder, help="the IMDB folder")
    parser.add_argument("--cache", type=Path, help="the token cache's folder")
    parser.add_argument("--record", required=True, type=output_file, help="JSON file to write")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before the imports below (seconds)
    ARGUMENTS = parse()

import json
import tempfile

import numpy as np

from scratchformer.data.imdb import load_imdb
from scratchformer.data.review_cache import review_tokens
from scratchformer.web.export import export_web

from scratchbook.records import WEB_CLASSIFIER_PRECISION

from onnx_reviews import one_thread_session, onnx_reviews
from scratchbook.commands import tool_command


def main(args: argparse.Namespace, argv: list[str]) -> int:
    test = load_imdb(args.data, ["test"])["test"]
    labels = np.array(test.labels)
    tokens = [review.tolist() for review in review_tokens(test, args.cache)]
    exports = {}
    with tempfile.TemporaryDirectory() as work:
        for name, half in (("float32", False), ("float16", True)):
            manifest = export_web(args.run, Path(work) / name, float16_tokens=half)
            # each export frames reviews as the checkpoint was trained: a cut, or windows
            record = json.loads((Path(work) / name / "tokenizer.json").read_text())
            framing = record["framing"]
            positive, contributions = onnx_reviews(
                one_thread_session(Path(work) / name / "model.onnx"), tokens, framing)
            exports[name] = {"manifest": manifest, "positive": positive,
                             "contributions": contributions,
                             "truncation": framing["truncation"]}
            print(name, manifest["files"]["model.onnx"]["bytes"],
                  ((positive > 0.5) == labels).mean(), flush=True)
    full, half = exports["float32"], exports["float16"]
    record = {
        **tool_command("appendix_web_precision.py", argv, str(args.record)),
        "checkpoint": full["manifest"]["checkpoint"],
        "run_command": full["manifest"].get("command"),
        "test_reviews": len(labels),
        "truncation": full["truncation"],
        "exports": {name: {"model_bytes": e["manifest"]["files"]["model.onnx"]["bytes"],
                           "test_accuracy": float(((e["positive"] > 0.5) == labels).mean())}
                    for name, e in exports.items()},
        "largest_probability_difference": float(
            np.abs(full["positive"] - half["positive"]).max()),
        "largest_contribution_difference": float(max(
            np.abs(a - b).max() for a, b in zip(full["contributions"],
                                                half["contributions"]))),
        "verdicts_that_differ": int(((full["positive"] > 0.5)
                                     != (half["positive"] > 0.5)).sum()),
    }
    print(WEB_CLASSIFIER_PRECISION.write(record, args.record).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
