"""The `scratchformer` command line, as the appendix "Running it for real" of
*Transformers from Scratch* builds it.

`scratchformer train-imdb` loads and tokenizes the data, holds out validation reviews,
trains a preset (changed with `--set KEY=VALUE`), tests the best model once, and writes
`results.json` with the command, the data's hashes, the hardware, the software versions,
the times and the curves; `scratchformer classify` labels texts with a saved model.
Settings, folders, devices and data are checked before any work or allocation, and
Ctrl-C, SIGTERM and SIGHUP exit with status 130, 143 and 129, saying what can be resumed.

What this module deliberately does not handle: multi-node jobs beyond what `torchrun`
sets up, configuration files (presets and `--set` only), models other than the BERT
classifier, and serving predictions (each `classify` loads the model anew).

Written by hand, not exported: the appendix describes it in its section
"The command line" and names this file.
"""

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

import scratchformer
from scratchformer.cli.args import (add_special_text_option, command_line_places, one_line,
                                    positive_int, user_path)
from scratchformer.cli.session import CommandRun, interrupted_status, stop_signals_interrupt
from scratchformer.data.batches import ReviewLoader, WindowedReviews
from scratchformer.data.holdout import holdout
from scratchformer.data.imdb import ReviewSplit, load_imdb
from scratchformer.data.review_cache import encode_reviews, review_tokens
from scratchformer.data.special_text import ReadTexts, check_special_text
from scratchformer.io.fingerprint import config_sha256, file_sha256, tokenizer_sha256
from scratchformer.measure.evaluation import evaluate, is_distributed
from scratchformer.models.bert import BertConfig, BertForSequenceClassification
from scratchformer.runs.checkpoint import BEST_CHECKPOINT, load_checkpoint
from scratchformer.runs.folders import (check_run_folder, command_record,
                                        interruption_report)
from scratchformer.runs.hardware import (PEAK_BF16_FLOPS, hardware_info,
                                         resolve_device, training_flops_per_token)
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.checks import (check_before_training, check_init_config,
                                        check_model_fits, check_pipeline_config)
from scratchformer.train.classify import load_classifier
from scratchformer.train.engine import train
from scratchformer.train.presets import PRESETS, apply_overrides, preset

