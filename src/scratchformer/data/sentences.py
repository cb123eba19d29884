"""Sentences of a review, cut from its GPT-2 tokens: short texts for a classifier to learn from
and be validated on.

A review of IMDB runs to a few hundred tokens; what a reader types into the book's box is
often one sentence. `review_sentences` cuts a review's tokens after every token that ends in
`.`, `!` or `?` (closing quotes and brackets allowed after it) and keeps the pieces of
`shortest` to `longest` tokens; `draw_sentences` draws up to `per_review` of them from each
review with a seed.

What this module deliberately does not handle: abbreviations ("Mr." ends a sentence here),
sentences without a final mark (a review's last words are kept only if they fit the lengths),
and a sentence's own sentiment (whoever uses them labels them: a teacher's verdict, or the
review's label as a noisy stand-in).

Written by hand, not exported: chapter 11 describes it in its section "Learning from
unlabelled reviews".
"""

import functools

import numpy as np

from scratchformer.data.framing import review_encoding

SENTENCE_ENDS = (".", "!", "?")
AFTER_END = "\"')] "  # may follow the mark within the same token


@functools.cache
def ends_sentence() -> np.ndarray:
    """`(vocab,)` bool: True for each GPT-2 token whose text ends a sentence."""
    encoding = review_encoding()
    table = np.zeros(encoding.n_vocab, dtype=bool)
    for token in range(encoding.n_vocab):
        text = encoding.decode_single_token_bytes(token).decode("utf-8", errors="replace")
        table[token] = text.rstrip(AFTER_END).endswith(SENTENCE_ENDS)
    return table


def review_sentences(tokens: np.ndarray, shortest: int = 3,
                     longest: int = 60) -> list[np.ndarray]:
    """The review's sentences `(n_i,)` in order, each `shortest` to `longest` tokens."""
    if not 1 <= shortest <= longest:
        raise ValueError(f"need 1 <= shortest <= longest, got {shortest} and {longest}")
    tokens = np.asarray(tokens)
    cuts = np.flatnonzero(ends_sentence()[tokens]) + 1  # a sentence ends after these
    bounds = np.unique(np.concatenate([[0], cuts, [len(tokens)]]))
    return [tokens[start:end] for start, end in zip(bounds[:-1], bounds[1:])
            if shortest <= end - start <= longest]


def draw_sentences(reviews: list[np.ndarray], per_review: int, seed: int,
                   shortest: int = 3, longest: int = 60) -> tuple[list[np.ndarray], list[int]]:
    """Up to `per_review` sentences of each review, drawn without replacement with `seed`:
    `(sentences, owners)`, `owners[j]` the index of the review sentence `j` came from.

    Described in chapter 11, section "Learning from unlabelled reviews".
    """
    if per_review < 1:
        raise ValueError(f"per_review must be at least 1, got {per_review}")
    generator = np.random.default_rng(seed)
    sentences, owners = [], []
    for index, tokens in enumerate(reviews):
        found = review_sentences(tokens, shortest, longest)
        if not found:
            continue
        chosen = generator.choice(len(found), min(per_review, len(found)), replace=False)
        for k in sorted(chosen.tolist()):
            sentences.append(found[k])
            owners.append(index)
    return sentences, owners
