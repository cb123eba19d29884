"""One run of chapter 11's whole-review classifier taught by a teacher on unlabelled reviews.

The teacher labels IMDB's unlabelled reviews (every text that is also in train or test
removed): `nbsvm` is NBSVM with the settings `book/results/imdb_baselines.json` chose on
validation, fitted on this run's fit split; `transformer` is a whole-review checkpoint
(`--teacher-checkpoint`, a `train-imdb` run on the same fit split). The classifier (the
`cpu` preset read in windows, fp32, 32 reviews a batch, as the whole-review runs) then trains
on the fit split plus the labelled unlabelled reviews (with `--sentences K`, also up to K
sentences of each of these reviews, `scratchformer.data.sentences`, each labelled as its
review is) for one epoch in the package's loop
(`scratchformer.train.engine.train`, as `train-imdb` runs it), validated four times on the
run's validation slice (held out as `--set validation=...` says, as `train-imdb` holds it
out); the folder `<out>` without `.json` holds its `best.pt` and `last.pt` and, with
`--test`, the best weights are tested once. `<out>` records the command, each validation,
the minutes to the trained model (teacher, labelling and tokenizing included) and the test;
a copy beside `best.pt` as `results.json` gives `export-web` the command and the score.

    python tools/records/ch11_taught.py --data $IMDB_DIR --cache runs/cache \
        --teacher nbsvm --seed 0 --test --out runs/taught/nbsvm_seed0.json

What it deliberately does not handle: resuming, several processes, a GPU, and soft labels
(each unlabelled review gets the teacher's verdict, not its probability).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import (existing_file, existing_folder, output_file, positive_int,
                                   seed_int)

TEACHERS = ("nbsvm", "transformer")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before torch is imported."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=existing_folder, required=True,
                        help="IMDB's files: train, test and unsup")
    parser.add_argument("--cache", type=Path, required=True, help="the token cache")
    parser.add_argument("--teacher", choices=TEACHERS, required=True)
    parser.add_argument("--teacher-checkpoint", type=existing_file,
                        help="with --teacher transformer: its best.pt")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--test", action="store_true", help="test the kept weights once")
    parser.add_argument("--limit-unlabelled", type=positive_int, default=None,
                        help="label only the first N unlabelled reviews (a quick try)")
    parser.add_argument("--sentences", type=positive_int, default=None, metavar="K",
                        help="also teach up to K sentences of each review, labelled as it is")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting of the preset (epochs=1 by default)")
    parser.add_argument("--out", type=output_file, required=True, help="the run's JSON")
    args = parser.parse_args(argv)
    if args.out.suffix != ".json":
        parser.error(f"--out {args.out}: name a .json file (its run folder is the name "
                     "without .json)")
    if args.out.with_suffix("").exists():
        parser.error(f"--out {args.out}: {args.out.with_suffix('')} already exists; "
                     "move it or choose another name")
    if (args.teacher == "transformer") != (args.teacher_checkpoint is not None):
        parser.error("--teacher-checkpoint goes with --teacher transformer, and only there")
    return args


if __name__ == "__main__":  # bad arguments are refused here, before torch is imported
    ARGUMENTS = parse()

import json
import time

import torch
from torch import Tensor

from scratchformer.data.batches import ReviewLoader, WindowedReviews
from scratchformer.data.holdout import holdout
from scratchformer.data.imdb import ReviewSplit, load_imdb, load_unlabeled
from scratchformer.data.review_cache import review_tokens
from scratchformer.data.review_windows import review_windows
from scratchformer.data.sentences import draw_sentences
from scratchformer.io.files import write_atomically
from scratchformer.measure.baselines import fit_nbsvm
from scratchformer.measure.evaluation import evaluate, logits_of
from scratchformer.models.bert import BertForSequenceClassification
from scratchformer.runs.checkpoint import load_checkpoint
from scratchformer.train import engine
from scratchformer.train.presets import apply_overrides, preset

from scratchbook.records import IMDB_BASELINES
from scratchbook.commands import tool_command

WHOLE_REVIEW = ["truncation=windows", "precision=fp32", "impl=sdpa", "batch_size=32",
                "epochs=1"]  # the whole-review runs' settings, one epoch


def as_windows(token_lists: list, max_len: int) -> WindowedReviews:
    """Reviews' token arrays as chapter 11's windows."""
    return WindowedReviews.from_reviews([review_windows(t.tolist(), max_len)
                                         for t in token_lists])


def unlabelled_reviews(source: Path, train: ReviewSplit, test: ReviewSplit) -> list[str]:
    """IMDB's unlabelled reviews, each once, without any text of train or test."""
    seen = set(train.texts) | set(test.texts)
    return list(dict.fromkeys(t for t in load_unlabeled(source) if t not in seen))


