"""Chapter 5: why attention scores are divided by sqrt(d_k); the softmax tables of the chapter."""

from __future__ import annotations

import math

import pytest
import torch

from scratchformer.nn.attention import masked_softmax, scaled_dot_product_attention

# Source 001's raw 5x5 attention scores for "The next day is bright" (section 1.12): a separate
# example, from other matrices than chapter 4's (chapter 5 shows its "next" row as published).
RAW_SCORES = [
    [10.7, 10.0, 9.9, 10.3, 11.0],
    [11.0, 10.2, 10.1, 10.4, 11.2],
    [12.6, 11.7, 11.5, 12.0, 12.8],
    [13.2, 12.2, 12.0, 12.3, 13.4],
    [12.5, 11.5, 11.4, 11.5, 12.7],
]


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([1.0, 2.0, 3.0, 6.0], [0.0063, 0.0170, 0.0463, 0.9304]),
        ([1.0, 2.0, -3.0, 5.0], [0.0171, 0.0466, 0.0003, 0.9359]),
        ([11.0, 10.2, 10.1, 10.4, 11.2], [0.2758, 0.1239, 0.1121, 0.1514, 0.3368]),  # "next"
        ([1.0, 2.0, 3.0], [0.0900, 0.2447, 0.6652]),
        ([10.0, 20.0, 30.0], [0.0000, 0.0000, 1.0000]),
    ],
)
def test_softmax_tables(device: torch.device, scores: list, expected: list) -> None:
    weights = masked_softmax(torch.tensor(scores, device=device))
    torch.testing.assert_close(weights, torch.tensor(expected, device=device), rtol=0, atol=1e-4)


def test_simple_normalization_gives_negative_weights() -> None:
    scores = torch.tensor([1.0, 2.0, -3.0, 5.0])
    assert (scores / scores.sum()).tolist() == pytest.approx([0.2, 0.4, -0.6, 1.0])


def test_exp_10_4() -> None:
    assert round(math.exp(10.4)) == 32860  # not 32,960


SCALED_WEIGHTS = [  # softmax of each row of RAW_SCORES / 2, computed by hand
    [0.2296, 0.1618, 0.1539, 0.1880, 0.2667],
    [0.2407, 0.1614, 0.1535, 0.1783, 0.2661],
    [0.2463, 0.1570, 0.1421, 0.1824, 0.2722],
    [0.2565, 0.1556, 0.1408, 0.1636, 0.2835],
    [0.2567, 0.1557, 0.1481, 0.1557, 0.2837],
]


def test_scaled_5x5_scores(device: torch.device) -> None:
    raw = torch.tensor(RAW_SCORES, device=device)
    d_k = 4
    scaled = raw / math.sqrt(d_k)
    torch.testing.assert_close(scaled[1], torch.tensor([5.5, 5.1, 5.05, 5.2, 5.6], device=device))
    weights = masked_softmax(scaled)
    torch.testing.assert_close(weights, torch.tensor(SCALED_WEIGHTS, device=device), rtol=0, atol=1e-4)


@pytest.mark.parametrize("d_k", [4, 64, 1024])
def test_dot_product_variance_grows_like_d_k(device: torch.device, d_k: int) -> None:
    generator = torch.Generator(device).manual_seed(0)
    n = 20_000
    q = torch.randn(n, d_k, device=device, generator=generator)
    k = torch.randn(n, d_k, device=device, generator=generator)
    dots = (q * k).sum(-1)
    # the sample variance of n draws has relative standard error about sqrt(2/n) ~ 1%
    assert dots.var().item() == pytest.approx(d_k, rel=0.05)
    assert (dots / math.sqrt(d_k)).var().item() == pytest.approx(1.0, rel=0.05)


def test_scaled_dot_product_attention_divides_by_sqrt_d_k(device: torch.device) -> None:
    generator = torch.Generator(device).manual_seed(0)
    q, k, v = (torch.randn(5, 4, device=device, generator=generator) for _ in range(3))
    _, weights = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(weights, masked_softmax(q @ k.T / 2), rtol=0, atol=1e-6)
