"""Batches of encoded IMDB reviews, as chapter 11 of *Transformers from Scratch* feeds them
to its classifier.

`ReviewLoader` cuts each batch to its longest review (rounded up to a multiple of 32),
shuffles every epoch in an order fixed by the seed and the epoch, groups reviews of
similar length when asked, and gives each of several processes its share of the batches.

What this module deliberately does not handle: tokenizing (it takes the tensors that
`encode_reviews` makes), background workers or pinned memory, sampling with replacement
or by class, and data that does not fit in memory.

Written by hand, not exported: chapter 11 describes the batching (section "Batches") and uses
this module.
"""

import math
import torch
from torch import Tensor
from scratchformer.data.framing import PAD_ID
from scratchformer.nn.attention import padding_mask


class ReviewLoader:
    """Batches `(ids, attention_mask, labels)` of encoded reviews, cut to fit their
    longest review.

    `ids` is `(N, T)` as `encode_reviews` makes it, `labels` is `(N,)`. With `shuffle`,
    each epoch (`set_epoch`) has its own order fixed by `seed`; with `length_groups > 0`,
    runs of that many batches are sorted by length before batching (without `shuffle`: the
    whole set). With `world_size > 1`, this process gets every `world_size`-th batch from
    `rank` on, and in shuffled mode every process gets the same number of batches. A batch
    is cut to its longest review rounded up to a multiple of `length_multiple`, so that
    only a few tensor shapes occur. The mask is chapter 6's padding mask as `(B, T)`: True
    where an id is not `pad_id`.

    Described in chapter 11, section "Batches".
    """

    def __init__(
        self,
        ids: Tensor,
        labels: Tensor,
        batch_size: int,
        shuffle: bool = False,
        seed: int = 0,
        length_groups: int = 0,
        rank: int = 0,
        world_size: int = 1,
        length_multiple: int = 32,
        pad_id: int = PAD_ID,
    ) -> None:
        if ids.dim() != 2 or labels.shape != ids.shape[:1]:
            raise ValueError(f"need ids (N, T) and labels (N,), got {tuple(ids.shape)} "
                             f"and {tuple(labels.shape)}")
        if batch_size <= 0 or length_groups < 0 or length_multiple <= 0:
            raise ValueError(
                f"batch_size and length_multiple must be positive and length_groups "
                f">= 0, got {batch_size}, {length_multiple}, {length_groups}"
            )
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, world_size), got rank {rank}, "
                             f"world_size {world_size}")
        self.ids, self.labels, self.pad_id = ids, labels, pad_id
        self.lengths = self.real_tokens(ids).sum(dim=1)  # (N,) real tokens per review
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self.length_groups, self.rank, self.world_size = length_groups, rank, world_size
        self.length_multiple = length_multiple
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def real_tokens(self, ids: Tensor) -> Tensor:
        """`(B, T)`: True at every id that is not padding."""
        return padding_mask(ids, self.pad_id)[:, 0, 0]

    def num_batches(self) -> int:
        """Batches in one pass over all processes (before each process takes its
        share)."""
        total = math.ceil(len(self.labels) / self.batch_size)
        return total - total % self.world_size if self.shuffle else total

    def __len__(self) -> int:
        return len(range(self.rank, self.num_batches(), self.world_size))

    def batch_indices(self) -> list[Tensor]:
        """This process's batches for the current epoch, as index tensors."""
        if not self.shuffle:
            order = (torch.argsort(self.lengths, stable=True) if self.length_groups
                     else torch.arange(len(self.labels)))
            batches = list(order.split(self.batch_size))
        else:
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            order = torch.randperm(len(self.labels), generator=generator)
            if self.length_groups:
                runs = order.split(self.batch_size * self.length_groups)
                order = torch.cat([
                    run[torch.argsort(self.lengths[run], descending=True, stable=True)]
                    for run in runs
                ])
            batches = list(order.split(self.batch_size))
            if self.length_groups:
                batches = [batches[i]
                           for i in torch.randperm(len(batches), generator=generator)]
            batches = batches[: self.num_batches()]
        return batches[self.rank :: self.world_size]

    def __iter__(self):
        for index in self.batch_indices():
            longest = int(self.lengths[index].max())
            width = min(self.ids.shape[1],
                        -(-longest // self.length_multiple) * self.length_multiple)
            # (B, width): reviews are left-aligned, pads at the end
            ids = self.ids[index, :width]
            yield ids, self.real_tokens(ids), self.labels[index]
