"""What a float16 token table costs the exported classifier, on all 25,000 test reviews.

Exports a classifier run twice with `scratchformer.web.export.export_web`, its token table
as float32 and as float16, runs both with ONNX Runtime on every test review, and records
each file's size, each export's test accuracy, the largest differences between the two in
probability and in a token's contribution, and how many verdicts differ:

    python tools/records/appendix_web_precision.py --run runs/imdb_cpu --data $IMDB_DIR \
        --record book/results/web_classifier_precision.json

What this deliberately does not handle: GPT exports (their table is also the output layer)
and other quantizations than float16.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from script_arguments import existing_folder, output_file, run_folder


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: a train-imdb run, the data folder, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, type=run_folder("train-imdb"),
                        help="a train-imdb run folder")
    parser.add_argument("--data", required=True, type=existing_folder, help="the IMDB folder")
    parser.add_argument("--cache", type=Path, help="the token cache's folder")
    parser.add_argument("--record", required=True, type=output_file, help="JSON file to write")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before the imports below (seconds)
    ARGUMENTS = parse()

import json
import tempfile

import numpy as np
import onnxruntime as ort

from scratchformer.data.imdb import load_imdb
from scratchformer.data.review_cache import encode_reviews
from scratchformer.io.files import write_atomically
from scratchformer.web.export import export_web

from shown_command import tool_command


def outputs(model: Path, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities `(N, 2)` and contributions `(N, T)` of the ONNX model on `ids`."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    parts = [session.run(["probabilities", "contributions"], {"ids": ids[i : i + 256]})
             for i in range(0, len(ids), 256)]
    return np.concatenate([p for p, _ in parts]), np.concatenate([c for _, c in parts])


def main(args: argparse.Namespace, argv: list[str]) -> int:
    test = load_imdb(args.data, ["test"])["test"]
    labels = np.array(test.labels)
    exports, ids = {}, None
    with tempfile.TemporaryDirectory() as work:
        for name, half in (("float32", False), ("float16", True)):
            manifest = export_web(args.run, Path(work) / name, float16_tokens=half)
            if ids is None:  # both exports frame reviews as the checkpoint was trained
                tokenizer = json.loads((Path(work) / name / "tokenizer.json").read_text())
                framing = tokenizer["framing"]
                ids = encode_reviews(test, framing["max_len"], framing["truncation"],
                                     args.cache)[0].numpy()
            probabilities, contributions = outputs(Path(work) / name / "model.onnx", ids)
            exports[name] = {"manifest": manifest, "probabilities": probabilities,
                             "contributions": contributions}
            print(name, manifest["files"]["model.onnx"]["bytes"],
                  (probabilities.argmax(1) == labels).mean(), flush=True)
    full, half = exports["float32"], exports["float16"]
    record = {
        **tool_command("appendix_web_precision.py", argv, str(args.record)),
        "checkpoint": full["manifest"]["checkpoint"],
        "run_command": full["manifest"].get("command"),
        "test_reviews": len(labels),
        "exports": {name: {"model_bytes": e["manifest"]["files"]["model.onnx"]["bytes"],
                           "test_accuracy": float((e["probabilities"].argmax(1)
                                                   == labels).mean())}
                    for name, e in exports.items()},
        "largest_probability_difference": float(
            np.abs(full["probabilities"] - half["probabilities"]).max()),
        "largest_contribution_difference": float(
            np.abs(full["contributions"] - half["contributions"]).max()),
        "verdicts_that_differ": int((full["probabilities"].argmax(1)
                                     != half["probabilities"].argmax(1)).sum()),
    }
    text = json.dumps(record, indent=1)
    write_atomically(args.record, lambda file: file.write(text.encode()))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
