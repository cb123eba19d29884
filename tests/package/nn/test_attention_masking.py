"""Chapter 6: causal and padding masks, and the softmax that respects them."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from scratchformer.nn.attention import (causal_mask, masked_softmax, padding_mask,
                                        scaled_dot_product_attention)

# Source 001's scaled scores for "computer science is the study" (section 1.13).
SCALED_SCORES = [[0.5 + 0.25 * i + 0.5 * j for j in range(5)] for i in range(5)]
CAUSAL_WEIGHTS = [  # softmax over each row's first i+1 entries, computed by hand
    [1.0, 0.0, 0.0, 0.0, 0.0],
    [0.3775, 0.6225, 0.0, 0.0, 0.0],
    [0.1863, 0.3072, 0.5065, 0.0, 0.0],
    [0.1015, 0.1674, 0.2760, 0.4551, 0.0],
    [0.0580, 0.0956, 0.1577, 0.2600, 0.4287],
]


def test_causal_mask_5x5(device: torch.device) -> None:
    mask = causal_mask(5, device=device)
    assert mask.dtype == torch.bool and mask.shape == (5, 5) and mask.device.type == device.type
    expected = torch.tensor([[j <= i for j in range(5)] for i in range(5)], device=device)
    assert torch.equal(mask, expected)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_causal_mask_rejects_what_is_not_a_positive_integer(bad: object) -> None:
    with pytest.raises(ValueError, match=f"seq_len must be a positive integer, got {bad!r}"):
        causal_mask(bad)


def test_tril_3x3(device: torch.device) -> None:
    A = torch.arange(1.0, 10.0, device=device).view(3, 3)
    expected = torch.tensor([[1.0, 0, 0], [4, 5, 0], [7, 8, 9]], device=device)
    assert torch.equal(torch.tril(A), expected)
    assert torch.equal(A * causal_mask(3, device=device), expected)


def test_padding_mask_shape_and_values(device: torch.device) -> None:
    ids = torch.tensor([[101, 7, 8, 102, 0, 0], [101, 9, 102, 0, 0, 0]], device=device)
    mask = padding_mask(ids, pad_id=0)
    assert mask.shape == (2, 1, 1, 6) and mask.dtype == torch.bool
    assert mask[:, 0, 0].tolist() == [[True] * 4 + [False] * 2, [True] * 3 + [False] * 3]


def test_padding_mask_rejects_wrong_rank() -> None:
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        padding_mask(torch.zeros(6, dtype=torch.long), pad_id=0)


@pytest.mark.parametrize(
    ("scores", "allowed", "expected"),
    [
        ([2.0, 3.0, 5.0], [True, True, True], [0.0420, 0.1142, 0.8438]),
        ([2.0, 3.0, 5.0], [True, False, False], [1.0, 0.0, 0.0]),
        ([2.0, 3.0, 5.0], [True, True, False], [0.2689, 0.7311, 0.0]),
    ],
)
def test_softmax_with_minus_infinity(device: torch.device, scores: list, allowed: list, expected: list) -> None:
    scores_t = torch.tensor(scores, device=device)
    allowed_t = torch.tensor(allowed, device=device)
    weights = masked_softmax(scores_t, allowed_t)
    torch.testing.assert_close(weights, torch.tensor(expected, device=device), rtol=0, atol=1e-4)
    # the same numbers from the -inf written into the scores by hand
    by_hand = torch.softmax(scores_t.masked_fill(~allowed_t, float("-inf")), dim=-1)
    torch.testing.assert_close(by_hand, weights, rtol=0, atol=0)


def test_causal_weights_of_the_source_scores(device: torch.device) -> None:
    scores = torch.tensor(SCALED_SCORES, device=device)
    weights = masked_softmax(scores, causal_mask(5, device=device))
    torch.testing.assert_close(weights, torch.tensor(CAUSAL_WEIGHTS, device=device), rtol=0, atol=1e-4)
    assert torch.equal(weights.triu(1), torch.zeros_like(weights))


def zero_then_renormalize(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Source 001's first recipe: softmax over everything, zero the future, divide by the row sum."""
    weights = torch.softmax(scores, dim=-1) * mask
    return weights / weights.sum(dim=-1, keepdim=True)


def test_zero_then_renormalize_equals_minus_inf_on_the_source_scores(device: torch.device) -> None:
    scores = torch.tensor(SCALED_SCORES, device=device, dtype=torch.float64)
    mask = causal_mask(5, device=device)
    torch.testing.assert_close(
        zero_then_renormalize(scores, mask), masked_softmax(scores, mask), rtol=0, atol=1e-12
    )


