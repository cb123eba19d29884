"""Chapter 8: multi-head attention, its two implementations, and torch's reference module."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scratchformer.nn.attention import MultiHeadAttention, causal_mask, padding_mask

IMPLS = ["explicit", "sdpa"]


def make_mha(device: torch.device, impl: str = "explicit", seed: int = 0, **kwargs: object) -> MultiHeadAttention:
    torch.manual_seed(seed)
    return MultiHeadAttention(**{"d_in": 16, "d_out": 16, "num_heads": 4, "impl": impl, **kwargs}).to(device)


def test_d_out_not_divisible_by_heads_raises() -> None:
    # Source 001's BERT listing uses dim=256 with heads=6.
    with pytest.raises(ValueError, match=r"d_out \(256\) must be divisible by num_heads \(6\)"):
        MultiHeadAttention(256, 256, 6)


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="impl"):
        MultiHeadAttention(8, 8, 2, impl="flash")
    with pytest.raises(ValueError, match="dropout"):
        MultiHeadAttention(8, 8, 2, dropout=1.0)
    mha = MultiHeadAttention(8, 8, 2)
    with pytest.raises(ValueError, match=r"\(B, T, 8\)"):
        mha(torch.zeros(3, 8))
    with pytest.raises(ValueError, match="boolean"):
        mha(torch.zeros(1, 3, 8), mask=torch.ones(3, 3))
    with pytest.raises(ValueError, match="does not broadcast"):
        mha(torch.zeros(1, 3, 8), mask=torch.ones(4, 4, dtype=torch.bool))


@pytest.mark.parametrize("impl", IMPLS)
def test_output_shape(device: torch.device, impl: str) -> None:
    mha = MultiHeadAttention(6, 4, 2, impl=impl).to(device)
    out = mha(torch.randn(2, 5, 6, device=device))
    assert out.shape == (2, 5, 4)


def kid_smiles(device: torch.device) -> torch.Tensor:
    return torch.tensor(
        [[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [6.0, 5.0, 4.0, 3.0, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]],
        device=device,
    )


def test_kid_smiles_head_split_shapes(device: torch.device) -> None:
    x = kid_smiles(device)  # (1, 3, 6): "The kid smiles"
    mha = MultiHeadAttention(6, 6, 2).to(device)
    q = mha.W_query(x)
    assert q.shape == (1, 3, 6)
    split = mha.split_heads(q)
    assert split.shape == (1, 2, 3, 3)
    # head h of token t is features h*3 .. h*3+2 of that token's projection
    for t in range(3):
        for h in range(2):
            assert torch.equal(split[0, h, t], q[0, t, 3 * h : 3 * h + 3])
    assert torch.equal(mha.merge_heads(split), q)


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 3),
    seq_len=st.integers(1, 6),
    num_heads=st.integers(1, 4),
    head_dim=st.integers(1, 4),
)
def test_split_merge_round_trip(batch: int, seq_len: int, num_heads: int, head_dim: int) -> None:
    d_out = num_heads * head_dim
    mha = MultiHeadAttention(3, d_out, num_heads)
    x = torch.randn(batch, seq_len, d_out)
    heads = mha.split_heads(x)
    assert heads.shape == (batch, num_heads, seq_len, head_dim)
    assert torch.equal(mha.merge_heads(heads), x)


def test_one_big_matrix_equals_per_head_matrices(device: torch.device) -> None:
    torch.manual_seed(0)
    x = kid_smiles(device)
    W = torch.randn(6, 6, device=device)  # (d_in, d_out): both heads' query weights side by side
    big = (x @ W).view(1, 3, 2, 3).transpose(1, 2)  # (B, H, T, head_dim)
    for h in range(2):
        per_head = x @ W[:, 3 * h : 3 * h + 3]  # (B, T, head_dim) with the head's own (6, 3) matrix
        torch.testing.assert_close(big[:, h], per_head, rtol=0, atol=1e-5)


def test_two_heads_by_hand_match_module(device: torch.device) -> None:
    """Per-head attention with separate weight slices, concatenated and projected, equals the module."""
    mha = make_mha(device, d_in=8, d_out=4, num_heads=2)
    x = torch.randn(1, 5, 8, device=device)
    heads = []
    for h in range(2):
        cols = slice(2 * h, 2 * h + 2)
        q = x @ mha.W_query.weight[cols].T  # (1, 5, 2)
        k = x @ mha.W_key.weight[cols].T
        v = x @ mha.W_value.weight[cols].T
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(2), dim=-1)
        heads.append(weights @ v)
    expected = mha.out_proj(torch.cat(heads, dim=-1))
    torch.testing.assert_close(mha(x), expected, rtol=0, atol=1e-5)


def masks(device: torch.device) -> dict[str, torch.Tensor | None]:
    ids = torch.tensor([[5, 6, 7, 8, 0, 0], [1, 2, 3, 0, 0, 0], [0, 0, 0, 0, 0, 0]], device=device)
    return {
        "none": None,
        "padding": padding_mask(ids, pad_id=0),  # row 2 is all padding: every query fully masked
        "square": causal_mask(6, device=device).flip(0),  # (T, T); rows differ in what they allow
        "per_head": torch.rand(3, 4, 6, 6, device=device, generator=torch.Generator(device).manual_seed(1)) > 0.5,
    }


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_name", ["none", "padding", "square", "per_head"])
def test_sdpa_matches_explicit_outputs_and_gradients(device: torch.device, causal: bool, mask_name: str) -> None:
    mask = masks(device)[mask_name]
    x = torch.randn(3, 6, 16, device=device)
    results = []
    for impl in IMPLS:
        mha = make_mha(device, impl, causal=causal, qkv_bias=True)
        x_in = x.clone().requires_grad_(True)
        out = mha(x_in, mask=mask)
        out.square().sum().backward()
        grads = [x_in.grad] + [p.grad for p in mha.parameters()]
        results.append((out.detach(), grads))
    (out_e, grads_e), (out_s, grads_s) = results
    assert not torch.isnan(out_e).any() and not torch.isnan(out_s).any()
    torch.testing.assert_close(out_s, out_e, rtol=0, atol=1e-5)
    for g_s, g_e in zip(grads_s, grads_e):
        assert torch.isfinite(g_e).all() and torch.isfinite(g_s).all()
        torch.testing.assert_close(g_s, g_e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("impl", IMPLS)
def test_all_padding_sequence_gives_zero_context_not_nan(device: torch.device, impl: str) -> None:
    mha = make_mha(device, impl, causal=True)
    ids = torch.tensor([[3, 4, 0], [0, 0, 0]], device=device)
    x = torch.randn(2, 3, 16, device=device, requires_grad=True)
    out = mha(x, mask=padding_mask(ids, 0))
    assert not torch.isnan(out).any()
    # a fully masked query's context is zero, so its output is the output projection's bias
    torch.testing.assert_close(out[1], mha.out_proj.bias.expand(3, -1), rtol=0, atol=0)
    out.sum().backward()
    assert torch.isfinite(x.grad).all()
    assert torch.equal(x.grad[1], torch.zeros_like(x.grad[1]))


@pytest.mark.parametrize("impl", IMPLS)
def test_causal_output_ignores_the_future(device: torch.device, impl: str) -> None:
    mha = make_mha(device, impl, causal=True)
    x = torch.randn(1, 6, 16, device=device)
    changed = x.clone()
    changed[:, 4:] = torch.randn(1, 2, 16, device=device)
    torch.testing.assert_close(mha(x)[:, :4], mha(changed)[:, :4], rtol=0, atol=1e-6)


@pytest.mark.parametrize("impl", IMPLS)
def test_dropout_only_while_training(device: torch.device, impl: str) -> None:
    mha = make_mha(device, impl, dropout=0.5)
    reference = make_mha(device, impl, dropout=0.0)
    x = torch.randn(2, 5, 16, device=device)
    mha.eval()
    torch.testing.assert_close(mha(x), reference(x), rtol=0, atol=0)
    mha.train()
    assert not torch.allclose(mha(x), reference(x), atol=1e-3)


def to_torch_mha(mha: MultiHeadAttention) -> torch.nn.MultiheadAttention:
    """A `torch.nn.MultiheadAttention` holding copies of `mha`'s weights."""
    ref = torch.nn.MultiheadAttention(mha.d_out, mha.num_heads, bias=True, batch_first=True)
    ref = ref.to(mha.out_proj.weight.device)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight]))
        biases = [layer.bias for layer in (mha.W_query, mha.W_key, mha.W_value)]
        if biases[0] is None:
            ref.in_proj_bias.zero_()
        else:
            ref.in_proj_bias.copy_(torch.cat(biases))
        ref.out_proj.weight.copy_(mha.out_proj.weight)
        ref.out_proj.bias.copy_(mha.out_proj.bias)
    return ref.eval()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_matches_torch_multihead_attention(
    device: torch.device, impl: str, qkv_bias: bool, causal: bool, padded: bool
) -> None:
    mha = make_mha(device, impl, causal=causal, qkv_bias=qkv_bias).eval()
    ref = to_torch_mha(mha)
    x = torch.randn(2, 5, 16, device=device)
    ids = torch.tensor([[7, 8, 9, 0, 0], [4, 5, 6, 7, 0]], device=device)
    ours = mha(x, mask=padding_mask(ids, 0) if padded else None)
    theirs, _ = ref(
        x, x, x,
        key_padding_mask=(ids == 0) if padded else None,  # torch: True = ignore
        attn_mask=~causal_mask(5, device=device) if causal else None,  # torch: True = not allowed
        need_weights=False,
    )
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)


