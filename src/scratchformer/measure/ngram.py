"""Count-based language models, as the appendix "Models that count" of *Transformers
from Scratch* builds them and chapter 12 measures a GPT against them: unigram and bigram
counts of a token stream, add-k smoothing, interpolated Kneser-Ney (bigram, and
`KneserNey` of any order), and bits per byte.

What this module deliberately does not handle: n-grams whose keys overflow 64 bits, modified
Kneser-Ney's three discounts, pruning, and backing off instead of interpolating.
"""

import math

import numpy as np


def bits_per_byte(nll_nats: float, num_bytes: int) -> float:
    """A text's total negative log-likelihood in nats, as bits per byte of its UTF-8 form.

    Described in chapter 12, section "A yardstick: counting models".
    """
    if num_bytes <= 0:
        raise ValueError(f"num_bytes must be positive, got {num_bytes}")
    return nll_nats / math.log(2) / num_bytes


class BigramCounts:
    """Token and adjacent-pair counts of a token stream, for unigram and bigram models.

    `stream` is 1-D, or 2-D with one sequence per row (pairs never cross two rows).
    `targets[w]` counts the positions after the first that hold `w`; the distinct pairs
    are kept as sorted keys `v * vocab_size + w` with their counts. Derived:
    `contexts[v]`, the pairs starting with `v`; `followers[v]`, the distinct tokens seen
    after `v`; `continuations[w]`, the distinct tokens seen before `w`.

    Described in the appendix "Models that count", section "Unigram and bigram models".
    """

    def __init__(self, stream: np.ndarray, vocab_size: int) -> None:
        stream = np.asarray(stream).astype(np.int64)
        rows = stream[None] if stream.ndim == 1 else stream  # (sequences, length)
        if stream.ndim not in (1, 2) or rows.shape[1] < 2 or len(rows) == 0:
            raise ValueError(f"need sequences of at least 2 tokens, got shape "
                             f"{stream.shape}")
        if stream.min() < 0 or stream.max() >= vocab_size:
            raise ValueError(f"token ids must lie in [0, {vocab_size}), got "
                             f"{stream.min()}..{stream.max()}")
        self.vocab_size = vocab_size
        previous, following = rows[:, :-1].ravel(), rows[:, 1:].ravel()
        keys = previous * vocab_size + following  # one key per adjacent pair
        self.pair_keys, self.pair_counts = np.unique(keys, return_counts=True)
        first, second = np.divmod(self.pair_keys, vocab_size)
        self.targets = np.bincount(following, minlength=vocab_size)
        self.contexts = np.bincount(previous, minlength=vocab_size)
        self.followers = np.bincount(first, minlength=vocab_size)
        self.continuations = np.bincount(second, minlength=vocab_size)

    def pair_count(self, previous: np.ndarray, following: np.ndarray) -> np.ndarray:
        """c(v, w) for arrays of previous tokens v and next tokens w (0 if never seen)."""
        keys = np.asarray(previous, np.int64) * self.vocab_size
        keys = keys + np.asarray(following, np.int64)
        where = np.minimum(np.searchsorted(self.pair_keys, keys), len(self.pair_keys) - 1)
        found = self.pair_keys[where] == keys
        return np.where(found, self.pair_counts[where], 0)


def unigram_log_prob(counts: BigramCounts, following: np.ndarray,
                     k: float = 1.0) -> np.ndarray:
    """log p(w) = log((c(w) + k) / (N + k V)): add-k smoothed token frequencies.

    Described in the appendix "Models that count", section "Unigram and bigram models".
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    total = counts.targets.sum() + k * counts.vocab_size
    return np.log((counts.targets[np.asarray(following)] + k) / total)


def add_k_bigram_log_prob(counts: BigramCounts, previous: np.ndarray,
                          following: np.ndarray, k: float) -> np.ndarray:
    """log p(w | v) = log((c(v, w) + k) / (c(v) + k V)).

    Described in the appendix "Models that count", section "Unigram and bigram models".
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    pairs = counts.pair_count(previous, following)
    contexts = counts.contexts[np.asarray(previous)]
    return np.log((pairs + k) / (contexts + k * counts.vocab_size))


def kneser_ney_discount(counts: BigramCounts) -> float:
    """D = n1 / (n1 + 2 n2) from the pairs seen once (n1) and twice (n2); 0.5 if n1 is 0.

    Described in the appendix "Models that count", section "Unigram and bigram models".
    """
    n1 = int((counts.pair_counts == 1).sum())
    n2 = int((counts.pair_counts == 2).sum())
    return n1 / (n1 + 2 * n2) if n1 else 0.5


def kneser_ney_bigram_log_prob(counts: BigramCounts, previous: np.ndarray,
                               following: np.ndarray,
                               discount: float | None = None) -> np.ndarray:
    """log p(w | v) of an interpolated Kneser-Ney bigram model (formula in the appendix).

    `discount` defaults to `kneser_ney_discount(counts)` and must lie in (0, 1]. The
    continuation distribution is interpolated with the uniform one, so every token of the
    vocabulary has a probability above zero.

    Described in the appendix "Models that count", section "Unigram and bigram models".
    """
    d = kneser_ney_discount(counts) if discount is None else discount
    if not 0 < d <= 1:
        raise ValueError(f"the discount must lie in (0, 1], got {d}")
    previous, following = np.asarray(previous), np.asarray(following)
    distinct_pairs = len(counts.pair_keys)
    seen_after_something = np.count_nonzero(counts.continuations)
    continuation = (np.maximum(counts.continuations[following] - d, 0)
                    + d * seen_after_something / counts.vocab_size) / distinct_pairs
    context = counts.contexts[previous].astype(np.float64)
    pairs = counts.pair_count(previous, following)
    seen = context > 0
    safe = np.where(seen, context, 1.0)
    backed_off = d * counts.followers[previous] * continuation
    interpolated = (np.maximum(pairs - d, 0) + backed_off) / safe
    return np.log(np.where(seen, interpolated, continuation))


