"""The `scratchformer train-gpt` and `scratchformer generate` commands of chapter 12 of
*Transformers from Scratch*, registered with the command line of the appendix.

What this module deliberately does not handle: datasets other than IMDB, and serving
a model (each `generate` loads it anew).
"""

import argparse
import os
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
from scratchformer.cli.args import (add_special_text_option, positive_int, seed_int,
                                    user_path)
from scratchformer.cli.generate import (TOKENIZER_FILE, checkpoint_file, read_gpt_run,
                                        run_generate)
from scratchformer.cli.session import CommandRun
from scratchformer.data.imdb import ReviewSplit, load_imdb, load_unlabeled
from scratchformer.data.review_cache import default_cache_dir
from scratchformer.data.special_text import ReadTexts, check_special_text, unlabeled_source
from scratchformer.data.token_windows import TokenWindows
from scratchformer.data.windows import (Document, language_model_documents, special_ids,
                                        token_stream, train_review_tokenizer)
from scratchformer.io.files import write_atomically
from scratchformer.io.fingerprint import (config_sha256, file_sha256,
                                          labelled_texts_sha256, text_sha256,
                                          tokenizer_sha256)
from scratchformer.measure.evaluation import is_distributed
from scratchformer.models.gpt import GPTConfig, GPTModel
from scratchformer.runs.checkpoint import BEST_CHECKPOINT, check_weights
from scratchformer.runs.folders import check_run_folder, command_record
from scratchformer.runs.hardware import hardware_info, resolve_device
from scratchformer.runs.provenance import resume_advice
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.gpt import (GPT_PRESETS, GPTTrainConfig, gpt_preset,
                                     heldout_scores, load_gpt, read_gpt_checkpoint,
                                     train_gpt)
from scratchformer.train.checks import check_model_fits
from scratchformer.train.presets import apply_overrides


def documents_fingerprint(documents: Sequence[Document]) -> str:
    """sha256 of the documents' labels and texts, in order.

    Described in chapter 12, section "The loop".
    """
    return labelled_texts_sha256([document.label for document in documents],
                                 [document.text for document in documents])


def run_documents(data: dict[str, ReviewSplit], unlabeled: Sequence[str], seed: int,
                  no_labels: bool = False, limit: int | None = None) -> list[Document]:
    """The documents a `train-gpt` run reads, in its order: chapter 12's
    `language_model_documents` (without their labels if `no_labels`), shuffled by `seed`,
    the first `limit` of them if `limit` is set.

    Described in chapter 12, section "The loop".
    """
    documents = language_model_documents(data["train"], unlabeled, data["test"].texts)
    if no_labels:  # text only: a classifier fine-tuned later sees no label here
        documents = [Document(d.text) for d in documents]
    random.Random(seed).shuffle(documents)
    return documents[:limit] if limit else documents


def cached_stream(tokenizer: BPETokenizer, documents: Sequence[Document],
                  cache_dir: str | os.PathLike | None = None) -> np.ndarray:
    """`token_stream` of the documents with `tokenizer`, computed once and kept in the
    cache folder under a hash of both.

    Described in chapter 12, section "The loop".
    """
    recipe = f"{tokenizer_sha256(tokenizer)}:{documents_fingerprint(documents)}"
    key = text_sha256(recipe)[:32]
    folder = Path(cache_dir if cache_dir is not None else default_cache_dir())
    path = folder / f"gpt-stream-{key}.npy"
    if path.is_file():
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            pass  # a damaged cache file is rebuilt
    stream = token_stream(tokenizer, documents)
    write_atomically(path, lambda handle: np.save(handle, stream))
    return stream


