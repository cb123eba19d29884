"""A classifier's exported ONNX file run on whole reviews, as the page's box runs it: each
review framed as the checkpoint was trained (chapter 10's cut, or chapter 11's windows), the
windows of one review run as rows, their logit gaps averaged with weights = their real
tokens over the review's, and each token's contribution scaled by its window's share.

What this deliberately does not handle: other outputs than the probability of "positive" and
the contributions (the attention is not read), and classifiers of more than two classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from scratchformer.data.framing import SpecialIds, frame_tokens
from scratchformer.data.review_windows import review_windows


def one_thread_session(model: Path):
    """ONNX Runtime on `model`, one CPU thread (as the records' measurements were made)."""
    import onnxruntime as ort  # optional: only the scripts that run an export need it

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def framed_rows(tokens: Sequence[int], framing: dict) -> list[list[int]]:
    """The rows the model reads for one review: its windows, or its one cut frame."""
    special = SpecialIds(pad=framing["pad"], cls=framing["cls"], sep=framing["sep"])
    if framing["truncation"] == "windows":
        return review_windows(list(tokens), framing["max_len"], special)
    return [frame_tokens(list(tokens), framing["max_len"], framing["truncation"], special)]


def onnx_reviews(session, token_lists: Sequence[Sequence[int]], framing: dict,
                 batch: int = 256) -> tuple[np.ndarray, list[np.ndarray]]:
    """P(positive) `(N,)` of each review, and each review's contributions (its real tokens'
    over all its rows, in order, scaled by their row's share of the review's tokens)."""
    rows, owner = [], []
    for review, tokens in enumerate(token_lists):
        for row in framed_rows(tokens, framing):
            rows.append(row)
            owner.append(review)
    ids = np.array(rows, dtype=np.int64)  # (W, T)
    parts = [session.run(["probabilities", "contributions"], {"ids": ids[i : i + batch]})
             for i in range(0, len(ids), batch)]
    probabilities = np.concatenate([p for p, _ in parts])  # (W, 2)
    contributions = np.concatenate([c for _, c in parts])  # (W, T)
    owner_ids = np.array(owner)
    real = ids != framing["pad"]  # (W, T)
    if framing["truncation"] != "windows":  # one row per review: the model's own answer
        return probabilities[:, 1], [c[r] for c, r in zip(contributions, real)]
    tokens = real.sum(axis=1).astype(np.float64)  # (W,)
    totals = np.bincount(owner_ids, weights=tokens, minlength=len(token_lists))  # (N,)
    share = tokens / totals[owner_ids]  # (W,)
    gaps = (np.log(probabilities[:, 1].astype(np.float64))
            - np.log(probabilities[:, 0].astype(np.float64)))  # (W,)
    review_gap = np.bincount(owner_ids, weights=share * gaps, minlength=len(token_lists))
    positive = 1 / (1 + np.exp(-review_gap))
    scaled = [[] for _ in token_lists]
    for window, review in enumerate(owner):
        scaled[review].append(contributions[window][real[window]] * share[window])
    return positive, [np.concatenate(parts) for parts in scaled]
