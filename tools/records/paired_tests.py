"""Per-review paired tests for the records of chapter 11's controls: two classifiers' verdicts
on the same reviews compared review by review.

`mcnemar_exact`: of the reviews exactly one of the two gets right, how many each gets; the
two-sided exact p-value of so uneven a split if each were equally likely to be the one right
(the binomial distribution with p = 1/2). `bootstrap_mean_difference`: the reviews resampled
with replacement, the mean over seeds of the accuracy difference recomputed on each resample,
and the 2.5th and 97.5th percentiles of those means (a percentile interval).

What this deliberately does not handle: ties in confidence (only right and wrong count),
corrections for many comparisons, and other intervals than the percentile one.
"""

from __future__ import annotations

import math

import numpy as np

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20261206


def binomial_tail(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), summed exactly in log space."""
    if k < 0:
        return 0.0
    return min(1.0, sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1)
                                 - math.lgamma(n - i + 1) - n * math.log(2))
                        for i in range(min(k, n) + 1)))


def mcnemar_exact(a_right: np.ndarray, b_right: np.ndarray) -> dict:
    """McNemar's exact test of two classifiers' right/wrong on the same reviews `(N,)`."""
    a_right, b_right = np.asarray(a_right, bool), np.asarray(b_right, bool)
    if a_right.shape != b_right.shape:
        raise ValueError(f"{a_right.shape} against {b_right.shape}: the same reviews needed")
    only_a = int((a_right & ~b_right).sum())
    only_b = int((~a_right & b_right).sum())
    n = only_a + only_b
    p = 1.0 if n == 0 else min(1.0, 2 * binomial_tail(min(only_a, only_b), n))
    return {"only_first_right": only_a, "only_second_right": only_b,
            "both_right": int((a_right & b_right).sum()),
            "difference": (only_a - only_b) / len(a_right), "p_value": p,
            "test": "McNemar's exact test (two-sided binomial on the discordant reviews)"}


def bootstrap_mean_difference(a_right: np.ndarray, b_right: np.ndarray,
                              resamples: int = BOOTSTRAP_RESAMPLES,
                              seed: int = BOOTSTRAP_SEED, chunk: int = 250) -> dict:
    """The mean over seeds of accuracy(a) - accuracy(b), `a_right` and `b_right` `(S, N)`
    (S seeds, N reviews), with a 95% percentile interval from `resamples` resamples of the N
    reviews (the same resample for every seed)."""
    a_right, b_right = np.asarray(a_right, float), np.asarray(b_right, float)
    if a_right.shape != b_right.shape or a_right.ndim != 2:
        raise ValueError(f"need two (seeds, reviews) arrays alike, got {a_right.shape} "
                         f"and {b_right.shape}")
    per_review = (a_right - b_right).mean(axis=0)  # (N,): the seeds' mean difference
    n = len(per_review)
    generator = np.random.default_rng(seed)
    means = []
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        picks = generator.integers(0, n, size=(rows, n))
        means.append(per_review[picks].mean(axis=1))
    means = np.concatenate(means)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": float(per_review.mean()), "low": float(low), "high": float(high),
            "seeds": a_right.shape[0], "reviews": n, "resamples": resamples, "seed": seed,
            "interval": "95% percentile bootstrap over test reviews (one resample for all "
                        "seeds)"}