def document_pairs(documents: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The (previous, next) token pairs inside each document, never across two.

    Described in the appendix "Models that count", section "Unigram and bigram models".
    """
    previous = [token for ids in documents for token in ids[:-1]]
    following = [token for ids in documents for token in ids[1:]]
    return np.array(previous, dtype=np.int64), np.array(following, dtype=np.int64)


class KneserNey:
    """Interpolated Kneser-Ney of order `order` (2 or more), counted from a 1-D stream.

    `levels[k]` holds order k's sorted gram keys, their counts (raw at the top order,
    continuation counts below) and discount; the unigram level takes order 2's discount,
    as `kneser_ney_bigram_log_prob` does. `contexts[k]` holds order k's sorted context
    keys, each context's summed count and its number of distinct next tokens.

    Described in the appendix "Models that count", section "Longer contexts".
    """

    def __init__(self, stream: np.ndarray, vocab_size: int, order: int) -> None:
        stream = np.asarray(stream).astype(np.int64).ravel()
        if order < 2 or len(stream) < order:
            raise ValueError(f"need order >= 2 and at least `order` tokens, got order "
                             f"{order} and {len(stream)} tokens")
        if vocab_size ** order >= 2**63:
            raise ValueError(f"{order}-grams over {vocab_size:,} tokens overflow the "
                             "64-bit keys")
        if stream.min() < 0 or stream.max() >= vocab_size:
            raise ValueError(f"token ids must lie in [0, {vocab_size}), got "
                             f"{stream.min()}..{stream.max()}")
        self.vocab_size, self.order = vocab_size, order
        grams = np.zeros(len(stream) - order + 1, dtype=np.int64)
        for j in range(order):  # each n-gram's tokens as the digits of one integer
            grams = grams * vocab_size + stream[j : len(stream) - order + 1 + j]
        keys, counts = np.unique(grams, return_counts=True)
        self.levels = {}
        for k in range(order, 1, -1):
            n1, n2 = int((counts == 1).sum()), int((counts == 2).sum())
            self.levels[k] = (keys, counts, n1 / (n1 + 2 * n2) if n1 else 0.5)
            # order k - 1 counts, per gram, the distinct tokens seen before it
            keys, counts = np.unique(keys % vocab_size ** (k - 1), return_counts=True)
        self.levels[1] = (keys, counts, self.levels[2][2])
        self.contexts = {}
        for k in range(2, order + 1):
            keys, counts, _ = self.levels[k]
            context_keys, first, distinct = np.unique(
                keys // vocab_size, return_index=True, return_counts=True)
            self.contexts[k] = (context_keys, np.add.reduceat(counts, first), distinct)

    def log_prob(self, history: np.ndarray, following: np.ndarray) -> np.ndarray:
        """log p(w | h) for `history` `(N, order - 1)`, -1 before a document's start, and
        next tokens `following` `(N,)`."""
        history = np.asarray(history, dtype=np.int64)
        following = np.asarray(following, dtype=np.int64)
        keys, counts, d = self.levels[1]
        count = np.maximum(found(keys, counts, following) - d, 0)
        prob = (count + d * len(keys) / self.vocab_size) / counts.sum()  # (N,)
        for k in range(2, self.order + 1):
            context = history[:, self.order - k :]  # (N, k - 1): the last k - 1 tokens
            context_key = np.zeros(len(following), dtype=np.int64)
            for j in range(k - 1):
                context_key = context_key * self.vocab_size + np.maximum(context[:, j], 0)
            context_keys, totals, distinct = self.contexts[k]
            keys, counts, d = self.levels[k]
            total = found(context_keys, totals, context_key)
            count = found(keys, counts, context_key * self.vocab_size + following)
            seen = (total > 0) & (context >= 0).all(axis=1)
            mixed = (np.maximum(count - d, 0)
                     + d * found(context_keys, distinct, context_key) * prob)
            prob = np.where(seen, mixed / np.where(seen, total, 1), prob)
        return np.log(prob)


def found(sorted_keys: np.ndarray, values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The value of each of `keys` in `sorted_keys`, 0 where a key is absent.

    Described in the appendix "Models that count", section "Longer contexts".
    """
    where = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return np.where(sorted_keys[where] == keys, values[where], 0)


def document_histories(documents: list[list[int]],
                       order: int) -> tuple[np.ndarray, np.ndarray]:
    """For each token after the first of each document: the `order - 1` tokens before it
    in the same document (-1 before its start) `(N, order - 1)`, and the token `(N,)`.

    Described in the appendix "Models that count", section "Longer contexts".
    """
    histories, following = [], []
    for ids in documents:
        padded = [-1] * (order - 1) + list(ids)
        for j in range(1, len(ids)):
            histories.append(padded[j : j + order - 1])
            following.append(ids[j])
    return (np.array(histories, dtype=np.int64).reshape(-1, order - 1),
            np.array(following, dtype=np.int64))