def teacher_labels(args: argparse.Namespace, fit: ReviewSplit, unlabelled: list[str],
                   windows: WindowedReviews) -> list[int]:
    """The teacher's verdict (0 or 1) on each unlabelled review."""
    if args.teacher == "nbsvm":
        baselines = IMDB_BASELINES.read()
        nbsvm = fit_nbsvm(fit.texts, fit.labels, **baselines["validation"]["nbsvm"]["chosen"])
        return nbsvm.predict(unlabelled).tolist()
    teacher = load_checkpoint(args.teacher_checkpoint, torch.device("cpu")).eval()
    verdicts = []
    with torch.no_grad():
        for start in range(0, len(unlabelled), 128):
            ids = windows.batch(torch.arange(start, min(start + 128, len(unlabelled))))
            verdicts += logits_of(teacher, ids, ids != teacher.config.pad_id).argmax(-1).tolist()
    return verdicts


def main(args: argparse.Namespace, argv: list[str]) -> int:
    torch.set_num_threads(1)
    started = time.perf_counter()
    model_config, train_config = preset("cpu")
    model_config, train_config = apply_overrides(
        model_config, train_config, [*WHOLE_REVIEW, f"seed={args.seed}", *args.set])
    data = load_imdb(args.data, ["train", "test"])
    train, test = data["train"], data["test"]
    unlabelled = unlabelled_reviews(args.data, train, test)[: args.limit_unlabelled]
    val_index, fit_index = (index.tolist() for index in holdout(
        train.labels, train_config.val_size, train_config.seed, train_config.validation))
    fit = ReviewSplit([train.texts[i] for i in fit_index],
                      [train.labels[i] for i in fit_index], train.source)
    train_tokens = review_tokens(train, args.cache)
    unlabelled_tokens = review_tokens(
        ReviewSplit(unlabelled, [0] * len(unlabelled), "unsup"), args.cache)
    print(f"{len(unlabelled)} unlabelled reviews", flush=True)
    verdicts = teacher_labels(args, fit, unlabelled,
                              as_windows(unlabelled_tokens, model_config.max_len))
    print(f"labelled by {args.teacher}: {sum(verdicts) / len(verdicts):.3f} positive",
          flush=True)
    taught_tokens = [train_tokens[i] for i in fit_index] + list(unlabelled_tokens)
    taught_labels = fit.labels + verdicts
    sentences: list = []
    if args.sentences:  # short texts too: sentences, each labelled as its review is
        sentences, owners = draw_sentences(taught_tokens, args.sentences, train_config.seed)
        taught_tokens += sentences
        taught_labels += [taught_labels[owner] for owner in owners]
        print(f"{len(sentences)} sentences", flush=True)
    fit_loader = ReviewLoader(
        as_windows(taught_tokens, model_config.max_len), torch.tensor(taught_labels),
        train_config.batch_size, shuffle=True, seed=train_config.seed,
        length_groups=train_config.length_groups)
    val_loader = ReviewLoader(
        as_windows([train_tokens[i] for i in val_index], model_config.max_len),
        torch.tensor([train.labels[i] for i in val_index]), 4 * train_config.batch_size,
        length_groups=1)
    torch.manual_seed(train_config.seed)
    run_folder = args.out.with_suffix("")
    history = engine.train(BertForSequenceClassification(model_config), fit_loader,
                           val_loader, train_config, run_folder, progress=False)
    model = load_checkpoint(run_folder, torch.device("cpu"))  # the best validation's weights
    minutes = (time.perf_counter() - started) / 60
    tested = None
    if args.test:
        test_ids: Tensor | WindowedReviews = as_windows(review_tokens(test, args.cache),
                                                        model_config.max_len)
        tested = evaluate(model, ReviewLoader(test_ids, torch.tensor(test.labels), 128,
                                              length_groups=1), "fp32")
        print("test", tested["accuracy"], flush=True)
    result = {**tool_command("ch11_taught.py", argv), "teacher": args.teacher,
              "seed": args.seed, "unlabelled": len(unlabelled),
              "sentences": len(sentences),
              "history": [{key: value for key, value in row.items() if key != "step_losses"}
                          for row in history],
              "minutes_to_trained": minutes, "test": tested,
              "minutes_total": (time.perf_counter() - started) / 60}
    text = (json.dumps(result, indent=1) + "\n").encode()
    # the same record beside best.pt, where export-web reads a run's command and test score
    for path in (run_folder / "results.json", args.out):
        write_atomically(path, lambda handle: handle.write(text))
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGUMENTS, sys.argv[1:]))
