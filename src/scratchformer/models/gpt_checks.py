"""The argument checks of chapter 12's GPT, configuration, model and sampling, as
*Transformers from Scratch* uses them: each raises an error that names the argument and says
what it must be, before the model or the sampler would fail deep inside with a message about
something else.

Apart from `scratchformer.models.gpt` (generated from chapter 12) because its job is another:
refusing bad arguments, which the chapter calls without teaching; it is written by hand. What this module deliberately does not handle: checking that
token ids lie inside the vocabulary (the token table does that), and batches of prompts of
different lengths.
"""

import math

import torch
from torch import Tensor

from scratchformer.nn.checks import check_positive_int


def check_gpt_config(config: object) -> None:
    """Raise `ValueError` unless a `GPTConfig`'s sizes are positive integers, `d_model` splits
    evenly across `num_heads` (the message lists head counts that do), `0 <= dropout < 1` and
    `impl` is `"explicit"` or `"sdpa"`.

    Described in chapter 12, section "Its configuration".
    """
    for name in ("vocab_size", "context_length", "d_model", "num_layers", "num_heads",
                 "d_hidden"):
        check_positive_int(name, getattr(config, name))
    d_model, num_heads = config.d_model, config.num_heads
    if d_model % num_heads != 0:
        divisors = [h for h in range(1, min(d_model, 64) + 1) if d_model % h == 0]
        raise ValueError(
            f"d_model ({d_model}) must be divisible by num_heads ({num_heads}): each head "
            f"gets d_model / num_heads dimensions; for d_model={d_model} use one of {divisors}")
    if not 0.0 <= config.dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {config.dropout}")
    if config.impl not in ("explicit", "sdpa"):
        raise ValueError(f"impl must be 'explicit' or 'sdpa', got {config.impl!r}")


def check_token_ids(ids: object) -> None:
    """Raise `TypeError` unless `ids` is a tensor of int64 or int32 token ids (a list, a
    NumPy array or uint8 ids would otherwise fail deep inside the lookup).

    Described in chapter 12, section "The model".
    """
    if not isinstance(ids, Tensor):
        raise TypeError(f"ids must be a torch.Tensor of token ids, got "
                        f"{type(ids).__name__}; use torch.tensor(ids)")
    if ids.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"ids must be int64 (or int32) token ids, got {ids.dtype}; "
                        "convert them with ids.long()")


def check_sampling(temperature: float, top_k: int | None, top_p: float | None) -> None:
    """Raise `ValueError` unless `temperature >= 0`, `top_k >= 1` and `0 < top_p <= 1`.

    Described in chapter 12, section "From logits to a token".
    """
    if not (isinstance(temperature, (int, float)) and 0 <= temperature < math.inf):
        raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), "
                         f"got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)
                              or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    if top_p is not None and not (isinstance(top_p, (int, float)) and 0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1] or None, got {top_p!r}")


def check_logits(logits: Tensor) -> None:
    """Raise `ValueError` unless `logits` is a `(B, V)` tensor of finite numbers.

    Described in chapter 12, section "From logits to a token".
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must have shape (B, V), got {tuple(logits.shape)}")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("logits hold NaN or infinity: no distribution to sample from")


def check_generation(ids: Tensor, max_new_tokens: int, context_length: int) -> None:
    """Raise `ValueError` unless `ids` are `(B, T)` integer ids, T >= 1, and T plus
    `max_new_tokens` new ones fit in `context_length`.

    Described in chapter 12, section "From logits to a token".
    """
    if ids.dim() != 2 or ids.shape[1] == 0 or ids.dtype.is_floating_point:
        raise ValueError(f"ids must be integer token ids of shape (B, T), T >= 1, got "
                         f"{ids.dtype} {tuple(ids.shape)}")
    if (not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool)
            or max_new_tokens < 0):
        raise ValueError(f"max_new_tokens must be an integer >= 0, "
                         f"got {max_new_tokens!r}")
    if ids.shape[1] + max_new_tokens > context_length:
        raise ValueError(f"a prompt of {ids.shape[1]} tokens plus {max_new_tokens} new "
                         f"ones exceeds the model's context_length of {context_length}")
