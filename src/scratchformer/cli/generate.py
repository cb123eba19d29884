"""The `scratchformer generate` command of chapter 12 of *Transformers from Scratch*:
reviews sampled from a `train-gpt` run's model with the tokenizer it was trained with,
optionally judged by a chapter 11 classifier.

What this module deliberately does not handle: serving a model (each `generate` loads
it anew), prompts of several lengths in one batch, and stop sequences.
"""

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import torch

from scratchformer.cli.args import terminal_text
from scratchformer.data.windows import SENTIMENT_TOKENS, special_ids
from scratchformer.io.fingerprint import file_sha256
from scratchformer.models.gpt import (GPTConfig, GPTModel, check_sampling, generate,
                                      next_token_probabilities)
from scratchformer.runs.checkpoint import BEST_CHECKPOINT
from scratchformer.runs.folders import command_record, write_json
from scratchformer.runs.hardware import resolve_device
from scratchformer.runs.provenance import check_recorded, recorded
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.tokenize.gpt2_files import END_OF_TEXT
from scratchformer.train.classify import load_classifier
from scratchformer.train.gpt import read_gpt_checkpoint


TOKENIZER_FILE = "tokenizer.json"


def first_special(ids: Sequence[int], specials: set[int]) -> int:
    """The index of the first special token in `ids`, or `len(ids)` if there is none.

    Described in chapter 12, section "The loop".
    """
    return next((i for i, token in enumerate(ids) if token in specials), len(ids))


def checkpoint_file(path: str | os.PathLike) -> Path:
    """A checkpoint file itself, or the `best.pt` of a run's folder.

    Described in chapter 12, section "The loop".
    """
    path = Path(path)
    return path / BEST_CHECKPOINT if path.is_dir() else path


def read_gpt_run(path: str | os.PathLike,
                 tokenizer_path: str | os.PathLike | None = None
                 ) -> tuple[dict, BPETokenizer]:
    """A GPT checkpoint (a file, or a run's `best.pt`) and its tokenizer (by default the
    `tokenizer.json` beside it), refused unless they are the pair it was trained with.

    Described in chapter 12, section "The loop".
    """
    checkpoint = checkpoint_file(path)
    payload = read_gpt_checkpoint(checkpoint)
    tokenizer = BPETokenizer.load(tokenizer_path or checkpoint.parent / TOKENIZER_FILE)
    check_recorded(payload, checkpoint, tokenizer)
    if tokenizer.n_vocab != payload["config"]["vocab_size"]:
        size = payload["config"]["vocab_size"]
        raise ValueError(f"{checkpoint} reads {size} token ids; its tokenizer has "
                         f"{tokenizer.n_vocab}")
    return payload, tokenizer


def prompt_ids(tokenizer: BPETokenizer, prompt: str, sentiment: str | None,
               context_length: int) -> list[int]:
    """The ids a sample starts with: end-of-text, the sentiment token, the prompt; a
    prompt that leaves no room for a new token, or holds a special token, is refused.

    Described in chapter 12, section "The loop".
    """
    specials = special_ids(tokenizer)
    ids = [specials[END_OF_TEXT]]
    if sentiment:
        ids.append(specials[SENTIMENT_TOKENS[("negative", "positive").index(sentiment)]])
    found = [token for token in specials if token in prompt]
    if found:
        raise ValueError(f"--prompt holds {found[0]}, a token the model reads as a "
                         "marker, not text: remove it (--sentiment puts a sentiment "
                         "token first, and every sample starts with <|endoftext|>)")
    ids += tokenizer.encode(prompt)
    if len(ids) >= context_length:
        raise ValueError(f"--prompt is {len(ids)} tokens with the ones put first; the "
                         f"model reads at most {context_length}, so no token is left to "
                         "write: shorten the prompt")
    return ids


