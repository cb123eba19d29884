"""Chapter 7: inverted dropout from scratch, and causal self-attention with dropout."""

from __future__ import annotations

import pytest
import torch

from scratchformer.nn.attention import (CausalSelfAttention, Dropout, causal_mask,
                                        dropout, masked_softmax)


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_p_outside_unit_interval_raises(p: float) -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        dropout(torch.ones(3), p)


def test_eval_and_p_zero_are_the_identity(device: torch.device) -> None:
    x = torch.randn(4, 5, device=device)
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x


def test_survivors_are_scaled_by_one_over_keep_probability(device: torch.device) -> None:
    x = torch.ones(1000, device=device)
    out = dropout(x, 0.2, generator=torch.Generator(device).manual_seed(0))
    assert set(out.unique().tolist()) <= {0.0, 1.25}


def test_generator_makes_it_reproducible(device: torch.device) -> None:
    x = torch.randn(50, device=device)
    a = dropout(x, 0.5, generator=torch.Generator(device).manual_seed(3))
    b = dropout(x, 0.5, generator=torch.Generator(device).manual_seed(3))
    assert torch.equal(a, b)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_statistics_match_torch_dropout(device: torch.device, p: float) -> None:
    """Mean and fraction of zeros agree with torch.nn.Dropout within 5 standard errors."""
    n = 200_000
    x = torch.full((n,), 3.0, device=device)
    ours = dropout(x, p, generator=torch.Generator(device).manual_seed(0))
    torch.manual_seed(0)
    theirs = torch.nn.Dropout(p).train()(x)
    std_error_mean = 3.0 * (p / (1 - p)) ** 0.5 / n**0.5  # an entry is 3/(1-p) w.p. 1-p, else 0
    std_error_frac = (p * (1 - p) / n) ** 0.5
    for out in (ours, theirs):
        assert abs(out.mean().item() - 3.0) < 5 * std_error_mean
        assert abs((out == 0).float().mean().item() - p) < 5 * std_error_frac
    assert abs(ours.mean().item() - theirs.mean().item()) < 10 * std_error_mean
    # both keep exactly two values, 0 and 3/(1-p) (up to the last bit of the scale)
    torch.testing.assert_close(ours.unique(), theirs.unique(), rtol=1e-6, atol=0)


def test_dropout_never_unmasks_the_future(device: torch.device) -> None:
    scores = torch.randn(64, 6, 6, device=device)
    weights = masked_softmax(scores, causal_mask(6, device=device))
    dropped = dropout(weights, 0.5, generator=torch.Generator(device).manual_seed(0))
    assert torch.equal(dropped.triu(1), torch.zeros_like(dropped.triu(1)))
    # rows no longer sum to 1, but their average over many draws does
    row_sums = dropped.sum(-1)
    assert not torch.allclose(row_sums, torch.ones_like(row_sums))
    generator = torch.Generator(device).manual_seed(1)
    many = torch.stack([dropout(weights, 0.5, generator=generator) for _ in range(400)]).mean(0)
    # a row sum has standard deviation at most 1 per draw, 0.05 averaged over 400: allow 5 of them
    torch.testing.assert_close(many.sum(-1), torch.ones_like(row_sums), rtol=0, atol=0.25)


def test_causal_self_attention(device: torch.device) -> None:
    torch.manual_seed(0)
    layer = CausalSelfAttention(8, 4, dropout=0.5).to(device)
    x = torch.randn(2, 5, 8, device=device)
    layer.eval()
    out = layer(x)
    assert out.shape == (2, 5, 4)
    changed = x.clone()
    changed[:, 3:] += 1.0
    torch.testing.assert_close(layer(changed)[:, :3], out[:, :3], rtol=0, atol=1e-6)
    # the first position attends only to itself: its context is its own value vector
    torch.testing.assert_close(out[:, 0], x[:, 0] @ layer.W_value, rtol=0, atol=1e-5)
    layer.train()
    assert not torch.allclose(layer(x), out)


def test_causal_self_attention_rejects_bad_dropout() -> None:
    with pytest.raises(ValueError, match="dropout"):
        CausalSelfAttention(8, 4, dropout=1.0)


def test_source_row_example(device: torch.device) -> None:
    """[0.25, 0.26, 0.25, 0.24] with the 2nd and 4th dropped at p = 0.5 becomes [0.5, 0, 0.5, 0]."""
    row = torch.tensor([0.25, 0.26, 0.25, 0.24], device=device)
    keep = torch.tensor([True, False, True, False], device=device)
    expected = torch.tensor([0.5, 0.0, 0.5, 0.0], device=device)
    torch.testing.assert_close(row * keep / (1 - 0.5), expected, rtol=0, atol=1e-4)
    # every output of dropout is 0 or the input scaled by 1/(1-p)
    out = dropout(row, 0.5, generator=torch.Generator(device).manual_seed(0))
    assert all(o == 0 or abs(o - 2 * r) < 1e-6 for o, r in zip(out.tolist(), row.tolist()))


# The layer form -----------------------------------------------------------------------------------


def test_dropout_layer_equals_the_function_under_the_same_seed(device: torch.device) -> None:
    x = torch.randn(8, 16, device=device)
    layer = Dropout(0.3).to(device).train()
    torch.manual_seed(0)
    ours = layer(x)
    torch.manual_seed(0)
    expected = dropout(x, 0.3, True)
    assert torch.equal(ours, expected)
    assert not torch.equal(ours, x)


def test_dropout_layer_drops_the_chapter_count() -> None:
    torch.manual_seed(0)
    out = Dropout(0.25).train()(torch.ones(1000))
    assert int((out == 0).sum()) == 251
    assert torch.equal(out.unique(), torch.tensor([0.0, 1 / 0.75]))


def test_dropout_layer_in_eval_mode_is_the_identity(device: torch.device) -> None:
    x = torch.randn(4, 5, device=device)
    assert Dropout(0.9).eval()(x) is x
    assert Dropout(0.0).train()(x) is x


def test_dropout_layer_follows_its_parent_mode() -> None:
    model = torch.nn.Sequential(torch.nn.Identity(), Dropout(0.5))
    assert model[1].training
    model.eval()
    assert not model[1].training


def test_dropout_layer_shows_its_rate() -> None:
    assert repr(Dropout(0.25)) == "Dropout(p=0.25)"
    assert Dropout(0).p == 0.0 and isinstance(Dropout(0).p, float)


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5, float("nan"), True, "0.1", None])
def test_dropout_layer_rejects_a_bad_rate(p) -> None:
    with pytest.raises(ValueError, match=r"dropout probability p must be a number in \[0, 1\), got "):
        Dropout(p)
