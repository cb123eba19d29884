"""Record what a trained IMDB classifier says, token by token, for chapter 11.

For a few hand-picked reviews and for the test reviews the model gets most confidently
wrong, write each prediction with every token's exact contribution to the logit gap
(`scratchformer.measure.evaluation.token_contributions`) into a JSON file the chapter reads:

    python tools/records/ch11_record_predictions.py --checkpoint runs/imdb_cpu --data ../shared/data/imdb \
        --record book/results/imdb_cpu_predictions.json

What this deliberately does not handle: models without mean pooling (the decomposition is
exact only for them) and more than two classes.
"""

from __future__ import annotations

import argparse
import sys

from scratchbook.arguments import checkpoint, existing_folder, output_file, positive_int, refuse


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: a train-imdb run or checkpoint, the data folder, a positive
    count of errors, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, type=checkpoint("train-imdb"),
                        help="a train-imdb run folder or a .pt file")
    parser.add_argument("--data", type=existing_folder, default=None,
                        help="IMDB folder (default: $IMDB_DIR)")
    parser.add_argument("--record", type=output_file, required=True, help="JSON file to write")
    parser.add_argument("--errors", type=positive_int, default=6,
                        help="test errors to record, the most confident first")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported (seconds)
    ARGUMENTS = parse()

import json

import torch

from scratchformer.data.framing import (CLS_ID, PAD_ID, SEP_ID, encode_review,
                                        review_encoding)
from scratchformer.data.imdb import LABEL_NAMES, load_imdb
from scratchformer.data.review_cache import encode_reviews
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.evaluation import token_contributions
from scratchformer.runs.checkpoint import load_checkpoint, read_checkpoint

from scratchbook.records import IMDB_CPU_PREDICTIONS
from scratchbook.commands import tool_command

REVIEWS = [
    "Bromwell High is a brilliantly conceived, executed and acted, but sadly overlooked sitcom. "
    "The writing is razor sharp, the characters are well drawn and the jokes are genuinely "
    "funny. The animation is also excellent, with a style that suits the material perfectly. "
    "It's a shame that it didn't get a proper chance in the UK, as it deserves to be up there "
    "with the likes of The Simpsons and South Park. Highly recommended for anyone who likes "
    "clever, witty humour.",
    "In fact I must confess, so bad was it I fast forwarded through most of the garbage... As "
    "for the title characters, they barely even have a footnote in the film.",
    "Not bad at all.",
    "I expected to hate it, but it won me over by the end.",
    "The acting was wooden and the plot made no sense, yet I could not stop smiling.",
    "A masterpiece of boredom.",
    "If you like watching paint dry, this is the film for you.",
    "One of the best films I have seen this year.",
]
SPECIAL_NAMES = {PAD_ID: "[PAD]", CLS_ID: "[CLS]", SEP_ID: "[SEP]"}


def explain(model: torch.nn.Module, ids: torch.Tensor) -> list[dict]:
    """Prediction, probabilities, tokens and contributions of each row of `ids` `(B, T)`."""
    with torch.no_grad():
        probabilities = torch.softmax(model(ids).float(), dim=-1)  # (B, 2)
    shares = token_contributions(model, ids)  # (B, T)
    rows = []
    for row, p, share in zip(ids.tolist(), probabilities.tolist(), shares.tolist()):
        real = [(i, s) for i, s in zip(row, share) if i != PAD_ID]
        rows.append({
            "label": LABEL_NAMES[max(range(2), key=p.__getitem__)],
            "probabilities": dict(zip(LABEL_NAMES, p)),
            "tokens": [SPECIAL_NAMES.get(i) or review_encoding().decode([i]) for i, _ in real],
            "contributions": [s for _, s in real],
        })
    return rows


def main(args: argparse.Namespace, argv: list[str]) -> int:
    path = args.checkpoint / "best.pt" if args.checkpoint.is_dir() else args.checkpoint
    try:
        truncation = read_checkpoint(path)["truncation"]
    except ValueError as err:  # a file that is not a classifier's checkpoint
        refuse(f"argument --checkpoint: {err}")
    model = load_checkpoint(path)
    run_results = path.parent / "results.json"  # the run beside the checkpoint, if any
    run_command = (json.loads(run_results.read_text(encoding="utf-8"))["command"]
                   if run_results.is_file() else None)
    max_len = model.config.max_len

    hand_picked = torch.tensor([encode_review(t, max_len, truncation) for t in REVIEWS])
    predictions = [{"text": text, **row} for text, row in zip(REVIEWS, explain(model, hand_picked))]

    test = load_imdb(args.data)["test"]
    ids, labels = encode_reviews(test, max_len, truncation)
    losses = []
    with torch.no_grad():
        for start in range(0, len(labels), 256):
            logits = model(ids[start : start + 256]).float()
            losses.append(torch.nn.functional.cross_entropy(
                logits, labels[start : start + 256], reduction="none"))
    loss = torch.cat(losses)  # (N,)
    wrong = loss > torch.log(torch.tensor(2.0))  # the true label's probability is below 1/2
    worst = [i for i in torch.argsort(loss, descending=True).tolist() if wrong[i]][: args.errors]
    errors = [
        {"index": i, "text": test.texts[i], "true_label": LABEL_NAMES[int(labels[i])],
         "loss": float(loss[i]), **row}
        for i, row in zip(worst, explain(model, ids[worst]))
    ]
    record = {
        **tool_command("ch11_record_predictions.py", argv, str(args.record)),
        "checkpoint_sha256": file_sha256(path),
        "run_command": run_command,
        "test_fingerprint": test.fingerprint(),
        "predictions": predictions,
        "largest_errors": errors,
    }
    IMDB_CPU_PREDICTIONS.write(record, args.record)
    print(f"wrote {args.record}: {len(predictions)} reviews, {len(errors)} test errors")
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