def run_train_imdb(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """`scratchformer train-imdb`: train, validate, test once, write `results.json`.

    Described in the appendix "Running it for real", section "The command line".
    """
    started = time.perf_counter()
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    command = command_record(["scratchformer", *argv])  # made now: nothing fails after
    # What can be checked before loading data is checked here: see "Failing safely".
    model_config, train_config = preset(args.config)
    if args.init:  # chapter 13: a pretrained encoder, its sizes and its tokenizer
        from scratchformer.train.pretrain import pretrained_start

        init_config, init_weights, init_tokenizer = pretrained_start(args.init)
        model_config = replace(init_config, dropout=model_config.dropout,
                               pooling=model_config.pooling)
    model_config, train_config = apply_overrides(model_config, train_config, args.set)
    if args.epochs is not None:
        train_config = replace(train_config, epochs=args.epochs)
    if args.init:
        check_init_config(model_config, init_config, args.init)
        if train_config.truncation == "windows":
            raise ValueError(f"--init {args.init}: truncation='windows' cuts GPT-2's "
                             "tokens into windows, and a pretrained snapshot brings its "
                             "own tokenizer; use truncation=head or head+tail")
    else:
        check_pipeline_config(model_config)
    out = Path(args.out)
    device = resolve_device(args.device)
    check_model_fits(lambda: BertForSequenceClassification(model_config), device)
    check_run_folder(out, args.resume, args.overwrite, ["tokenizer.json"])
    if args.threads:
        torch.set_num_threads(args.threads)
    with CommandRun(out, device, args.resume, args.overwrite, ["tokenizer.json"],
                    interruption_report) as run:
        rank, world_size, say = run.rank, run.world_size, run.say
        data = load_imdb(args.data, ["train"] if args.no_test else ["train", "test"])
        check_special_text(args.special_text,  # every review read, --limit or not
                           [ReadTexts(s, data[s].texts, data[s].source) for s in data])
        if args.limit:
            picks = {s: torch.randperm(
                         len(data[s]), generator=torch.Generator().manual_seed(1)
                     )[: args.limit].tolist() for s in data}
            data = {s: ReviewSplit([data[s].texts[i] for i in picks[s]],
                                   [data[s].labels[i] for i in picks[s]], data[s].source)
                    for s in data}
        if rank != 0:
            dist.barrier()  # rank 0 tokenizes and fills the cache first
        needed = ["train"] if args.no_test else ["train", "test"]
        if args.init:
            from scratchformer.train.pretrain import encode_labelled

            encoded = {s: (encode_labelled(init_tokenizer, data[s].texts,
                                           model_config.max_len, train_config.truncation),
                           torch.tensor(data[s].labels, dtype=torch.long))
                       for s in needed}
            train_lengths = (
                (encoded["train"][0] != model_config.pad_id).sum(1).numpy() - 2)
        else:
            encoded = {s: encode_reviews(data[s], model_config.max_len,
                                         train_config.truncation, args.cache)
                       for s in needed}
            train_lengths = np.array([len(t)
                                      for t in review_tokens(data["train"], args.cache)])
        if rank == 0 and is_distributed():
            dist.barrier()
        prepared = time.perf_counter()
        sizes = " / ".join(f"{len(data[s]):,} {s}" for s in data)
        say(f"data: {sizes} reviews, ready in {prepared - started:.0f} s")

        ids, labels = encoded["train"]
        val_index, fit_index = holdout(labels, train_config.val_size, train_config.seed,
                                       train_config.validation)
        shard = {"rank": rank, "world_size": world_size}
        fit_loader = ReviewLoader(ids[fit_index], labels[fit_index],
                                  train_config.batch_size, shuffle=True,
                                  seed=train_config.seed,
                                  length_groups=train_config.length_groups, **shard)
        eval_batch = 4 * train_config.batch_size
        val_loader = ReviewLoader(ids[val_index], labels[val_index], eval_batch,
                                  length_groups=1, **shard)
        one_class = check_before_training(data, fit_loader, args.allow_one_class)
        if one_class:
            say("note: the reviews trained on are of one label (--allow-one-class): "
                "best.pt is the model of the last validation, not one chosen on "
                "validation, whose accuracy means nothing here")
        provenance = run_provenance(model_config, args.init and init_tokenizer, args.init)
        run.set_old_run_aside()  # everything checkable was checked
        if args.init and rank == 0 and not args.resume:
            init_tokenizer.save(out / "tokenizer.json")  # classify reads it

        torch.manual_seed(train_config.seed)
        model = BertForSequenceClassification(model_config)
        if args.init:
            # strict: every weight, same shapes
            model.encoder.load_state_dict(init_weights)
        model = model.to(device)
        history = train(model, fit_loader, val_loader, train_config, args.out,
                        resume=args.resume, progress=not args.no_progress, log=say,
                        provenance=provenance, choose_best=not one_class)
        run.trained()  # from here on, no error throws the new run away
        trained = time.perf_counter()
        if args.no_test:
            test = None
        else:
            test_loader = ReviewLoader(*encoded["test"], eval_batch, length_groups=1,
                                       **shard)
            test = evaluate(load_checkpoint(args.out, device), test_loader,
                            train_config.precision)
        finished = time.perf_counter()
        if test is not None:
            say(f"test accuracy {test['accuracy']:.4f} on {test['examples']:,} reviews")
        say(f"{finished - started:.0f} s in all")
        if rank == 0:
            best = (history[-1] if one_class  # best.pt: the last validated
                    else max(history, key=lambda record: record["val_accuracy"]))
            sequence = (ids.window_lengths.float().mean()  # a window is a sequence
                        if isinstance(ids, WindowedReviews)
                        else np.minimum(train_lengths + 2, model_config.max_len).mean())
            flops = training_flops_per_token(model_config, float(sequence))
            tokens_per_second = (
                sum(r["tokens_per_second"] * r["seconds"] for r in history)
                / sum(r["seconds"] for r in history))
            peak = next((v for k, v in PEAK_BF16_FLOPS.items()
                         if device.type == "cuda"
                         and k in torch.cuda.get_device_name(device)), None)
            results = {
                **command,
                "world_size": world_size,
                "preset": args.config,
                "model_config": asdict(model_config),
                "train_config": asdict(train_config),
                "parameters": sum(p.numel() for p in model.parameters()),
                "init": args.init and {"checkpoint": args.init,
                                       "sha256": file_sha256(args.init)},
                "data": {
                    "source": str(args.data or os.environ.get("IMDB_DIR") or "hub:imdb"),
                    "limit": args.limit,
                    "special_text": args.special_text,
                    "one_class": one_class,
                    "validation_reviews": train_config.val_size,
                    "splits": {
                        s: {
                            "source": data[s].source,
                            "reviews": len(data[s]),
                            "positive": int(sum(data[s].labels)),
                            "fingerprint": data[s].fingerprint(),
                            "file_sha256": (file_sha256(data[s].source)
                                            if Path(data[s].source).is_file() else None),
                        }
                        for s in data
                    },
                    "train_tokens": {
                        "median": float(np.median(train_lengths)),
                        "mean": float(train_lengths.mean()),
                        "fraction_over_budget": float(
                            np.mean(train_lengths > model_config.max_len - 2)),
                    },
                },
                "hardware": hardware_info(device),
                "software": {"torch": torch.__version__,
                             "python": platform.python_version(),
                             "scratchformer": scratchformer.__version__},
                "load_average": {"start": load_at_start,
                                 "end": (os.getloadavg() if hasattr(os, "getloadavg")
                                         else None)},
                "seconds": {"prepare_data": prepared - started,
                            "train": trained - prepared,
                            "test": finished - trained, "total": finished - started},
                "throughput": {
                    "train_tokens_per_second": tokens_per_second,
                    "training_flops_per_token": flops,
                    "model_flops_utilization": (
                        flops * tokens_per_second / (peak * world_size) if peak
                        else None),
                },
                "history": history,
                "best_epoch": best["epoch"],
                "best_step": best["step"],
                "best_chosen_on_validation": not one_class,
                "validation": {"accuracy": best["val_accuracy"],
                               "loss": best["val_loss"]},
                "test": test,
                "scored_checkpoint": test and {  # the file the test scores describe
                    "file": BEST_CHECKPOINT, "sha256": file_sha256(out / BEST_CHECKPOINT)},
            }
            run.finish(results)
    return run.status


def run_classify(args: argparse.Namespace) -> int:
    """`scratchformer classify`: label each text with a saved model.

    Described in the appendix "Running it for real", section "The command line".
    """
    read = command_line_places(args.texts, sys.stdin)
    texts = [text for text, _ in read]
    check_special_text(args.special_text,
                       [ReadTexts("", texts, "the command line", [p for _, p in read])])
    results = load_classifier(args.checkpoint, resolve_device(args.device))(texts)
    if args.json:
        print(json.dumps([{"text": t, **r} for t, r in zip(texts, results)], indent=2))
    else:
        for text, result in zip(texts, results):
            preview = one_line(text if len(text) <= 60 else text[:57] + "...")
            print(f"{result['label']:<9} "
                  f"{result['probabilities'][result['label']]:.3f}  {preview}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The `scratchformer` command's arguments.

    Described in the appendix "Running it for real", section "The command line".
    """
    parser = argparse.ArgumentParser(
        prog="scratchformer",
        description="Transformers from Scratch: train and use the book's models.")
    commands = parser.add_subparsers(dest="command", required=True)
    fit = commands.add_parser(
        "train-imdb", help="train the BERT classifier on IMDB, then test it once")
    fit.add_argument("--data", type=user_path, help="IMDB folder (aclImdb/, JSON Lines "
                     "or parquet); default: $IMDB_DIR, else the hub")
    fit.add_argument("--out", required=True, type=user_path,
                     help="folder for best.pt, last.pt and results.json")
    fit.add_argument("--config", default="cpu", choices=sorted(PRESETS),
                     help="preset (default: cpu)")
    fit.add_argument("--epochs", type=positive_int, help="override the preset's epochs")
    fit.add_argument("--device", default="auto",
                     help="auto, cpu, cuda or cuda:N (default: auto)")
    start = fit.add_mutually_exclusive_group()
    start.add_argument("--resume", action="store_true",
                       help="continue the run in --out from its last.pt")
    start.add_argument("--overwrite", action="store_true",
                       help="delete the run in --out, then start a new one")
    fit.add_argument("--threads", type=positive_int,
                     help="torch CPU threads per process (default: torch's choice)")
    fit.add_argument("--cache", type=user_path, help="token cache folder (default: "
                     "$SCRATCHFORMER_CACHE or ~/.cache/scratchformer)")
    fit.add_argument("--limit", type=positive_int,
                     help="use only this many random reviews of each split (trials)")
    fit.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a field of the preset's BertConfig or TrainConfig "
                     "(repeatable)")
    fit.add_argument("--init", type=user_path, help="start from a pretrained encoder: "
                     "a snapshot of `scratchformer pretrain` (its sizes and tokenizer)")
    fit.add_argument("--no-test", action="store_true",
                     help="stop after validation; never touch the test split")
    fit.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_special_text_option(fit, "reviews of the train and test splits (all, --limit "
                            "or not)")
    fit.add_argument("--allow-one-class", action="store_true",
                     help="train even if the reviews trained on are of one label (a "
                     "demonstration: nothing is learned, and best.pt is then the last "
                     "model validated, not one chosen on validation)")
    label = commands.add_parser("classify", help="label texts with a trained model")
    label.add_argument("--checkpoint", required=True, type=user_path,
                       help="a checkpoint file, or a run's folder (uses best.pt)")
    label.add_argument("--device", default="cpu", help="cpu, cuda, ... (default: cpu)")
    label.add_argument("--json", action="store_true",
                       help="print JSON instead of one line per text")
    add_special_text_option(label, "texts")
    label.add_argument("texts", nargs="+",
                       help="texts to classify; - reads them from stdin, one per line")
    # chapter 12's commands (it imports this module)
    from scratchformer.cli.gpt import add_gpt_commands

    add_gpt_commands(commands)
    from scratchformer.cli.pretrain import add_pretrain_commands  #chapter 13's command

    add_pretrain_commands(commands)
    from scratchformer.web.export import add_web_commands  #the browser appendix's

    add_web_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `scratchformer` command.

    Described in the appendix "Running it for real", section "The command line".
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        with stop_signals_interrupt():  # SIGTERM and SIGHUP stop a run as Ctrl-C does
            if args.command == "train-imdb":
                return run_train_imdb(args, argv)
            if args.command == "classify":
                return run_classify(args)
            return args.run(args, argv)  # a command a later chapter registered
    except BrokenPipeError:  # the reader of the output left (`| head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error
        return 141  # as a shell reports a process ended by SIGPIPE
    except (ValueError, OSError, RuntimeError) as err:  # OSError: files, a full disk
        print(f"scratchformer {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM, SIGHUP
        print(f"scratchformer {args.command}: interrupted", file=sys.stderr)
        return interrupted_status(stop)


def run_provenance(config: BertConfig, tokenizer: BPETokenizer | None,
                   init: str | None) -> dict:
    """What a classifier's checkpoints record of its run beyond the data: the sha256 of
    its configuration and, fine-tuned from a snapshot, of the snapshot and its tokenizer.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return {"config": config_sha256(asdict(config)),
            "init": init and file_sha256(init),
            "tokenizer": tokenizer and tokenizer_sha256(tokenizer)}