def check_generate_options(args: argparse.Namespace, vocab_size: int,
                           trained_on: dict) -> None:
    """Refuse settings that would fail, or mean nothing, only after sampling: decoding
    settings, `--sentiment` for a GPT trained without labels (`trained_on`, what its
    checkpoint records), a `--json` file that cannot be written.

    Described in chapter 12, section "The loop".
    """
    check_sampling(args.temperature, args.top_k, args.top_p)
    if args.show_top > vocab_size:
        raise ValueError(f"--show-top {args.show_top}: the vocabulary has only "
                         f"{vocab_size} tokens")
    if args.sentiment and trained_on.get("no_labels"):
        raise ValueError(f"--sentiment {args.sentiment}: this GPT was trained with "
                         "--no-labels and never saw a sentiment token; sample without it")
    if args.json:
        target = Path(args.json)
        if target.is_dir():
            raise ValueError(f"--json {target} is a folder; name a file")
        if not os.access(target.parent, os.W_OK | os.X_OK):
            raise ValueError(f"--json {target}: cannot write into {target.parent}")


def run_generate(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """`scratchformer generate`: sample reviews from a run's model, optionally judged.

    Described in chapter 12, section "The loop".
    """
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    payload, tokenizer = read_gpt_run(args.checkpoint, args.tokenizer)
    model = GPTModel(GPTConfig(**payload["config"]))
    model.load_state_dict(payload["model"])
    model = model.to(device).eval()
    checkpoint = checkpoint_file(args.checkpoint)
    check_generate_options(args, tokenizer.n_vocab, recorded(payload))
    specials = special_ids(tokenizer)
    prompt = prompt_ids(tokenizer, args.prompt, args.sentiment,
                        model.config.context_length)
    new_tokens = args.max_new_tokens or model.config.context_length - len(prompt)
    settings = {"temperature": args.temperature, "top_k": args.top_k, "top_p": args.top_p}
    judge = args.judge and load_classifier(args.judge, device)  # checked first
    generator = torch.Generator(device).manual_seed(args.seed)
    samples = []
    for first in range(0, args.num, args.batch_size):
        rows = min(args.batch_size, args.num - first)
        ids = torch.tensor([prompt] * rows, device=device)
        written = generate(model, ids, new_tokens, generator=generator, **settings)
        for row in written[:, len(prompt) :].tolist():
            end = first_special(row, set(specials.values()))
            samples.append({"text": args.prompt + tokenizer.decode(row[:end]),
                            "tokens": end, "finished": end < len(row)})
    with torch.no_grad():
        logits = model(torch.tensor([prompt], device=device))[:, -1]  # (1, V)
    plain = next_token_probabilities(logits)[0]
    chosen = next_token_probabilities(logits, **settings)[0]
    first_step = [{"token": tokenizer.decode([i]), "id": i,
                   "probability": float(plain[i]),
                   "after_decoding_rule": float(chosen[i])}
                  for i in plain.topk(args.show_top).indices.tolist()]
    agreement = None
    if judge:
        verdicts = judge([s["text"] for s in samples])
        for sample, verdict in zip(samples, verdicts):
            sample["judge"] = verdict
        if args.sentiment:
            agreeing = sum(v["label"] == args.sentiment for v in verdicts)
            agreement = agreeing / len(verdicts)
    record = {
        **command_record(["scratchformer", *argv]),
        "checkpoint_sha256": file_sha256(checkpoint),
        "judge_sha256": file_sha256(checkpoint_file(args.judge)) if args.judge else None,
        "prompt": args.prompt, "sentiment": args.sentiment, "seed": args.seed,
        "max_new_tokens": new_tokens, **settings,
        "first_step": first_step, "kept_tokens": int((chosen > 0).sum()),
        "agreement": agreement, "samples": samples,
    }
    if args.json:
        write_json(Path(args.json), record)
    for sample in samples:
        verdict = f"[{sample['judge']['label']}] " if "judge" in sample else ""
        print(f"{verdict}{terminal_text(sample['text'])}\n")  # no escape sequences
    if agreement is not None:
        print(f"the classifier agrees with the requested {args.sentiment} sentiment in "
              f"{agreement:.1%} of {len(samples)} reviews")
    return 0
