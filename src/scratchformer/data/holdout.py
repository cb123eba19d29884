"""Which training reviews validate: the slice held out of the training split.

`holdout` takes `size` reviews out, either at random (`"reviews"`) or as blocks of
consecutive reviews of each label (`"blocks"`). IMDB's files keep the release's order, in
which one film's reviews sit together, so blocks hold out mostly whole films: validation then
reads films the model never trained on, as the test split does, and random reviews do not
(chapter 11, "Learning from unlabelled reviews", measures the difference).

What this module deliberately does not handle: film ids (IMDB's files carry none, so a film
at the edge of a block, or one with reviews of both labels, can still be on both sides), and
data whose order says nothing (`train-imdb --limit` draws its reviews at random).

Written by hand, not exported: chapter 11 describes it in its section "Learning from
unlabelled reviews".
"""

from collections.abc import Sequence

import torch
from torch import Tensor

HOLDOUTS = ("reviews", "blocks")
BLOCK_LENGTH = 250  # reviews; IMDB's release keeps at most 30 of a film


def holdout(labels: Sequence[int], size: int, seed: int, by: str = "reviews",
            block_length: int = BLOCK_LENGTH) -> tuple[Tensor, Tensor]:
    """`(validation_index, fit_index)`, two index tensors that split `range(len(labels))`.

    `by="reviews"`: the first `size` of a random order drawn with `seed`. `by="blocks"`: for
    each label, its share of `size` (in proportion to its reviews) as blocks of `block_length`
    consecutive reviews of that label, the blocks at non-overlapping places drawn with `seed`.

    Described in chapter 11, section "Learning from unlabelled reviews".
    """
    labels = torch.as_tensor(labels)
    count = len(labels)
    if not 0 < size < count:
        raise ValueError(f"validation size {size} must be between 0 and the {count} "
                         "training reviews")
    if by not in HOLDOUTS:
        raise ValueError(f"the validation slice is held out by one of {HOLDOUTS}, "
                         f"got {by!r}")
    generator = torch.Generator().manual_seed(seed)
    if by == "reviews":
        order = torch.randperm(count, generator=generator)
        return order[:size], order[size:]
    if block_length <= 0:
        raise ValueError(f"block_length must be positive, got {block_length}")
    classes = labels.unique().tolist()
    held = []
    for number, label in enumerate(classes):
        rows = (labels == label).nonzero().flatten()  # this label's reviews, in file order
        wanted = (size - sum(len(h) for h in held) if number == len(classes) - 1
                  else round(size * len(rows) / count))
        slots = len(rows) // block_length
        blocks = -(-wanted // block_length)  # rounded up
        if blocks > slots or wanted >= len(rows):
            raise ValueError(f"label {label} has {len(rows)} reviews: too few for "
                             f"{wanted} in blocks of {block_length}")
        chosen = torch.randperm(slots, generator=generator)[:blocks].sort().values
        starts = chosen * block_length
        picked = torch.cat([rows[s: s + block_length] for s in starts.tolist()])[:wanted]
        held.append(picked)
    val_index = torch.cat(held)
    is_held = torch.zeros(count, dtype=torch.bool)
    is_held[val_index] = True
    return val_index, (~is_held).nonzero().flatten()
