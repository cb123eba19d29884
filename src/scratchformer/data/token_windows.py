"""Next-token training batches cut from one token stream, as chapter 12 of *Transformers from
Scratch* trains its GPT on them: window `i` is `T + 1` tokens starting at token `i * T`, its
first `T` tokens the inputs and its last `T` the targets; each epoch visits the windows in an
order fixed by the seed and the epoch, and under several processes each takes every
`world_size`-th batch, so that `batch(step)` is a pure function of the step and a resumed run
sees the batches an uninterrupted one would.

Apart from `scratchformer.data.windows` (the stream, generated from chapter 12) because its job
is another: batches for a loop that resumes and runs on several processes, bookkeeping the
chapter does not teach; it is written by hand. What it deliberately does not handle: windows
that overlap by more than one token, padding (every window is full), and streams that do not
fit in memory.
"""

import numpy as np
import torch
from torch import Tensor


class TokenWindows:
    """Next-token batches cut from one token stream: `(inputs, targets)`, both `(B, T)`.

    Window `i` is `stream[i * T : i * T + T + 1]`: its first `T` tokens are the inputs,
    its last `T` (the same tokens shifted by one) the targets. `batch(step)` is training
    batch `step`: each epoch visits every window once in an order fixed by `seed` and the
    epoch, the last incomplete batch is dropped, and process `rank` of `world_size` gets
    every `world_size`-th batch. Iterating yields every window once, in order, this
    process's share (for evaluation).

    Described in chapter 12, section "One stream, cut into windows".
    """

    def __init__(self, stream: Tensor | np.ndarray, context_length: int, batch_size: int,
                 seed: int = 0, rank: int = 0, world_size: int = 1) -> None:
        if isinstance(stream, np.ndarray):
            stream = torch.from_numpy(stream.astype(np.int32))
        if stream.dim() != 1 or stream.dtype.is_floating_point:
            raise ValueError(f"stream must be a 1-D integer tensor, got {stream.dtype} "
                             f"{tuple(stream.shape)}")
        if context_length <= 0 or batch_size <= 0:
            raise ValueError(f"context_length and batch_size must be positive, got "
                             f"{context_length} and {batch_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"need 0 <= rank < world_size, got {rank} and {world_size}")
        self.num_windows = (len(stream) - 1) // context_length
        if self.num_windows == 0:
            raise ValueError(f"a stream of {len(stream)} tokens holds no window of "
                             f"{context_length} + 1 tokens")
        self.stream, self.context_length = stream, context_length
        self.batch_size = batch_size
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self._order: tuple[int, Tensor] | None = None  # (epoch, its window order)

    def batches_per_epoch(self) -> int:
        """Training batches per epoch for this process (the same for every process)."""
        return self.num_windows // self.batch_size // self.world_size

    def windows(self, index: Tensor) -> tuple[Tensor, Tensor]:
        """Inputs and targets of the windows numbered `index`: `(len(index), T)` each."""
        offsets = torch.arange(self.context_length + 1)  # (T + 1,)
        tokens = self.stream[index[:, None] * self.context_length + offsets].long()
        return tokens[:, :-1], tokens[:, 1:]  # (B, T) each: targets = inputs shifted

    def check_batches(self) -> None:
        """Raise `ValueError` unless an epoch holds a batch for every process: what a
        command checks before it writes anything."""
        if self.batches_per_epoch() == 0:
            raise ValueError(f"{self.num_windows} windows make no batch of "
                             f"{self.batch_size} for each of {self.world_size} "
                             "process(es): lower batch_size, or train on more text")

    def batch(self, step: int) -> tuple[Tensor, Tensor]:
        """This process's training batch number `step`, counted from 0 over all epochs."""
        self.check_batches()
        epoch, number = divmod(step, self.batches_per_epoch())
        if self._order is None or self._order[0] != epoch:
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._order = (epoch, torch.randperm(self.num_windows, generator=generator))
        first = (number * self.world_size + self.rank) * self.batch_size
        return self.windows(self._order[1][first : first + self.batch_size])

    def __iter__(self):
        batches = torch.arange(self.num_windows).split(self.batch_size)
        for index in batches[self.rank :: self.world_size]:
            yield self.windows(index)
