"""The argument checks of chapter 10's BERT, as *Transformers from Scratch* uses them: the ids
and the attention mask a caller gives the encoder or the classifier, refused with a message
that names the argument and says what it must be, before torch fails deep inside the
embedding (uint8 ids, a list) or the head (no token at all), or the model silently computes
something else (a float mask in another library's additive convention, a row with no real
token).

Written by hand, not exported: chapter 10 teaches the model and calls these checks in one line
each, without showing them. What this module deliberately does not handle: ids outside the
vocabulary and sequences longer than `max_len` (the embedding tables check those).
"""

import torch
from torch import Tensor


def check_ids(ids: object, weight: Tensor) -> None:
    """Raise unless `ids` are `(B, T)` token ids, int64 or int32, at least one per row, on
    the device of the model's token table `weight`.

    Described in chapter 10, section "Embeddings".
    """
    if not isinstance(ids, Tensor):
        raise TypeError(f"ids must be a torch.Tensor of token ids, got "
                        f"{type(ids).__name__}; use torch.tensor(ids)")
    if ids.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"ids must be int64 (or int32) token ids, got {ids.dtype}; "
                        "convert them with ids.long()")
    if ids.dim() != 2:
        raise ValueError(f"ids must have shape (B, T), got {tuple(ids.shape)}")
    if ids.shape[1] == 0:
        raise ValueError(f"ids of shape {tuple(ids.shape)} hold no token: each sequence "
                         "needs at least one (its [CLS])")
    if ids.device != weight.device:
        raise ValueError(f"ids are on {ids.device} and the model on {weight.device}; "
                         "move them with ids.to(device)")


def check_attention_mask(mask: object, ids: Tensor) -> None:
    """Raise unless `mask` has the shape of `ids` and marks real tokens with True (or 1)
    and padding with False (or 0), at least one real token in every row.

    A float mask is refused: in some libraries it is additive (0 at real tokens, a large
    negative number at padding), and read as True/False it would mean the opposite.

    Described in chapter 10, section "The encoder".
    """
    if not isinstance(mask, Tensor):
        raise TypeError(f"attention_mask must be a torch.Tensor, got "
                        f"{type(mask).__name__}")
    if mask.shape != ids.shape:
        raise ValueError(f"attention_mask {tuple(mask.shape)} must have the shape of ids "
                         f"{tuple(ids.shape)}")
    if mask.is_floating_point() or mask.is_complex():
        raise TypeError(f"attention_mask must be boolean (True at real tokens) or 0/1 "
                        f"integers, got {mask.dtype}; an additive float mask (0 at real "
                        "tokens) becomes one with mask == 0")
    if mask.dtype != torch.bool and bool(((mask != 0) & (mask != 1)).any()):
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (real tokens), "
                         f"got values from {int(mask.min())} to {int(mask.max())}")
    empty = (~mask.bool().any(dim=1)).nonzero().flatten().tolist()
    if empty:
        rows = ", ".join(map(str, empty[:5])) + (", ..." if len(empty) > 5 else "")
        raise ValueError(f"attention_mask marks no real token in row(s) {rows}: each "
                         "sequence needs at least one (its [CLS])")
