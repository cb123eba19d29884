"""Batches of encoded IMDB reviews, as chapter 11 of *Transformers from Scratch* feeds them
to its classifier.

`ReviewLoader` cuts each batch to its longest review (rounded up to a multiple of 32),
shuffles every epoch in an order fixed by the seed and the epoch, groups reviews of
similar length when asked, and gives each of several processes its share of the batches.
`WindowedReviews` holds reviews read whole, in windows (chapter 11, "Reading the whole
review"), flat, and makes their `(B, K, T)` batches.

What this module deliberately does not handle: tokenizing (it takes what `encode_reviews`
makes), background workers or pinned memory, sampling with replacement or by class, and
data that does not fit in memory.

Written by hand, not exported: chapter 11 describes the batching (section "Batches") and uses
this module.
"""

import math
import torch
from torch import Tensor
from scratchformer.data.framing import PAD_ID
from scratchformer.nn.attention import padding_mask


class WindowedReviews:
    """Reviews read in windows: every review's framed windows stacked flat as `windows`
    `(W, T)`, review `i` owning rows `offsets[i]:offsets[i + 1]`.

    `len` counts reviews; indexing with a tensor of review indices gives those reviews, as
    indexing an `(N, T)` tensor does; `batch(index)` gives them as `(B, K, T)` ids, K the
    most windows any of them has (all-padding windows fill the rest), cut to the longest
    window rounded up to a multiple of `length_multiple`. `lengths` `(N,)` counts each
    review's real tokens over all its windows.

    Described in chapter 11, section "Reading the whole review".
    """

    def __init__(self, windows: Tensor, offsets: Tensor, pad_id: int = PAD_ID) -> None:
        if (windows.dim() != 2 or offsets.dim() != 1 or len(offsets) == 0
                or offsets[0] != 0 or offsets[-1] != len(windows)
                or bool((offsets.diff() <= 0).any())):
            raise ValueError(f"need windows (W, T) and offsets (N + 1,) rising from 0 "
                             f"to W, every review owning a window; got windows "
                             f"{tuple(windows.shape)}, offsets {offsets.tolist()[:8]}...")
        self.windows, self.offsets, self.pad_id = windows, offsets, pad_id
        self.window_lengths = (windows != pad_id).sum(dim=1)  # (W,) real tokens
        counts = offsets.diff()  # (N,) windows per review
        owner = torch.repeat_interleave(torch.arange(len(counts)), counts)  # (W,)
        self.lengths = torch.zeros(len(counts), dtype=torch.long).index_add_(
            0, owner, self.window_lengths)  # (N,) real tokens per review

    @classmethod
    def from_reviews(cls, reviews: list[list[list[int]]],
                     pad_id: int = PAD_ID) -> "WindowedReviews":
        """From each review's framed windows, as `review_windows` makes them."""
        counts = torch.tensor([len(windows) for windows in reviews], dtype=torch.long)
        offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        windows = torch.tensor([w for windows in reviews for w in windows],
                               dtype=torch.long)  # (W, T)
        return cls(windows, offsets, pad_id)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: Tensor) -> "WindowedReviews":
        starts, ends = self.offsets[:-1][index], self.offsets[1:][index]
        rows = torch.cat([torch.arange(int(a), int(b)) for a, b in zip(starts, ends)])
        offsets = torch.cat([starts.new_zeros(1), (ends - starts).cumsum(0)])
        return WindowedReviews(self.windows[rows], offsets, self.pad_id)

    def batch(self, index: Tensor, length_multiple: int = 32) -> Tensor:
        """Reviews `index` as `(B, K, T)` ids, left-aligned, pads at the end."""
        starts, ends = self.offsets[:-1][index], self.offsets[1:][index]
        rows = [torch.arange(int(a), int(b)) for a, b in zip(starts, ends)]
        longest = int(torch.cat([self.window_lengths[r] for r in rows]).max())
        width = min(self.windows.shape[1],
                    -(-longest // length_multiple) * length_multiple)
        ids = self.windows.new_full((len(rows), int((ends - starts).max()), width),
                                    self.pad_id)  # (B, K, width)
        for review, row in enumerate(rows):
            ids[review, : len(row)] = self.windows[row, :width]
        return ids


class ReviewLoader:
    """Batches `(ids, attention_mask, labels)` of encoded reviews, cut to fit their
    longest review.

    `ids` is `(N, T)` as `encode_reviews` makes it, or `WindowedReviews` (then batches
    are `(B, K, T)`, see its `batch`), `labels` is `(N,)`. With `shuffle`,
    each epoch (`set_epoch`) has its own order fixed by `seed`; with `length_groups > 0`,
    runs of that many batches are sorted by length before batching (without `shuffle`: the
    whole set). With `world_size > 1`, this process gets every `world_size`-th batch from
    `rank` on, and in shuffled mode every process gets the same number of batches. A batch
    is cut to its longest review rounded up to a multiple of `length_multiple`, so that
    only a few tensor shapes occur. The mask is chapter 6's padding mask as `(B, T)` (or
    `(B, K, T)`): True where an id is not `pad_id`.

    Described in chapter 11, section "Batches".
    """

    def __init__(
        self,
        ids: Tensor | WindowedReviews,
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
        windowed = isinstance(ids, WindowedReviews)
        if windowed and (labels.dim() != 1 or len(labels) != len(ids)):
            raise ValueError(f"need labels ({len(ids)},) for {len(ids)} windowed "
                             f"reviews, got {tuple(labels.shape)}")
        if not windowed and (ids.dim() != 2 or labels.shape != ids.shape[:1]):
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
        # (N,) real tokens per review
        self.lengths = ids.lengths if windowed else self.real_tokens(ids).sum(dim=1)
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
        if isinstance(self.ids, WindowedReviews):
            for index in self.batch_indices():
                ids = self.ids.batch(index, self.length_multiple)  # (B, K, width)
                yield ids, ids != self.pad_id, self.labels[index]
            return
        for index in self.batch_indices():
            longest = int(self.lengths[index].max())
            width = min(self.ids.shape[1],
                        -(-longest // self.length_multiple) * self.length_multiple)
            # (B, width): reviews are left-aligned, pads at the end
            ids = self.ids[index, :width]
            yield ids, self.real_tokens(ids), self.labels[index]
