"""A saved classifier as a function from texts to verdicts, as the appendix "Running it
for real" of *Transformers from Scratch* loads it for `classify` and `generate
--judge`: the checkpoint checked, the tokenizer it was trained with found and checked.

Written by hand, not exported: the appendix describes it in its section
"Failing safely" and names this file.

What this module deliberately does not handle: chapter 13's GPT classifier
(`scratchformer.train.transfer`), and batching beyond `classify_texts`'.
"""

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from scratchformer.runs.checkpoint import (BEST_CHECKPOINT, load_checkpoint,
                                           read_checkpoint)
from scratchformer.runs.provenance import check_recorded, recorded
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.loop import classify_texts


def saved_classifier(path: str | os.PathLike
                     ) -> tuple[Path, dict, BPETokenizer | None]:
    """The classifier checkpoint at `path` (a file, or a run's `best.pt`), read and
    checked: its file, its payload, and the tokenizer it was fine-tuned with (the
    `tokenizer.json` beside it) or None for GPT-2's. A configuration edited after
    training, or a tokenizer that is not its own, is refused.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    checkpoint = Path(path) / BEST_CHECKPOINT if Path(path).is_dir() else Path(path)
    payload = read_checkpoint(checkpoint)
    tokenizer = None
    if recorded(payload).get("tokenizer"):
        tokenizer_path = checkpoint.parent / "tokenizer.json"
        if not tokenizer_path.is_file():
            raise FileNotFoundError(f"{checkpoint} was fine-tuned with a pretraining "
                                    f"run's tokenizer, and there is no {tokenizer_path}")
        tokenizer = BPETokenizer.load(tokenizer_path)
    check_recorded(payload, checkpoint, tokenizer)
    return checkpoint, payload, tokenizer


def load_classifier(path: str | os.PathLike, device: torch.device
                    ) -> Callable[[Sequence[str]], list[dict]]:
    """The classifier saved at `path` (a file, or a run's `best.pt`) as a function from
    texts to verdicts, encoding them with the tokenizer it was trained with: GPT-2's, or
    the snapshot's it was fine-tuned from (`saved_classifier` checks both).

    Described in the appendix "Running it for real", section "Failing safely".
    """
    checkpoint, payload, tokenizer = saved_classifier(path)
    model = load_checkpoint(checkpoint, device)
    truncation, max_len = payload["truncation"], model.config.max_len
    if tokenizer is None:
        encode = None  # chapter 11's GPT-2 framing
    else:
        from scratchformer.train.pretrain import encode_labelled

        def encode(text: str) -> list[int]:
            return encode_labelled(tokenizer, [text], max_len, truncation)[0].tolist()

    return lambda texts: classify_texts(model, texts, truncation, encode=encode)
