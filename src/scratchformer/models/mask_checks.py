"""The checks in front of chapter 13's masking: what `mask_tokens` refuses before it masks.

Apart from `scratchformer.models.pretraining` (generated from chapter 13, which teaches the
80/10/10 rule in `mask_tokens`) because its job is another: the argument checks `mask_tokens`
runs first, which the chapter does not teach; it is written by hand. This module does not check `special_ids` (an id outside the
vocabulary is simply never found) nor the generator's device.
"""

import torch
from torch import Tensor


def check_mask_inputs(ids: Tensor, mask_id: int, vocab_size: int) -> Tensor:
    """`ids` as int64 (so that a label can be -100), after refusing what `mask_tokens`
    cannot mask: a tensor that is not `(B, T)` integers (bool included), ids outside
    `[0, vocab_size)`, and a `mask_id` or `vocab_size` that is not such an id or count.

    Described in chapter 13, "Masking".
    """
    if not isinstance(ids, Tensor):
        raise TypeError(f"ids must be a torch.Tensor, got {type(ids).__name__}")
    if ids.dim() != 2 or ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise ValueError(f"ids must be a (B, T) integer tensor, got {ids.dtype} "
                         f"{tuple(ids.shape)}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    if (isinstance(mask_id, bool) or not isinstance(mask_id, int)
            or not 0 <= mask_id < vocab_size):
        raise ValueError(f"mask_id must be an integer id in [0, {vocab_size}), got "
                         f"{mask_id!r}")
    ids = ids.long()
    if ids.numel() and not (0 <= int(ids.min()) and int(ids.max()) < vocab_size):
        raise ValueError(f"ids must lie in [0, {vocab_size}); got values from "
                         f"{int(ids.min())} to {int(ids.max())}")
    return ids
