"""Chapter 2: one-hot vectors and the token embedding lookup table."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scratchformer.nn.embedding import TokenEmbedding, one_hot

# The fixture is read-only, so reusing it across hypothesis examples is safe.
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_one_hot_spot_values(device: torch.device) -> None:
    ids = torch.tensor([[0, 2], [1, 2]], device=device)
    expected = torch.tensor(
        [[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]], device=device
    )
    result = one_hot(ids, 3)
    assert result.shape == (2, 2, 3)
    assert result.dtype == torch.float32
    assert result.device.type == device.type
    assert torch.equal(result, expected)


def test_one_hot_matches_torch(device: torch.device) -> None:
    ids = torch.tensor([7, 6, 3, 5, 0], device=device)
    assert torch.equal(one_hot(ids, 8, dtype=torch.int64), torch.nn.functional.one_hot(ids, 8))


def test_one_hot_rows_are_equally_far_apart(device: torch.device) -> None:
    rows = one_hot(torch.arange(8, device=device), 8)  # (8, 8)
    distances = torch.cdist(rows, rows)
    off_diagonal = distances[~torch.eye(8, dtype=torch.bool, device=device)]
    torch.testing.assert_close(off_diagonal, torch.full_like(off_diagonal, math.sqrt(2)), atol=1e-6, rtol=0)
    torch.testing.assert_close(rows @ rows.T, torch.eye(8, device=device), atol=0, rtol=0)


@pytest.mark.parametrize(
    ("ids", "num_classes", "message"),
    [
        (torch.tensor([0, 3]), 3, r"\[0, 3\); got values from 0 to 3"),
        (torch.tensor([-1, 1]), 3, "got values from -1 to 1"),
        (torch.tensor([0.0, 1.0]), 3, "integer tensor"),
        (torch.tensor([True]), 3, "integer tensor"),
        (torch.tensor([0]), 0, "num_classes must be positive"),
    ],
)
def test_one_hot_refuses_bad_input(ids: torch.Tensor, num_classes: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        one_hot(ids, num_classes)


def test_one_hot_of_no_ids(device: torch.device) -> None:
    assert one_hot(torch.empty(0, dtype=torch.long, device=device), 4).shape == (0, 4)


@PROPERTY
@given(ids=st.lists(st.integers(0, 11), min_size=1, max_size=20), seed=st.integers(0, 2**16))
def test_one_hot_product_equals_lookup(device: torch.device, ids: list[int], seed: int) -> None:
    torch.manual_seed(seed)
    embedding = TokenEmbedding(12, 8).to(device)
    ids_tensor = torch.tensor(ids, device=device)
    by_lookup = embedding(ids_tensor)
    by_product = one_hot(ids_tensor, 12) @ embedding.weight
    assert by_lookup.shape == (len(ids), 8)
    torch.testing.assert_close(by_lookup, by_product, atol=1e-6, rtol=0)


def test_one_hot_product_and_lookup_have_the_same_gradient(device: torch.device) -> None:
    torch.manual_seed(0)
    embedding = TokenEmbedding(8, 4).to(device)
    ids = torch.tensor([[7, 6, 3], [5, 0, 7]], device=device)  # (B, T); id 7 twice
    upstream = torch.randn(2, 3, 4, device=device)
    (embedding(ids) * upstream).sum().backward()
    grad_lookup = embedding.weight.grad.clone()
    embedding.zero_grad()
    (one_hot(ids, 8) @ embedding.weight * upstream).sum().backward()
    torch.testing.assert_close(grad_lookup, embedding.weight.grad, atol=1e-6, rtol=0)
    untouched = torch.tensor([1, 2, 4], device=device)
    assert torch.equal(grad_lookup[untouched], torch.zeros(3, 4, device=device))
    torch.testing.assert_close(grad_lookup[7], upstream[0, 0] + upstream[1, 2], atol=1e-6, rtol=0)


def test_token_embedding_shapes_and_rows(device: torch.device) -> None:
    torch.manual_seed(123)
    embedding = TokenEmbedding(50, 16).to(device)
    ids = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]], device=device)  # (B, T)
    vectors = embedding(ids)
    assert vectors.shape == (2, 5, 16)
    assert torch.equal(vectors[0, 1], embedding.weight[1])
    assert torch.equal(vectors[0, 1], vectors[0, 3])  # the same token gets the same vector
    assert embedding.weight.shape == (50, 16)
    assert embedding.weight.requires_grad


def test_token_embedding_padding_row_is_zero_and_frozen(device: torch.device) -> None:
    torch.manual_seed(0)
    embedding = TokenEmbedding(10, 4, padding_idx=9).to(device)
    ids = torch.tensor([[1, 2, 9, 9]], device=device)
    vectors = embedding(ids)
    assert torch.equal(vectors[0, 2:], torch.zeros(2, 4, device=device))
    vectors.sum().backward()
    assert torch.equal(embedding.weight.grad[9], torch.zeros(4, device=device))
    assert torch.equal(embedding.weight.grad[1], torch.ones(4, device=device))


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (torch.tensor([0, 10]), r"\[0, 10\); got values from 0 to 10"),
        (torch.tensor([-2]), "got values from -2 to -2"),
        (torch.tensor([1.0]), "integer tensor"),
    ],
)
def test_token_embedding_refuses_bad_ids(device: torch.device, ids: torch.Tensor, message: str) -> None:
    embedding = TokenEmbedding(10, 4).to(device)
    with pytest.raises(ValueError, match=message):
        embedding(ids.to(device))


@pytest.mark.parametrize(
    ("args", "message"),
    [((0, 4), "vocab_size and d_model must be positive"), ((4, 0), "must be positive"), ((4, 4, 4), "padding_idx")],
)
def test_token_embedding_refuses_bad_sizes(args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TokenEmbedding(*args)
