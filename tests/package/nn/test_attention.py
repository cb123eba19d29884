"""Chapter 4: scaled dot-product attention and SelfAttention, against the book's worked numbers."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scratchformer.nn.attention import SelfAttention, scaled_dot_product_attention

TOL = 1e-4

THE_NEXT_DAY_IS_BRIGHT = [
    [0.32, 0.21, 0.43, 0.21, 0.86, 0.67, 0.98, 0.23],
    [0.43, 0.56, 0.43, 0.56, 0.69, 0.21, 0.56, 0.21],
    [0.56, 0.21, 0.43, 0.21, 0.54, 0.12, 0.89, 0.98],
    [0.87, 0.34, 0.18, 0.32, 0.75, 0.12, 0.54, 0.92],
    [0.76, 0.21, 0.85, 0.34, 0.98, 0.23, 0.68, 0.34],
]

# The phone book: keys [about 张三, about 李四, is address, is phone]; values one-hot [西安, 138xxxx, 北京].
BOOK_KEYS = [[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0]]

# 苹果: features [verb, noun, food, tech] and the hand-made matrices of chapter 4.
W_K = [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
W_Q = [[0.0, 3.0], [3.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
W_V = [[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
I_EAT_APPLE = [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.5, 0.5]]
APPLE_RELEASES_PHONE = [[0.0, 1.0, 0.5, 0.5], [1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0]]


def tensor(rows, device):
    return torch.tensor(rows, dtype=torch.float32, device=device)


def test_phone_book_lookup(device):
    query = tensor([[3.0, 0.0, 3.0, 0.0]], device)  # where does 张三 live?
    keys = tensor(BOOK_KEYS, device)
    values = torch.eye(3, device=device)
    context, weights = scaled_dot_product_attention(query, keys, values)
    expected = torch.tensor([[0.6914, 0.1543, 0.1543]], device=device)
    assert torch.allclose(weights, expected, atol=TOL)
    assert torch.allclose(context, expected, atol=TOL), "one-hot values return the weights themselves"
    scores = query @ keys.T
    assert scores.tolist() == [[6.0, 3.0, 3.0]]
    assert torch.allclose(scores / 2, torch.tensor([[3.0, 1.5, 1.5]], device=device))


def test_phone_book_other_questions(device):
    queries = tensor([[3.0, 0.0, 0.0, 3.0], [0.0, 3.0, 3.0, 0.0]], device)  # 张三's phone, 李四's address
    context, _ = scaled_dot_product_attention(queries, tensor(BOOK_KEYS, device), torch.eye(3, device=device))
    assert context.argmax(dim=-1).tolist() == [1, 2]
    assert torch.allclose(context[:, [1, 2]].diagonal(), torch.tensor([0.7856, 0.7856], device=device), atol=TOL)


@pytest.mark.parametrize(
    "sentence, apple_row, verb_row, food, tech",
    [(I_EAT_APPLE, 2, 1, 0.8550, 0.0483), (APPLE_RELEASES_PHONE, 0, 1, 0.0483, 0.9517)],
)
def test_apple_in_two_sentences(device, sentence, apple_row, verb_row, food, tech):
    x = tensor(sentence, device)
    q, k, v = x @ tensor(W_Q, device), x @ tensor(W_K, device), x @ tensor(W_V, device)
    context, weights = scaled_dot_product_attention(q, k, v)
    assert weights[apple_row, verb_row].item() == pytest.approx(0.8066, abs=TOL)
    assert weights[apple_row, verb_row].item() == pytest.approx(math.exp(3 / math.sqrt(2)) / (math.exp(3 / math.sqrt(2)) + 2), abs=1e-6)
    assert context[apple_row].tolist() == pytest.approx([food, tech], abs=TOL)


def test_next_day_is_bright_shapes_and_module_equals_steps(device):
    inputs = tensor(THE_NEXT_DAY_IS_BRIGHT, device)
    torch.manual_seed(123)
    module = SelfAttention(d_in=8, d_out=4).to(device)
    assert module.W_query.shape == module.W_key.shape == module.W_value.shape == (8, 4)
    queries, keys, values = inputs @ module.W_query, inputs @ module.W_key, inputs @ module.W_value
    assert queries.shape == keys.shape == values.shape == (5, 4)
    scores = queries @ keys.T
    assert scores.shape == (5, 5)
    attn_weights = torch.softmax(scores / math.sqrt(4), dim=-1)
    context = attn_weights @ values
    assert context.shape == (5, 4)
    assert torch.allclose(module(inputs), context, atol=1e-6)
    batched = module(torch.stack([inputs, inputs]))
    assert batched.shape == (2, 5, 4)
    assert torch.allclose(batched[1], context, atol=1e-6)


# Chapter 4 draws W_query, W_key, W_value with torch.manual_seed(123) and torch.randn(8, 4);
# chapter 5 walks through the row of "next" that they give.
NEXT_SCORES = [-2.6032, -1.8173, -2.8593, -5.4179, -4.4573]


def chapter4_example(draw):
    """Weights and context vectors of "The next day is bright" with matrices from `draw`."""
    inputs = torch.tensor(THE_NEXT_DAY_IS_BRIGHT)
    torch.manual_seed(123)
    W_query, W_key, W_value = (draw(8, 4) for _ in range(3))
    scores = (inputs @ W_query) @ (inputs @ W_key).T
    context, weights = scaled_dot_product_attention(inputs @ W_query, inputs @ W_key, inputs @ W_value)
    return scores, weights, context


def test_chapter4_scores_of_next_are_chapter5s():
    scores, _, _ = chapter4_example(torch.randn)
    assert scores[1].tolist() == pytest.approx(NEXT_SCORES, abs=TOL)


def test_zero_mean_matrices_make_the_rows_differ():
    """Zero-mean matrices: the rows of weights and the context vectors clearly differ.
    All-positive ones (torch.rand) with the all-positive inputs make them nearly equal."""

    def spread(rows):
        return (rows[:, None] - rows[None]).abs().max().item()

    _, weights, context = chapter4_example(torch.randn)
    _, weights_pos, context_pos = chapter4_example(torch.rand)
    assert spread(weights) > 0.3 and spread(context) > 0.3
    assert spread(weights_pos) < 0.12 and spread(context_pos) < 0.05


def test_qkv_bias_is_used(device):
    torch.manual_seed(0)
    module = SelfAttention(3, 2, qkv_bias=True).to(device)
    assert {name for name, _ in module.named_parameters()} == {"W_query", "W_key", "W_value", "b_query", "b_key", "b_value"}
    x = torch.randn(4, 3, device=device)
    before = module(x)
    with torch.no_grad():
        module.b_value.fill_(1.0)
    assert torch.allclose(module(x), before + 1.0, atol=1e-6), "weights sum to 1, so a value bias shifts every context by it"


@settings(max_examples=30, deadline=None)
@given(
    seq_len=st.integers(1, 9),
    d=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    scale=st.floats(0.1, 30.0),
)
def test_rows_of_weights_sum_to_one(seq_len, d, seed, scale):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, seq_len, d, generator=generator) * scale for _ in range(3))
    _, weights = scaled_dot_product_attention(q, k, v)
    assert torch.isfinite(weights).all()
    assert torch.allclose(weights.sum(dim=-1), torch.ones(2, seq_len), atol=1e-5)
    assert (weights >= 0).all()


@settings(max_examples=30, deadline=None)
@given(seq_len=st.integers(2, 8), seed=st.integers(0, 2**16), data=st.data())
def test_permuting_inputs_permutes_outputs(seq_len, seed, data):
    permutation = data.draw(st.permutations(range(seq_len)))
    torch.manual_seed(seed)
    module = SelfAttention(d_in=6, d_out=4)
    x = torch.randn(seq_len, 6)
    order = torch.tensor(permutation)
    assert torch.allclose(module(x[order]), module(x)[order], atol=1e-5)


def test_permutation_equivariance_on_device(device):
    torch.manual_seed(1)
    module = SelfAttention(8, 4).to(device)
    inputs = tensor(THE_NEXT_DAY_IS_BRIGHT, device)
    order = torch.tensor([4, 2, 0, 3, 1], device=device)
    assert torch.allclose(module(inputs[order]), module(inputs)[order], atol=1e-6)


def test_mask_blocks_keys_and_fully_masked_rows_are_zero(device):
    torch.manual_seed(2)
    mask = torch.tensor([[True, False, True, False], [False, False, False, False], [True, True, True, True]], device=device)
    q = torch.randn(3, 4, device=device)
    k = torch.randn(4, 4, device=device)
    v = torch.randn(4, 5, device=device)
    context, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(weights).all() and torch.isfinite(context).all()
    assert (weights[~mask] == 0).all(), "masked weights are exactly zero"
    assert torch.allclose(weights.sum(-1), torch.tensor([1.0, 0.0, 1.0], device=device), atol=1e-6)
    assert (context[1] == 0).all()
    unmasked_context, _ = scaled_dot_product_attention(q, k[[0, 2]], v[[0, 2]])
    assert torch.allclose(context[0], unmasked_context[0], atol=1e-6), "masking = leaving the keys out"


def test_fully_masked_row_has_finite_gradients(device):
    q = torch.randn(2, 3, device=device, requires_grad=True)
    k = torch.randn(3, 3, device=device, requires_grad=True)
    v = torch.randn(3, 3, device=device, requires_grad=True)
    mask = torch.tensor([[True, True, False], [False, False, False]], device=device)
    context, _ = scaled_dot_product_attention(q, k, v, mask)
    context.sum().backward()
    for tensor_ in (q, k, v):
        assert torch.isfinite(tensor_.grad).all()


@pytest.mark.parametrize(
    "shapes, message",
    [
        (((5, 4), (5, 3), (5, 4)), r"same size d_k: q \(5, 4\) vs k \(5, 3\)"),
        (((5, 4), (5, 4), (6, 4)), r"same number of positions: k \(5, 4\) vs v \(6, 4\)"),
        (((4,), (5, 4), (5, 4)), r"at least 2 dimensions"),
    ],
)
def test_mismatched_shapes_raise_naming_both(shapes, message):
    q, k, v = (torch.zeros(shape) for shape in shapes)
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(q, k, v)


def test_bad_masks_raise():
    q = k = v = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match="boolean"):
        scaled_dot_product_attention(q, k, v, torch.ones(3, 3))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 2\) does not broadcast to the scores' shape \(2, 3, 3\)"):
        scaled_dot_product_attention(q, k, v, torch.ones(2, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask of shape \(4, 3, 3\)"):
        scaled_dot_product_attention(q, k, v, torch.ones(4, 3, 3, dtype=torch.bool))


def test_self_attention_rejects_wrong_input():
    module = SelfAttention(8, 4)
    with pytest.raises(ValueError, match=r"\(T, 8\) or \(B, T, 8\), got \(5, 7\)"):
        module(torch.zeros(5, 7))
    with pytest.raises(ValueError, match="got \\(1, 2, 5, 8\\)"):
        module(torch.zeros(1, 2, 5, 8))
    with pytest.raises(ValueError, match="positive"):
        SelfAttention(0, 4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("norm", [127.0, 300.0])
def test_16_bit_attention_stays_finite_like_torchs(device: torch.device, dtype: torch.dtype, norm: float) -> None:
    # |q| |k| = norm**2 > 65504 at norm 300: the unscaled float16 product overflows to inf.
    torch.manual_seed(0)
    q = torch.randn(2, 5, 64, device=device)
    q = (q / q.norm(dim=-1, keepdim=True) * norm).to(dtype)
    k, v = q.flip(1).clone(), torch.randn(2, 5, 64, device=device, dtype=dtype)
    mask = torch.ones(5, 5, dtype=torch.bool, device=device).tril()
    context, weights = scaled_dot_product_attention(q, k, v, mask)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert context.dtype == weights.dtype == dtype
    assert torch.isfinite(context).all() and torch.isfinite(weights).all()
    torch.testing.assert_close(context, expected, rtol=0, atol=3e-2)
