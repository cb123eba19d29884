"""The `scratchformer pretrain` command of chapter 13 of *Transformers from Scratch*,
registered with the command line of the appendix; `train-imdb --init` fine-tunes one
of its snapshots.

Written by hand, not exported: a command line is plumbing (presets, argument checks, the
run folder, its lock and provenance, several processes), which the appendix "Running it for
real" describes and chapter 13 runs.

What this module deliberately does not handle: corpora other than IMDB's reviews, and
several pretraining runs in one folder.
"""

import argparse
import platform
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

import scratchformer
from scratchformer.cli.args import add_special_text_option, positive_int, user_path
from scratchformer.cli.generate import TOKENIZER_FILE
from scratchformer.cli.gpt import documents_fingerprint
from scratchformer.cli.session import CommandRun
from scratchformer.data.imdb import load_imdb, load_unlabeled
from scratchformer.data.special_text import ReadTexts, check_special_text, unlabeled_source
from scratchformer.data.windows import language_model_documents
from scratchformer.io.files import write_atomically
from scratchformer.io.fingerprint import config_sha256, file_sha256, tokenizer_sha256
from scratchformer.measure.evaluation import is_distributed
from scratchformer.models.bert import BertConfig
from scratchformer.models.pretraining import (PretrainingWindows, bert_special_ids,
                                              pretraining_stream, train_bert_tokenizer)
from scratchformer.runs.folders import check_run_folder, command_record
from scratchformer.runs.hardware import hardware_info, resolve_device
from scratchformer.runs.provenance import resume_advice
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.checks import check_model_fits
from scratchformer.train.presets import apply_overrides
from scratchformer.train.pretrain import (OBJECTIVES, PretrainConfig, build_pretrainer,
                                          pretrain, read_pretraining)


PRETRAIN_PRESETS: dict[str, dict[str, dict]] = {
    # One core, about 45 minutes: chapter 11's width, two layers, 8,000 tokens.
    "cpu": {"model": {"vocab_size": 8000, "d_model": 64, "num_layers": 2, "num_heads": 2,
                      "d_hidden": 256, "max_len": 256, "dropout": 0.1, "pooling": "mean"},
            "train": {"steps": 8000, "batch_size": 32, "window": 256, "lr": 1e-3}},
    # One large GPU: the classifier's gpu preset, pretrained on 20 times more windows.
    "gpu": {"model": {"vocab_size": 16000, "d_model": 256, "num_layers": 4,
                      "num_heads": 4, "max_len": 512, "dropout": 0.1, "pooling": "mean",
                      "impl": "sdpa"},
            "train": {"steps": 40000, "batch_size": 128, "window": 512, "lr": 5e-4}},
    # Seconds, for trying the command end to end.
    "tiny": {"model": {"vocab_size": 300, "d_model": 16, "num_layers": 1, "num_heads": 2,
                       "d_hidden": 32, "max_len": 32, "dropout": 0.0, "pooling": "mean"},
             "train": {"steps": 8, "batch_size": 4, "window": 32, "evals": 2,
                       "snapshot_halvings": 1}},
}
STREAMS = ("fit.npy", "val.npy")
RUN_OWN_FILES = ("snapshot-*.pt", TOKENIZER_FILE, *STREAMS)  # beside best.pt, last.pt


def pretrain_preset(name: str) -> tuple[BertConfig, PretrainConfig]:
    """The encoder and pretraining configurations of a named preset.

    Described in the appendix "Running it for real", section "Commands for pretraining".
    """
    if name not in PRETRAIN_PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of "
                         f"{sorted(PRETRAIN_PRESETS)}")
    chosen = PRETRAIN_PRESETS[name]
    pad = chosen["model"]["vocab_size"] - 4  # [PAD] is the first of the last four ids
    return BertConfig(**chosen["model"], pad_id=pad), PretrainConfig(**chosen["train"])


def read_stream(path: Path) -> np.ndarray:
    """A token stream this command saved, read without running code (`np.load` refuses
    pickled objects): a damaged or foreign file is refused with its name.

    Described in the appendix "Running it for real", section "Commands for pretraining".
    """
    try:
        stream = np.load(path)
    except (OSError, ValueError, EOFError) as err:
        raise ValueError(f"{path} is not a token stream this command saved ({err}); "
                         "start the run again with --overwrite") from None
    if stream.ndim != 1 or stream.dtype.kind not in "iu":
        raise ValueError(f"{path} holds a {stream.dtype} array of shape {stream.shape}, "
                         "not a stream of token ids; start the run again with "
                         "--overwrite")
    return stream