@settings(max_examples=60, deadline=None)
@given(
    scores=hnp.arrays(
        "float64", st.tuples(st.integers(1, 8), st.integers(1, 8)), elements=st.floats(-20, 20)
    ),
)
def test_zero_then_renormalize_equals_minus_inf(scores) -> None:  # type: ignore[no-untyped-def]
    """No future score changes the renormalized weights: the two recipes agree for any scores."""
    s = torch.from_numpy(scores)
    rows, cols = s.shape
    mask = torch.ones(rows, cols, dtype=torch.bool).tril()
    mask[:, 0] = True  # every row keeps at least one key
    torch.testing.assert_close(zero_then_renormalize(s, mask), masked_softmax(s, mask), rtol=1e-9, atol=1e-12)
    # and changing the masked ("future") scores changes nothing
    s_changed = torch.where(mask, s, s + 7.0)
    torch.testing.assert_close(
        zero_then_renormalize(s_changed, mask), zero_then_renormalize(s, mask), rtol=1e-9, atol=1e-12
    )


def test_zero_then_renormalize_underflows_where_minus_inf_does_not() -> None:
    """The reason to prefer -inf: with a large future score the kept weights underflow to 0 (0/0 = NaN)."""
    scores = torch.tensor([[0.0, 200.0]])
    mask = torch.tensor([[True, False]])
    assert torch.isnan(zero_then_renormalize(scores, mask)).all()
    assert masked_softmax(scores, mask).tolist() == [[1.0, 0.0]]


def test_fully_masked_row_is_zero_not_nan(device: torch.device) -> None:
    scores = torch.randn(2, 3, device=device)
    mask = torch.tensor([[True, False, True], [False, False, False]], device=device)
    weights = masked_softmax(scores, mask)
    assert not torch.isnan(weights).any()
    assert torch.equal(weights[1], torch.zeros(3, device=device))
    torch.testing.assert_close(weights[0].sum(), torch.tensor(1.0, device=device), rtol=0, atol=1e-6)


def test_padding_and_causal_combined(device: torch.device) -> None:
    torch.manual_seed(0)
    ids = torch.tensor([[4, 5, 6, 0], [0, 0, 0, 0]], device=device)
    mask = padding_mask(ids, 0) & causal_mask(4, device=device)  # (B, 1, T, T)
    assert mask.shape == (2, 1, 4, 4)
    q = torch.randn(2, 2, 4, 8, device=device)
    context, weights = scaled_dot_product_attention(q, q, q, mask=mask)
    assert not torch.isnan(weights).any() and not torch.isnan(context).any()
    assert torch.equal(weights[~mask.expand_as(weights)], torch.zeros_like(weights[~mask.expand_as(weights)]))
    row_sums = weights.sum(-1)
    torch.testing.assert_close(row_sums[0], torch.ones_like(row_sums[0]), rtol=0, atol=1e-6)
    assert torch.equal(row_sums[1], torch.zeros_like(row_sums[1]))  # all padding: nothing to attend to


def test_masked_softmax_rejects_bad_masks() -> None:
    with pytest.raises(ValueError, match="boolean"):
        masked_softmax(torch.zeros(2, 2), torch.ones(2, 2))
    with pytest.raises(ValueError, match="does not broadcast"):
        masked_softmax(torch.zeros(2, 2), torch.ones(3, 3, dtype=torch.bool))


@settings(max_examples=60, deadline=None)
@given(
    scores=hnp.arrays("float32", st.tuples(st.integers(1, 6), st.integers(1, 6)), elements=st.floats(-30, 30, width=32)),
    data=st.data(),
)
def test_masked_weights_are_exactly_zero_and_rows_sum_to_one_or_zero(scores, data) -> None:  # type: ignore[no-untyped-def]
    s = torch.from_numpy(scores)
    mask = torch.from_numpy(data.draw(hnp.arrays("bool", s.shape)))
    weights = masked_softmax(s, mask)
    assert torch.equal(weights[~mask], torch.zeros_like(weights[~mask]))
    expected = mask.any(-1).float()
    torch.testing.assert_close(weights.sum(-1), expected, rtol=0, atol=1e-5)


def test_masked_softmax_gradient_is_finite_and_zero_where_masked(device: torch.device) -> None:
    scores = torch.randn(3, 4, device=device, requires_grad=True)
    mask = torch.tensor([[True, True, False, True], [False] * 4, [True, False, False, False]], device=device)
    weights = masked_softmax(scores, mask)
    (weights * torch.randn(3, 4, device=device)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert torch.equal(scores.grad[~mask], torch.zeros_like(scores.grad[~mask]))
    # the same as writing -inf into the scores, for rows that allow something
    reference = torch.softmax(scores.detach().masked_fill(~mask, float("-inf")), dim=-1)
    torch.testing.assert_close(weights[[0, 2]], reference[[0, 2]], rtol=0, atol=0)