def windows_read(stream: np.ndarray, context_length: int, config: GPTTrainConfig,
                 world_size: int = 1) -> np.ndarray:
    """Every window a run of `config` reads from `stream`, all processes: `(N, T + 1)`.

    Described in chapter 12, section "The loop".
    """
    read = []
    for rank in range(world_size):
        windows = TokenWindows(stream, context_length, config.batch_size,
                               seed=config.seed, rank=rank, world_size=world_size)
        for step in range(config.steps):
            inputs, targets = windows.batch(step)
            read.append(torch.cat([inputs, targets[:, -1:]], dim=1))
    return torch.cat(read).numpy()


def run_train_gpt(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """`scratchformer train-gpt`: tokenizer, stream, training, held-out scores, results.

    Nothing in `--out` changes until every check has passed: the tokenizer is written
    after them, and `--overwrite` sets the old run aside only then, to delete it once the
    new run has finished (appendix "Running it for real", "Failing safely").

    Described in chapter 12, section "The loop".
    """
    started = time.perf_counter()
    load_at_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    command = command_record(["scratchformer", *argv])  # made now: nothing fails after
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    out = Path(args.out)
    check_run_folder(out, args.resume, args.overwrite, [TOKENIZER_FILE])  # train-imdb's
    if args.resume and args.tokenizer_documents:
        print(f"note: --tokenizer-documents {args.tokenizer_documents} is not used: a "
              "resumed run keeps the tokenizer it made")
    tokenizer_documents = args.tokenizer_documents or 10_000
    tokenizer_path = out / TOKENIZER_FILE
    if args.resume and not tokenizer_path.is_file():
        raise FileNotFoundError(f"nothing to resume with: no {tokenizer_path}")
    with CommandRun(out, device, args.resume, args.overwrite, [TOKENIZER_FILE],
                    lambda folder: resume_advice(folder, read_gpt_checkpoint)) as run:
        rank, world_size, say = run.rank, run.world_size, run.say
        model_config, train_config = gpt_preset(args.config)
        if args.init:  # fine-tuning: the earlier run's model sizes, weights and tokenizer
            start_from, init_tokenizer = read_gpt_run(args.init)
            model_config = GPTConfig(**start_from["config"])
        model_config, train_config = apply_overrides(model_config, train_config, args.set)
        check_model_fits(lambda: GPTModel(model_config), device)
        data = load_imdb(args.data)
        unlabeled = [] if args.no_unlabeled else load_unlabeled(args.data)
        check_special_text(args.special_text, [  # all, --limit or not: before any writing
            *(ReadTexts(s, data[s].texts, data[s].source) for s in ("train", "test")),
            *([] if args.no_unlabeled
              else [ReadTexts("unsup", unlabeled, unlabeled_source(args.data))])])
        documents = run_documents(data, unlabeled, train_config.seed, args.no_labels,
                                  args.limit)
        val_count = args.val_documents
        if not 0 < val_count < len(documents):
            raise ValueError(f"--val-documents {val_count} must be between 0 and the "
                             f"{len(documents)} documents")
        if args.heldout > len(data["test"]):
            raise ValueError(f"--heldout {args.heldout}: the test split holds only "
                             f"{len(data['test'])} reviews")
        val_documents, fit_documents = documents[:val_count], documents[val_count:]
        if rank != 0:
            dist.barrier()  # rank 0 checks, writes the tokenizer and fills the cache
        if args.resume or rank != 0:
            tokenizer = BPETokenizer.load(tokenizer_path)
        elif args.init:
            tokenizer = init_tokenizer
        else:
            sample = [d.text for d in fit_documents[:tokenizer_documents]]
            tokenizer = train_review_tokenizer(sample, model_config.vocab_size)
        tokenized = time.perf_counter()
        model_config = replace(model_config, vocab_size=tokenizer.n_vocab)
        fit_stream = cached_stream(tokenizer, fit_documents, args.cache)
        val_stream = cached_stream(tokenizer, val_documents, args.cache)
        prepared = time.perf_counter()
        say(f"data: {len(documents):,} documents, {len(fit_stream):,} training tokens, "
            f"ready in {prepared - started:.0f} s")

        shard = {"rank": rank, "world_size": world_size}
        context_length = model_config.context_length
        fit_windows = TokenWindows(fit_stream, context_length, train_config.batch_size,
                                   seed=train_config.seed, **shard)
        val_windows = TokenWindows(val_stream, context_length,
                                   4 * train_config.batch_size, **shard)
        fit_windows.check_batches()  # a batch_size the stream cannot fill, refused now
        torch.manual_seed(train_config.seed)
        model = GPTModel(model_config).to(device)
        if args.init:  # its shapes, unless --set changed them: refused by name
            check_weights(start_from["model"], model.state_dict(), Path(args.init))
            model.load_state_dict(start_from["model"])
        provenance = {
            "tokenizer": tokenizer_sha256(tokenizer),
            "config": config_sha256(asdict(model_config)),
            "init": args.init and file_sha256(checkpoint_file(args.init)),
            "limit": args.limit, "val_documents": val_count,
            "no_unlabeled": args.no_unlabeled, "no_labels": args.no_labels,
            "documents": documents_fingerprint(documents),
        }
        if rank == 0 and not args.resume:  # every check has passed: now the folder
            run.set_old_run_aside()  # kept aside until the new run has finished
            tokenizer.save(tokenizer_path)
        if rank == 0 and is_distributed():
            dist.barrier()
        history = train_gpt(model, fit_windows, val_windows, train_config, out,
                            resume=args.resume, progress=not args.no_progress, log=say,
                            provenance=provenance)
        run.trained()  # from here on, no error throws the new run away
        trained = time.perf_counter()
        if rank == 0:
            heldout_texts = random.Random(0).sample(data["test"].texts, args.heldout)
            read = windows_read(fit_stream, context_length, train_config, world_size)
            scores = heldout_scores(load_gpt(out, device), tokenizer, heldout_texts,
                                    fit_stream, [d.text for d in val_documents], read)
            finished = time.perf_counter()
            for name, value in scores["bits_per_byte"].items():
                say(f"held-out bits per byte, {name}: {value:.4f}")
            best = min(history, key=lambda record: record["val_loss"])
            load_at_end = os.getloadavg() if hasattr(os, "getloadavg") else None
            results = {
                **command,
                "world_size": world_size,
                "preset": args.config,
                "model_config": asdict(model_config),
                "train_config": asdict(train_config),
                "parameters": sum(p.numel() for p in model.parameters()),
                "init": args.init and {"checkpoint": args.init,
                                       "sha256": file_sha256(checkpoint_file(args.init))},
                "data": {
                    "source": str(args.data or os.environ.get("IMDB_DIR") or "hub:imdb"),
                    "limit": args.limit,
                    "special_text": args.special_text,
                    "documents": len(documents),
                    "labelled_documents": sum(d.label is not None for d in documents),
                    "validation_documents": len(val_documents),
                    "tokenizer_documents": (  # on --resume, set by the first run
                        None if args.resume
                        else len(fit_documents[:tokenizer_documents])),
                    "training_tokens": len(fit_stream),
                    "validation_tokens": len(val_stream),
                    "train_fingerprint": data["train"].fingerprint(),
                    "test_fingerprint": data["test"].fingerprint(),
                },
                "tokenizer": {"vocab_size": tokenizer.n_vocab,
                              "sha256": file_sha256(tokenizer_path),
                              "special_ids": special_ids(tokenizer)},
                "hardware": hardware_info(device),
                "software": {"torch": torch.__version__,
                             "python": platform.python_version(),
                             "scratchformer": scratchformer.__version__},
                "load_average": {"start": load_at_start, "end": load_at_end},
                "seconds": {"tokenizer": tokenized - started,
                            "prepare_data": prepared - started,
                            "train": trained - prepared, "evaluate": finished - trained,
                            "total": finished - started},
                "history": history,
                "best_step": best["step"],
                "validation_loss": best["val_loss"],
                "heldout": scores,
                "scored_checkpoint": {  # the file the held-out scores describe
                    "file": BEST_CHECKPOINT, "sha256": file_sha256(out / BEST_CHECKPOINT)},
            }
            say(f"{finished - started:.0f} s in all")
            run.finish(results)
    return run.status


def add_gpt_commands(commands: argparse._SubParsersAction) -> None:
    """Register `train-gpt` and `generate` with the `scratchformer` command's subparsers.

    Described in chapter 12, section "The loop".
    """
    fit = commands.add_parser("train-gpt", help="train chapter 12's GPT on IMDB reviews")
    fit.set_defaults(run=run_train_gpt)
    option = fit.add_argument
    option("--data", type=user_path,
           help="IMDB folder, as for train-imdb (default: $IMDB_DIR, the hub)")
    option("--out", required=True, type=user_path,
           help="folder for checkpoints, tokenizer and results")
    option("--config", default="cpu", choices=sorted(GPT_PRESETS),
           help="preset (default: cpu)")
    option("--device", default="auto", help="auto, cpu, cuda or cuda:N (default: auto)")
    start = fit.add_mutually_exclusive_group()
    start.add_argument("--resume", action="store_true",
                       help="continue the run in --out from its last.pt")
    start.add_argument("--overwrite", action="store_true",
                       help="delete the run in --out, then start a new one")
    option("--threads", type=positive_int, help="torch CPU threads per process")
    option("--cache", type=user_path,
           help="token stream cache folder (default: as train-imdb's)")
    option("--limit", type=positive_int, help="use only this many random documents")
    option("--no-unlabeled", action="store_true", help="only the labelled reviews")
    option("--no-labels", action="store_true",
           help="the labelled reviews without their sentiment tokens")
    option("--init", type=user_path,
           help="fine-tune: start from a train-gpt run's model and tokenizer")
    option("--val-documents", type=positive_int, default=200,
           help="documents held out for validation (default: 200)")
    option("--tokenizer-documents", type=positive_int,
           help="documents the tokenizer is trained on (default: 10,000)")
    option("--heldout", type=positive_int, default=500,
           help="test reviews scored at the end (default: 500)")
    option("--set", action="append", default=[], metavar="KEY=VALUE",
           help="override a field of the preset's GPTConfig or GPTTrainConfig")
    option("--no-progress", action="store_true", help="no progress bar")
    add_special_text_option(fit, "reviews of the train, test and unsup splits (all, "
                            "--limit or not; unsup unless --no-unlabeled)")
    write = commands.add_parser("generate", help="write reviews with a train-gpt model")
    write.set_defaults(run=run_generate)
    option = write.add_argument
    option("--checkpoint", required=True, type=user_path,
           help="a run's folder (best.pt) or a checkpoint")
    option("--tokenizer", type=user_path,
           help="tokenizer.json (default: the one next to the checkpoint)")
    option("--prompt", default="", help="text the reviews start with")
    option("--sentiment", choices=("negative", "positive"),
           help="the sentiment token to put first")
    option("--num", type=positive_int, default=1, help="how many samples (default: 1)")
    option("--batch-size", type=positive_int, default=50, help="samples written at once")
    option("--max-new-tokens", type=positive_int, help="default: fill the context")
    option("--temperature", type=float, default=1.0, help="0 = greedy (default: 1)")
    option("--top-k", type=positive_int, help="sample among the k likeliest tokens")
    option("--top-p", type=float, help="sample from the nucleus of probability p")
    option("--seed", type=seed_int, default=0, help="random seed (default: 0)")
    option("--device", default="cpu", help="cpu, cuda, ... (default: cpu)")
    option("--threads", type=positive_int, help="torch CPU threads")
    option("--judge", type=user_path,
           help="a train-imdb classifier (run folder or file) to judge them")
    option("--show-top", type=positive_int, default=10, help="first-step rows")
    option("--json", type=user_path, help="write the samples and settings to this file")