def run_pretrain(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """`scratchformer pretrain`: tokenizer, token streams, pretraining, snapshots,
    results.

    Nothing in `--out` changes until every check has passed: the tokenizer and the
    streams are made in memory, and `--overwrite` sets the old run aside only then, to
    delete it once the new run has finished.

    Described in the appendix "Running it for real", section "Commands for pretraining".
    """
    started = time.perf_counter()
    command = command_record(["scratchformer", *argv])  # made now: nothing fails after
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    out = Path(args.out)
    check_run_folder(out, args.resume, args.overwrite, RUN_OWN_FILES)
    if args.resume and args.tokenizer_documents:
        print(f"note: --tokenizer-documents {args.tokenizer_documents} is not used: a "
              "resumed run keeps the tokenizer it made")
    tokenizer_documents = args.tokenizer_documents or 10_000
    if any(item.partition("=")[0] == "pad_id" for item in args.set):
        raise ValueError("--set pad_id: the encoder pads with the [PAD] id of the run's "
                         "own tokenizer, so pad_id cannot be set")
    preset_config, settings = pretrain_preset(args.config)
    # [PAD] follows vocab_size: set it after the overrides, from the size they chose
    model_config, settings = apply_overrides(replace(preset_config, pad_id=0), settings,
                                             args.set)
    model_config = replace(model_config, pad_id=model_config.vocab_size - 4)
    if args.objective:
        settings = replace(settings, objective=args.objective)
    if settings.window > model_config.max_len:
        raise ValueError(f"window {settings.window} is longer than max_len "
                         f"{model_config.max_len}, the positions the encoder has")
    check_model_fits(lambda: build_pretrainer(model_config, settings), device)
    with CommandRun(out, device, args.resume, args.overwrite, RUN_OWN_FILES,
                    lambda folder: resume_advice(folder, read_pretraining)) as run:
        rank, world_size, say = run.rank, run.world_size, run.say
        data = load_imdb(args.data)
        unlabeled = load_unlabeled(args.data)
        check_special_text(args.special_text, [  # the texts it reads, --limit or not
            ReadTexts("train", data["train"].texts, data["train"].source),
            ReadTexts("unsup", unlabeled, unlabeled_source(args.data))])
        documents = language_model_documents(data["train"], unlabeled,
                                             data["test"].texts)  # no test text, ever
        random.Random(settings.seed).shuffle(documents)
        if args.limit:
            documents = documents[: args.limit]
        if not 0 < args.val_documents < len(documents):
            raise ValueError(f"--val-documents {args.val_documents} must be between 0 "
                             f"and the {len(documents)} documents")
        val_documents = documents[: args.val_documents]
        fit_documents = documents[args.val_documents :]
        if rank != 0 or args.resume:
            if is_distributed():
                dist.barrier()  # rank 0 checked everything and wrote the folder
            tokenizer = BPETokenizer.load(out / TOKENIZER_FILE)
            fit_stream, val_stream = (read_stream(out / name) for name in STREAMS)
        else:
            sample = [d.text for d in fit_documents[:tokenizer_documents]]
            tokenizer = train_bert_tokenizer(sample, model_config.vocab_size)
            fit_stream, val_stream = (pretraining_stream(tokenizer, part)
                                      for part in (fit_documents, val_documents))
        special, mask_id = bert_special_ids(tokenizer)
        model_config = replace(model_config, vocab_size=tokenizer.n_vocab,
                               pad_id=special.pad)
        prepared = time.perf_counter()
        say(f"data: {len(documents):,} documents, {len(fit_stream):,} training tokens, "
            f"ready in {prepared - started:.0f} s")
        shard = {"rank": rank, "world_size": world_size}
        fit_windows = PretrainingWindows(fit_stream, settings.window, settings.batch_size,
                                         special, seed=settings.seed, **shard)
        val_windows = PretrainingWindows(val_stream, settings.window,
                                         4 * settings.batch_size, special, **shard)
        fit_windows.windows.check_batches()  # a batch_size too large, refused now
        torch.manual_seed(settings.seed)
        model = build_pretrainer(model_config, settings).to(device)
        provenance = {"tokenizer": tokenizer_sha256(tokenizer),
                      "config": config_sha256(asdict(model_config)),
                      "limit": args.limit, "val_documents": args.val_documents,
                      "documents": documents_fingerprint(documents)}
        if rank == 0 and not args.resume:  # every check has passed: now the folder
            run.set_old_run_aside()  # kept aside until the new run has finished
            out.mkdir(parents=True, exist_ok=True)
            tokenizer.save(out / TOKENIZER_FILE)
            for name, stream in zip(STREAMS, (fit_stream, val_stream)):
                write_atomically(out / name, lambda handle: np.save(handle, stream))
            if is_distributed():
                dist.barrier()
        history = pretrain(model, fit_windows, val_windows, settings, mask_id, special,
                           out, resume=args.resume, progress=not args.no_progress,
                           log=say, provenance=provenance)
        run.trained()  # from here on, no error throws the new run away
        finished = time.perf_counter()
        if rank == 0:
            results = {
                **command,
                "world_size": world_size,
                "preset": args.config,
                "model_config": asdict(model_config),
                "settings": asdict(settings),
                "parameters": sum(p.numel() for p in model.parameters()),
                "encoder_parameters": sum(p.numel() for p in model.encoder.parameters()),
                "data": {"documents": len(documents), "special_text": args.special_text,
                         "validation_documents": len(val_documents),
                         "training_tokens": len(fit_stream),
                         "validation_tokens": len(val_stream),
                         "train_fingerprint": data["train"].fingerprint(),
                         "test_fingerprint": data["test"].fingerprint()},
                "tokenizer": {"vocab_size": tokenizer.n_vocab,
                              "sha256": file_sha256(out / TOKENIZER_FILE),
                              "special_ids": tokenizer.special_ids},
                "hardware": hardware_info(device),
                "software": {"torch": torch.__version__,
                             "python": platform.python_version(),
                             "scratchformer": scratchformer.__version__},
                "seconds": {"prepare_data": prepared - started,
                            "train": finished - prepared, "total": finished - started},
                "history": history,
                "snapshots": settings.snapshot_steps(),
            }
            say(f"{finished - started:.0f} s in all")
            run.finish(results)
    return run.status


def add_pretrain_commands(commands: argparse._SubParsersAction) -> None:
    """Register `pretrain` with the `scratchformer` command's subparsers.

    Described in the appendix "Running it for real", section "Commands for pretraining".
    """
    run = commands.add_parser("pretrain", help="pretrain chapter 10's encoder on IMDB's "
                              "text (masked LM, ELECTRA or next-token)")
    run.set_defaults(run=run_pretrain)
    option = run.add_argument
    option("--data", type=user_path, help="IMDB folder (default: $IMDB_DIR, the hub)")
    option("--out", required=True, type=user_path,
           help="folder for the tokenizer, streams, snapshots and results")
    option("--config", default="cpu", choices=sorted(PRETRAIN_PRESETS),
           help="preset (default: cpu)")
    option("--objective", choices=OBJECTIVES, help="override the preset's")
    option("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    start = run.add_mutually_exclusive_group()
    start.add_argument("--resume", action="store_true",
                       help="continue the run in --out from its last.pt")
    start.add_argument("--overwrite", action="store_true",
                       help="delete the run in --out, then start a new one")
    option("--threads", type=positive_int, help="torch CPU threads per process")
    option("--limit", type=positive_int, help="use only this many random documents")
    option("--val-documents", type=positive_int, default=1000,
           help="documents held out for validation (default: 1,000)")
    option("--tokenizer-documents", type=positive_int,
           help="documents the tokenizer is trained on (default: 10,000)")
    option("--set", action="append", default=[], metavar="KEY=VALUE",
           help="override a field of the preset's BertConfig or PretrainConfig")
    option("--no-progress", action="store_true", help="no progress bar")
    add_special_text_option(run, "reviews of the train and unsup splits (all, --limit "
                            "or not; the test split's texts are only removed from them)")