def test_kid_smiles_walkthrough_numbers(device: torch.device) -> None:
    """Chapter 8's view/transpose walkthrough: the weights saturate, the merged context is known."""
    from scratchformer.nn.attention import scaled_dot_product_attention

    torch.manual_seed(123)
    weights_cpu = [torch.randn(6, 6) for _ in range(3)]  # drawn on the CPU, as in the chapter
    W_q, W_k, W_v = (w.to(device) for w in weights_cpu)
    x = kid_smiles(device)
    mha = MultiHeadAttention(6, 6, 2)
    q, k, v = (mha.split_heads(x @ W) for W in (W_q, W_k, W_v))
    assert q.shape == (1, 2, 3, 3)
    context, weights = scaled_dot_product_attention(q, k, v)
    expected_weights = torch.tensor([[[1.0, 0, 0]] * 3, [[0, 1.0, 0]] * 3], device=device)
    torch.testing.assert_close(weights[0], expected_weights, rtol=0, atol=1e-4)
    merged = mha.merge_heads(context)
    expected_row = torch.tensor([-2.089345, 14.501187, -7.852522, -10.743466, 11.328370, -10.038961], device=device)
    torch.testing.assert_close(merged[0], expected_row.expand(3, 6), rtol=0, atol=1e-4)


def test_brush_example_weights(device: torch.device) -> None:
    """Chapter 8's ambiguity example: one-hot roles, hand-set query matrices, d_k = 6."""
    from scratchformer.nn.attention import scaled_dot_product_attention

    sentence = "The artist painted the portrait of a woman with a brush".split()
    roles = ["verb", "agent", "person", "object", "instrument", "other"]
    role_of = {"painted": "verb", "artist": "agent", "woman": "person", "portrait": "object", "brush": "instrument"}
    X = torch.stack([torch.eye(6)[roles.index(role_of.get(w, "other"))] for w in sentence]).to(device)
    W_key = 3.0 * torch.eye(6, device=device)

    def brush_row(*targets: str) -> torch.Tensor:
        W_query = torch.zeros(6, 6, device=device)
        for target in targets:
            W_query[roles.index("instrument"), roles.index(target)] = 3.0
        _, weights = scaled_dot_product_attention(X @ W_query, X @ W_key, X)
        return weights[sentence.index("brush")]

    match = math.exp(9 / math.sqrt(6))  # e^score of a matching key; the other keys score 0
    one = match / (match + 10)
    both = match / (2 * match + 9)
    painted, woman = sentence.index("painted"), sentence.index("woman")
    assert brush_row("verb")[painted].item() == pytest.approx(one, abs=1e-4)
    assert brush_row("person")[woman].item() == pytest.approx(one, abs=1e-4)
    mixed = brush_row("verb", "person")
    assert mixed[painted].item() == pytest.approx(both, abs=1e-4)
    assert mixed[woman].item() == pytest.approx(both, abs=1e-4)
    assert round(one, 2) == 0.80 and round(both, 2) == 0.45
