"""Chapter 9: LayerNorm, GELU, the feed-forward network, shortcuts and the Transformer block."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from scratchformer.nn.attention import padding_mask
from scratchformer.nn.block import GELU, FeedForward, LayerNorm, TransformerBlock

# The device fixture is a constant per test, so reusing it across hypothesis examples is safe.
DEVICE_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

SIX_ACTIVATIONS = [0.78, 1.05, 0.44, 0.73, 0.65, 0.28]
# Computed by hand from the six activations: mean 0.655, population variance 0.060725.
SIX_NORMALIZED = [0.507, 1.603, -0.873, 0.304, -0.020, -1.522]


# --- LayerNorm ---------------------------------------------------------------------------


def test_six_activation_statistics(device: torch.device) -> None:
    x = torch.tensor(SIX_ACTIVATIONS, device=device)
    assert abs(x.mean().item() - 0.655) < 1e-6
    assert abs(x.var(correction=0).item() - 0.0607) < 1e-4
    # The figures source 001 prints (mean 0.6, variance 0.07) are not these.
    assert abs(x.mean().item() - 0.6) > 0.05
    assert abs(x.var(correction=0).item() - 0.07) > 0.009


@pytest.mark.parametrize("eps", [0.0, 1e-5])
def test_six_activations_normalize_to_book_values(device: torch.device, eps: float) -> None:
    layer_norm = LayerNorm(6, eps=eps).to(device)
    out = layer_norm(torch.tensor(SIX_ACTIVATIONS, device=device))
    expected = torch.tensor(SIX_NORMALIZED, device=device)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-3)
    assert abs(out.mean().item()) < 1e-6
    assert abs(out.var(correction=0).item() - 1.0) < (1e-5 if eps == 0 else 2e-4)
    # ... and not the source's 0.44, 1.48, -0.85, 0.28, -0.01, -1.33
    source = torch.tensor([0.44, 1.48, -0.85, 0.28, -0.01, -1.33], device=device)
    assert (out - source).abs().max().item() > 0.1


def test_gamma_beta_can_undo_normalization(device: torch.device) -> None:
    x = torch.tensor(SIX_ACTIVATIONS, device=device)
    layer_norm = LayerNorm(6, eps=0.0).to(device)
    with torch.no_grad():
        layer_norm.weight.fill_(x.std(correction=0).item())
        layer_norm.bias.fill_(x.mean().item())
    torch.testing.assert_close(layer_norm(x), x, rtol=0, atol=1e-6)


@DEVICE_SETTINGS
@given(
    d_model=st.integers(1, 96),
    leading=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    scale=st.floats(1e-3, 1e3),
    offset=st.floats(-3.0, 3.0),
    eps=st.sampled_from([1e-5, 1e-6, 1e-3]),
    seed=st.integers(0, 2**16),
)
def test_layernorm_matches_torch(
    device: torch.device, d_model: int, leading: list[int], scale: float, offset: float, eps: float, seed: int
) -> None:
    torch.manual_seed(seed)
    ours = LayerNorm(d_model, eps=eps)
    with torch.no_grad():
        ours.weight.normal_()
        ours.bias.normal_()
    theirs = nn.LayerNorm(d_model, eps=eps)
    theirs.load_state_dict(ours.state_dict())
    ours, theirs = ours.to(device), theirs.to(device)
    x = (torch.randn(*leading, d_model, device=device) + offset) * scale
    # Both against float64. Centring loses bits where a row's entries lie close together
    # (3 draws can agree to 3 digits): float32 code is then only as exact as 2**-24 times the
    # row's largest entry over its standard deviation, so the tolerance grows with that ratio.
    wide = x.double()
    reference = nn.functional.layer_norm(wide, (d_model,), ours.weight.double(),
                                         ours.bias.double(), eps)  # (..., C)
    spread = torch.sqrt(wide.var(dim=-1, correction=0, keepdim=True) + eps)  # (..., 1)
    condition = 1 + wide.abs().amax(dim=-1, keepdim=True) / spread  # (..., 1)
    tolerance = 1e-6 * condition * (1 + ours.weight.double().abs())  # (..., C)
    for name, layer in (("ours", ours), ("torch's", theirs)):
        error = (layer(x).double() - reference).abs()
        worst = (error / tolerance).max().item()
        assert worst <= 1, f"{name} LayerNorm is {worst:.1f} times the tolerance from float64"


def test_layernorm_matches_torch_worked_batch(device: torch.device) -> None:
    torch.manual_seed(123)
    x = torch.randn(2, 3, 768, device=device)
    ours, theirs = LayerNorm(768).to(device), nn.LayerNorm(768).to(device)
    torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-6)


def test_layernorm_has_no_running_statistics(device: torch.device) -> None:
    """eval() changes nothing in LayerNorm (source 001 claims it switches to running statistics)."""
    layer_norm = LayerNorm(6).to(device)
    assert list(layer_norm.buffers()) == []
    x = torch.randn(4, 6, device=device)
    train_out = layer_norm.train()(x)
    eval_out = layer_norm.eval()(x)
    assert torch.equal(train_out, eval_out)
    # One token's result does not depend on the rest of its batch.
    torch.testing.assert_close(layer_norm(x[:1]), train_out[:1], rtol=0, atol=0)


def test_layernorm_gradients_match_torch(device: torch.device) -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16, device=device, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_(True)
    ours, theirs = LayerNorm(16).to(device), nn.LayerNorm(16).to(device)
    ours(x).pow(2).sum().backward()
    theirs(x_ref).pow(2).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ours.weight.grad, theirs.weight.grad, rtol=1e-5, atol=1e-5)


def test_layernorm_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="d_model must be positive"):
        LayerNorm(0)
    with pytest.raises(ValueError, match="eps"):
        LayerNorm(4, eps=-1.0)
    with pytest.raises(ValueError, match=r"\(\.\.\., 4\)"):
        LayerNorm(4)(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="variance 0"):
        LayerNorm(3, eps=0.0)(torch.ones(2, 3))


def test_layernorm_constant_vector_with_eps_is_finite(device: torch.device) -> None:
    out = LayerNorm(3).to(device)(torch.full((2, 3), 7.0, device=device))
    assert torch.equal(out, torch.zeros(2, 3, device=device))



@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_layernorm_16_bit_matches_torch_beyond_float16s_range(device: torch.device, dtype: torch.dtype) -> None:
    # The variance of [0, 300, 600, 900] is 112,500, more than float16 can hold.
    x = torch.tensor([[0.0, 300.0, 600.0, 900.0], [1.0, 2.0, 3.0, 5.0]], device=device, dtype=dtype)
    ours, theirs = LayerNorm(4).to(device, dtype), nn.LayerNorm(4).to(device, dtype)
    out = ours(x)
    assert out.dtype == dtype
    torch.testing.assert_close(out, theirs(x), rtol=0, atol=1e-2)
    torch.testing.assert_close(out[0].float(), torch.tensor([-1.3416, -0.4472, 0.4472, 1.3416], device=device),
                               rtol=0, atol=1e-2)


@pytest.mark.parametrize("magnitude", [1e20, 1e37, 1e-30])
def test_layernorm_float32_extremes_are_normalized(device: torch.device, magnitude: float) -> None:
    # torch's own LayerNorm gives NaN at 1e20 (its variance overflows); float64 is the reference.
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device) * magnitude
    exact = nn.functional.layer_norm(x.double(), (4,))
    torch.testing.assert_close(LayerNorm(4).to(device)(x).double(), exact, rtol=1e-5, atol=1e-5)


def test_layernorm_is_bit_identical_to_the_formula_in_the_usual_range(device: torch.device) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 768, device=device) * 5 + 2
    formula = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, correction=0, keepdim=True) + 1e-5)
    assert torch.equal(LayerNorm(768).to(device)(x), formula)

# --- GELU --------------------------------------------------------------------------------


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch_on_grid(device: torch.device, approximate: str) -> None:
    x = torch.linspace(-20, 20, 40001, device=device)
    ours = GELU(approximate)(x)
    theirs = nn.functional.gelu(x, approximate=approximate)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)
    assert torch.equal(GELU(approximate)(torch.zeros(1, device=device)), torch.zeros(1, device=device))


@DEVICE_SETTINGS
@given(
    values=st.lists(st.floats(-1e4, 1e4, allow_nan=False, width=32), min_size=1, max_size=50),
    approximate=st.sampled_from(["none", "tanh"]),
)
def test_gelu_matches_torch_property(device: torch.device, values: list[float], approximate: str) -> None:
    x = torch.tensor(values, device=device)
    torch.testing.assert_close(
        GELU(approximate)(x), nn.functional.gelu(x, approximate=approximate), rtol=1e-6, atol=1e-6
    )


def test_gelu_minimum(device: torch.device) -> None:
    x = torch.linspace(-4, 4, 8001, device=device)
    y = GELU()(x)
    assert abs(y.min().item() - (-0.170)) < 1e-3
    assert abs(x[y.argmin()].item() - (-0.752)) < 2e-3
    tanh_gap = (y - GELU("tanh")(x)).abs().max().item()
    assert 1e-4 < tanh_gap < 1e-3


def test_gelu_bad_mode_raises() -> None:
    with pytest.raises(ValueError, match="approximate"):
        GELU("sigmoid")


# --- FeedForward -------------------------------------------------------------------------


def test_feed_forward_worked_example(device: torch.device) -> None:
    torch.manual_seed(123)
    feed_forward = FeedForward(768).to(device)
    assert feed_forward.d_hidden == 3072
    assert sum(p.numel() for p in feed_forward.parameters()) == 4_722_432
    x = torch.randn(2, 3, 768, device=device)
    out = feed_forward(x)
    assert out.shape == (2, 3, 768)
    # position-wise: each token alone gives the same vector as inside the batch
    for b in range(2):
        for t in range(3):
            torch.testing.assert_close(feed_forward(x[b, t]), out[b, t], rtol=1e-5, atol=1e-5)


def test_feed_forward_dropout_only_in_training(device: torch.device) -> None:
    torch.manual_seed(0)
    feed_forward = FeedForward(8, d_hidden=16, dropout=0.5).to(device)
    x = torch.randn(4, 5, 8, device=device)
    feed_forward.eval()
    assert torch.equal(feed_forward(x), feed_forward(x))
    feed_forward.train()
    assert not torch.equal(feed_forward(x), feed_forward(x))


def test_feed_forward_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="positive"):
        FeedForward(8, d_hidden=0)
    with pytest.raises(ValueError, match="dropout"):
        FeedForward(8, dropout=1.0)
    with pytest.raises(ValueError, match=r"\(\.\.\., 8\)"):
        FeedForward(8)(torch.zeros(2, 7))


# --- shortcut connections ----------------------------------------------------------------


class DeepStack(nn.Module):
    """The chapter's demo network: Linear + GELU layers, optional shortcuts where shapes match."""

    def __init__(self, sizes: list[int], use_shortcut: bool) -> None:
        super().__init__()
        self.use_shortcut = use_shortcut
        self.layers = nn.ModuleList(
            nn.Sequential(nn.Linear(d_in, d_out), GELU()) for d_in, d_out in zip(sizes[:-1], sizes[1:])
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            layer_output = layer(x)
            x = x + layer_output if self.use_shortcut and layer_output.shape == x.shape else layer_output
        return x


def layer_gradients(device: torch.device, use_shortcut: bool, seed: int = 123) -> list[float]:
    """The chapter's setting: seven layers 64 -> 64 and one 64 -> 1, squared error against 1."""
    torch.manual_seed(seed)
    model = DeepStack([64] * 8 + [1], use_shortcut).to(device)
    x = torch.randn(1, 64, generator=torch.Generator().manual_seed(0)).to(device)
    output = model(x)
    nn.functional.mse_loss(output, torch.ones_like(output)).backward()
    return [layer[0].weight.grad.abs().mean().item() for layer in model.layers]


@pytest.mark.parametrize("seed", [123, 0, 1])
def test_shortcuts_keep_first_layer_gradient_large(device: torch.device, seed: int) -> None:
    plain = layer_gradients(device, use_shortcut=False, seed=seed)
    with_shortcuts = layer_gradients(device, use_shortcut=True, seed=seed)
    assert with_shortcuts[0] >= 10 * plain[0]
    # Among the seven layers of equal shape: without shortcuts the gradient shrinks on its way
    # back to the input; with them it stays of one order.
    assert plain[0] < plain[-2] / 20
    assert with_shortcuts[0] > with_shortcuts[-2] / 3
    assert max(with_shortcuts[:-1]) < 4 * min(with_shortcuts[:-1])


# --- the block ---------------------------------------------------------------------------


def make_block(device: torch.device, seed: int = 0, **kwargs: object) -> TransformerBlock:
    torch.manual_seed(seed)
    return TransformerBlock(**{"d_model": 32, "num_heads": 4, **kwargs}).to(device).eval()


def test_block_preserves_shape_worked_example(device: torch.device) -> None:
    block = make_block(device, d_model=768, num_heads=12)
    x = torch.randn(2, 3, 768, device=device)
    assert block(x).shape == (2, 3, 768)


@pytest.mark.parametrize("d_model,num_heads,expected", [(64, 4, 49_792), (256, 8, 788_992), (768, 12, 7_085_568)])
def test_block_parameter_count_matches_formula(d_model: int, num_heads: int, expected: int) -> None:
    block = TransformerBlock(d_model, num_heads)
    counted = sum(p.numel() for p in block.parameters())
    assert counted == expected == 12 * d_model**2 + 10 * d_model


def test_block_custom_hidden_width() -> None:
    block = TransformerBlock(16, 2, d_hidden=24)
    assert block.ff.d_hidden == 24
    assert block.attn.causal is False


@pytest.mark.parametrize("t", range(6))
def test_causal_block_ignores_later_tokens(device: torch.device, t: int) -> None:
    block = make_block(device, causal=True)
    x = torch.randn(2, 6, 32, device=device)
    changed = x.clone()
    changed[:, t + 1 :] = torch.randn_like(changed[:, t + 1 :]) * 10
    torch.testing.assert_close(block(x)[:, : t + 1], block(changed)[:, : t + 1], rtol=0, atol=1e-6)
    if t < 5:
        assert (block(x)[:, t + 1 :] - block(changed)[:, t + 1 :]).abs().max().item() > 1e-2


def test_bidirectional_block_sees_later_tokens(device: torch.device) -> None:
    block = make_block(device)
    x = torch.randn(1, 6, 32, device=device)
    changed = x.clone()
    changed[:, 5] = torch.randn(32, device=device) * 5  # (a constant shift would vanish in LayerNorm)
    assert (block(x)[:, 0] - block(changed)[:, 0]).abs().max().item() > 1e-4


def test_block_respects_padding_mask(device: torch.device) -> None:
    block = make_block(device)
    ids = torch.tensor([[5, 7, 9, 4, 2], [8, 3, 6, 0, 0]], device=device)  # 0 is padding
    x = torch.randn(2, 5, 32, device=device)
    mask = padding_mask(ids, pad_id=0)
    out = block(x, mask)
    # the real tokens equal a run on the sequence without its padding ...
    torch.testing.assert_close(out[1, :3], block(x[1:, :3])[0], rtol=1e-5, atol=1e-5)
    # ... and do not depend on what sits in the padded positions
    other = x.clone()
    other[1, 3:] = torch.randn(2, 32, device=device) * 100
    torch.testing.assert_close(block(other, mask)[1, :3], out[1, :3], rtol=1e-5, atol=1e-5)
    # the unpadded sequence is untouched by the mask
    torch.testing.assert_close(out[0], block(x[:1])[0], rtol=1e-5, atol=1e-5)
    # without the mask the padding leaks into the real tokens
    assert (block(x)[1, :3] - out[1, :3]).abs().max().item() > 1e-4


def test_causal_and_padding_masks_combine(device: torch.device) -> None:
    block = make_block(device, causal=True)
    ids = torch.tensor([[0, 0, 4, 5, 6]], device=device)  # left padding
    x = torch.randn(1, 5, 32, device=device)
    out = block(x, padding_mask(ids, pad_id=0))
    torch.testing.assert_close(out[0, 2:], block(x[:, 2:])[0], rtol=1e-5, atol=1e-5)
    assert torch.isfinite(out).all()  # padded queries with nothing to attend to stay finite


def test_block_dropout_train_vs_eval(device: torch.device) -> None:
    torch.manual_seed(0)
    block = TransformerBlock(32, 4, dropout=0.3).to(device)
    x = torch.randn(2, 5, 32, device=device)
    block.train()
    assert not torch.equal(block(x), block(x))
    block.eval()
    assert torch.equal(block(x), block(x))
    no_dropout = TransformerBlock(32, 4, dropout=0.0).to(device)
    assert torch.equal(no_dropout.train()(x), no_dropout.eval()(x))


def test_block_is_pre_ln_with_shortcuts(device: torch.device) -> None:
    """With every branch's last layer zeroed, the block is the identity: the shortcuts carry x."""
    block = make_block(device)
    with torch.no_grad():
        for linear in (block.attn.out_proj, block.ff.contract):
            linear.weight.zero_()
            linear.bias.zero_()
    x = torch.randn(2, 4, 32, device=device) * 3 + 1
    assert torch.equal(block(x), x)


def test_block_by_hand(device: torch.device) -> None:
    block = make_block(device)
    x = torch.randn(2, 4, 32, device=device)
    h = x + block.attn(block.ln1(x))
    expected = h + block.ff(block.ln2(h))
    torch.testing.assert_close(block(x), expected, rtol=0, atol=0)


def test_stacked_blocks_backpropagate(device: torch.device) -> None:
    torch.manual_seed(0)
    blocks = nn.ModuleList(TransformerBlock(32, 4) for _ in range(3)).to(device)
    x = torch.randn(2, 5, 32, device=device, requires_grad=True)
    h = x
    for block in blocks:
        h = block(h)
    h.pow(2).mean().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in blocks.parameters())


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_block_sdpa_equals_explicit(device: torch.device, causal: bool, padded: bool) -> None:
    """`impl` reaches the attention layer, and with dropout off both paths compute one function."""
    explicit = make_block(device, causal=causal, dropout=0.1)
    fused = make_block(device, causal=causal, dropout=0.1, impl="sdpa")
    assert explicit.attn.impl == "explicit" and fused.attn.impl == "sdpa"
    fused.load_state_dict(explicit.state_dict())
    ids = torch.tensor([[1, 2, 3, 4, 5], [0, 0, 3, 4, 0]], device=device)
    mask = padding_mask(ids, pad_id=0) if padded else None
    x = torch.randn(2, 5, 32, device=device, requires_grad=True)
    out_explicit, out_fused = explicit(x, mask), fused(x, mask)  # eval(): dropout is off
    torch.testing.assert_close(out_fused, out_explicit, rtol=1e-5, atol=1e-5)
    (grad_explicit,) = torch.autograd.grad(out_explicit.square().sum(), x)
    (grad_fused,) = torch.autograd.grad(out_fused.square().sum(), x)
    torch.testing.assert_close(grad_fused, grad_explicit, rtol=1e-4, atol=1e-4)


def test_block_impl_is_checked() -> None:
    assert TransformerBlock(8, 2).attn.impl == "explicit"
    with pytest.raises(ValueError, match="impl"):
        TransformerBlock(8, 2, impl="flash")


def test_block_bad_input_raises() -> None:
    block = TransformerBlock(8, 2)
    with pytest.raises(ValueError, match=r"\(B, T, 8\)"):
        block(torch.zeros(3, 8))
    with pytest.raises(ValueError, match=r"\(B, T, 8\)"):
        block(torch.zeros(1, 3, 6))
    with pytest.raises(ValueError, match="dropout"):
        TransformerBlock(8, 2, dropout=1.5)
    with pytest.raises(ValueError, match="divisible"):
        TransformerBlock(8, 3)
