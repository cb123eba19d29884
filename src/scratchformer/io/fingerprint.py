"""Every fingerprint the package takes, as the appendix "Running it for real" of
*Transformers from Scratch* uses them: sha256 of bytes, texts, files, configurations,
tokenizers, labelled texts and tensors. Records name data, settings and tokenizers by
these digests; caches are keyed by them.

Written by hand, not exported: the appendix describes it in its section
"Failing safely" and names this file.

What this module deliberately does not handle: deciding what a fingerprint covers (the
callers assemble the recipe: `scratchformer.data.review_cache.tokenizer_fingerprint`, say)
and checking a file against a pinned digest (chapter 1 checks GPT-2's files itself).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch only for the annotation: the scripts that refuse their arguments
    from torch import Tensor  # through scratchformer.cli.args must not wait for torch to load


def bytes_sha256(data: bytes) -> str:
    """sha256 of some bytes, as 64 hexadecimal digits.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return hashlib.sha256(data).hexdigest()


def text_sha256(text: str) -> str:
    """sha256 of a text's UTF-8 bytes.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return bytes_sha256(text.encode("utf-8"))


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file's bytes, read a megabyte at a time.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def config_sha256(config: dict) -> str:
    """sha256 of a configuration or a recipe (a dict of JSON values), keys sorted.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return text_sha256(json.dumps(config, sort_keys=True))


def tokenizer_sha256(tokenizer: object) -> str:
    """sha256 of the file `tokenizer.save` writes (its `to_json()`): the tokenizer's
    name in the records.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    return text_sha256(tokenizer.to_json())


def labelled_texts_sha256(labels: Iterable[object], texts: Iterable[str]) -> str:
    """sha256 of texts and their labels, in order: each text's label and length in bytes,
    then its bytes, so that no two lists of texts run together into the same stream.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    digest = hashlib.sha256()
    for label, text in zip(labels, texts, strict=True):
        encoded = text.encode("utf-8")
        digest.update(f"{label}:{len(encoded)}:".encode())
        digest.update(encoded)
    return digest.hexdigest()


def tensors_sha256(tensors: Iterable[Tensor]) -> str:
    """sha256 of tensors' shapes, dtypes and values, in order.

    Described in the appendix "Running it for real", section "Failing safely".
    """
    digest = hashlib.sha256()
    for tensor in tensors:
        digest.update(f"{tuple(tensor.shape)}{tensor.dtype}".encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()
