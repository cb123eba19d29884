"""Chapter 3: integer, binary, sinusoidal and learned positions, and rotary position embedding."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scratchformer.nn.positional import (LearnedPositionalEmbedding, angular_frequencies,
                                         apply_rope, binary_positions, integer_positions,
                                         rotate_pairs, sinusoidal_positions)

# The fixture is read-only, so reusing it across hypothesis examples is safe.
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# Integer positions


def test_integer_positions_repeat_the_position(device: torch.device) -> None:
    table = integer_positions(301, 8, device=device)
    assert table.shape == (301, 8)
    assert table.dtype == torch.float32
    assert table.device.type == device.type
    assert torch.equal(table[300], torch.full((8,), 300.0, device=device))
    assert torch.equal(table[:, 3], torch.arange(301, dtype=torch.float32, device=device))


def test_integer_positions_refuse_bad_sizes() -> None:
    with pytest.raises(ValueError, match="d_model > 0"):
        integer_positions(4, 0)


# Binary positions: the book's table for 64..75


@pytest.mark.parametrize(
    ("position", "bits"),
    [
        (64, [0, 1, 0, 0, 0, 0, 0, 0]),
        (65, [0, 1, 0, 0, 0, 0, 0, 1]),
        (66, [0, 1, 0, 0, 0, 0, 1, 0]),
        (67, [0, 1, 0, 0, 0, 0, 1, 1]),
        (68, [0, 1, 0, 0, 0, 1, 0, 0]),
        (75, [0, 1, 0, 0, 1, 0, 1, 1]),
    ],
)
def test_binary_positions_spot_values(device: torch.device, position: int, bits: list[int]) -> None:
    result = binary_positions(torch.tensor(position, device=device), 8)
    assert result.dtype == torch.float32
    assert torch.equal(result, torch.tensor(bits, dtype=torch.float32, device=device))


def test_binary_positions_64_to_75_match_python(device: torch.device) -> None:
    table = binary_positions(torch.arange(64, 76, device=device), 8)  # (12, 8)
    expected = [[int(bit) for bit in format(p, "08b")] for p in range(64, 76)]
    assert table.shape == (12, 8)
    assert table.int().tolist() == expected
    assert int((table[3] != table[4]).sum()) == 3  # 67 -> 68 flips three bits


@pytest.mark.parametrize(
    ("positions", "num_bits", "message"),
    [
        (torch.tensor([256]), 8, r"\[0, 256\); got values from 256 to 256"),
        (torch.tensor([-1]), 8, "got values from -1"),
        (torch.tensor([1.0]), 8, "integer tensor"),
        (torch.tensor([1]), 0, "num_bits"),
    ],
)
def test_binary_positions_refuse_bad_input(positions: torch.Tensor, num_bits: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        binary_positions(positions, num_bits)


# Sinusoidal positions


def test_sinusoidal_spot_values(device: torch.device) -> None:
    pe = sinusoidal_positions(1024, 768, device=device)
    assert pe.shape == (1024, 768)
    assert pe.dtype == torch.float32
    assert pe.device.type == device.type
    assert torch.equal(pe[0, 0::2], torch.zeros(384, device=device))
    assert torch.equal(pe[0, 1::2], torch.ones(384, device=device))
    for p, i in [(1, 0), (1, 1), (17, 50), (500, 150), (1023, 250), (1023, 383)]:
        angle = p / 10000 ** (2 * i / 768)
        assert pe[p, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
        assert pe[p, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    # Not "nearly constant at 1", as the plot is often described: at i = 250 the cosine reaches -0.83.
    assert pe[1023, 501].item() == pytest.approx(-0.8273, abs=1e-4)


def test_sinusoidal_values_lie_in_minus_one_to_one(device: torch.device) -> None:
    pe = sinusoidal_positions(2048, 64, device=device)
    assert pe.abs().max().item() <= 1.0
    pairs = pe.unflatten(1, (32, 2))
    torch.testing.assert_close(pairs.pow(2).sum(-1), torch.ones(2048, 32, device=device), atol=1e-6, rtol=0)


def test_sinusoidal_base_changes_frequencies(device: torch.device) -> None:
    pe = sinusoidal_positions(10, 4, base=100.0, device=device)
    assert pe[3, 2].item() == pytest.approx(math.sin(3 / 100 ** (2 / 4)), abs=1e-6)


def test_angular_frequencies(device: torch.device) -> None:
    theta = angular_frequencies(768, device=device)
    assert theta.shape == (384,)
    assert theta.dtype == torch.float64
    assert theta[0].item() == 1.0
    assert 2 * math.pi / theta[150].item() == pytest.approx(229.4457, abs=1e-3)
    assert 2 * math.pi / theta[250].item() == pytest.approx(2525.495, abs=1e-2)


@pytest.mark.parametrize(("d_model", "base"), [(7, 10000.0), (0, 10000.0), (8, 1.0)])
def test_sinusoidal_refuses_bad_sizes(d_model: int, base: float) -> None:
    with pytest.raises(ValueError, match="d_model|base"):
        sinusoidal_positions(4, d_model, base=base)


@PROPERTY
@given(p=st.integers(0, 900), k=st.integers(0, 123))
def test_sinusoidal_shift_is_a_fixed_rotation(device: torch.device, p: int, k: int) -> None:
    pe = sinusoidal_positions(1024, 768, device=device)
    theta = angular_frequencies(768, device=device)
    # PE(p + k) is PE(p) with pair i turned by -k * theta_i, whatever p is.
    torch.testing.assert_close(rotate_pairs(pe[p], -k * theta), pe[p + k], atol=2e-6, rtol=0)


def test_sinusoidal_dot_products_depend_only_on_offset(device: torch.device) -> None:
    pe = sinusoidal_positions(300, 128, device=device).double()
    theta = angular_frequencies(128, device=device)
    for p, k in [(0, 5), (100, 5), (250, 5), (7, 0), (3, 200)]:
        expected = torch.cos(k * theta).sum().item()
        assert (pe[p] @ pe[p + k]).item() == pytest.approx(expected, abs=1e-4)


# rotate_pairs


def test_rotate_pairs_spot_values(device: torch.device) -> None:
    x = torch.tensor([1.0, 0.0, 0.0, 2.0], device=device)
    angles = torch.tensor([math.pi / 2, math.pi / 2], dtype=torch.float64, device=device)
    torch.testing.assert_close(
        rotate_pairs(x, angles), torch.tensor([0.0, 1.0, -2.0, 0.0], device=device), atol=1e-6, rtol=0
    )


def test_rotate_pairs_refuses_mismatched_angles(device: torch.device) -> None:
    with pytest.raises(ValueError, match="last dimension of x must be even"):
        rotate_pairs(torch.zeros(3, device=device), torch.zeros(1, device=device))
    with pytest.raises(ValueError, match="do not broadcast"):
        rotate_pairs(torch.zeros(2, 4, device=device), torch.zeros(3, device=device))
    with pytest.raises(ValueError, match="do not broadcast"):
        rotate_pairs(torch.zeros(2, 4, device=device), torch.zeros(5, 2, 2, device=device))


# Learned positions


def test_learned_positions_rows_and_shapes(device: torch.device) -> None:
    torch.manual_seed(0)
    learned = LearnedPositionalEmbedding(16, 8).to(device)
    rows = learned(5)
    assert rows.shape == (5, 8)
    assert rows.device.type == device.type
    assert torch.equal(rows, learned.weight[:5])
    assert learned(0).shape == (0, 8)
    tokens = torch.randn(3, 5, 8, device=device)  # (B, T, C)
    assert (tokens + rows).shape == (3, 5, 8)
    rows.sum().backward()
    assert torch.equal(learned.weight.grad[5:], torch.zeros(11, 8, device=device))


def test_learned_positions_refuse_long_sequences(device: torch.device) -> None:
    learned = LearnedPositionalEmbedding(5, 8).to(device)
    with pytest.raises(ValueError, match=r"sequence length 6 .*max_len=5"):
        learned(6)
    with pytest.raises(ValueError, match="max_len and d_model must be positive"):
        LearnedPositionalEmbedding(0, 8)


def test_learned_positions_gpt2_size() -> None:
    assert LearnedPositionalEmbedding(1024, 768).weight.numel() == 786_432


# Rotary position embedding


def test_rope_spot_values(device: torch.device) -> None:
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0]] * 3, device=device)  # (T, d) = (3, 4)
    rotated = apply_rope(x)
    # Position 0 is untouched; pair 0 turns by p radians, pair 1 by p / 100.
    torch.testing.assert_close(rotated[0], x[0], atol=0, rtol=0)
    expected = torch.tensor([math.cos(2), math.sin(2), math.cos(0.02), math.sin(0.02)], device=device)
    torch.testing.assert_close(rotated[2], expected, atol=1e-6, rtol=0)


def test_rope_default_positions_and_batches(device: torch.device) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 16, device=device)  # (B, H, T, d)
    rotated = apply_rope(x)
    assert rotated.shape == x.shape and rotated.dtype == x.dtype
    torch.testing.assert_close(rotated, apply_rope(x, torch.arange(7, device=device)), atol=0, rtol=0)
    offset = apply_rope(x, torch.arange(10, 17, device=device))
    torch.testing.assert_close(offset[..., 2, :], apply_rope(x[..., 2:3, :], torch.tensor([12], device=device))[..., 0, :])


def test_rope_refuses_odd_dimensions_and_bad_positions(device: torch.device) -> None:
    with pytest.raises(ValueError, match="d must be even"):
        apply_rope(torch.zeros(4, 7, device=device))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., T, d\)"):
        apply_rope(torch.zeros(8, device=device))
    with pytest.raises(ValueError, match="one position per row"):
        apply_rope(torch.zeros(4, 8, device=device), torch.arange(3, device=device))


@PROPERTY
@given(
    m=st.integers(0, 4096),
    n=st.integers(0, 4096),
    shift=st.integers(-4096, 4096),
    seed=st.integers(0, 2**16),
)
def test_rope_scores_depend_only_on_the_offset(device: torch.device, m: int, n: int, shift: int, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 64, generator=generator).to(device)  # (T, d) with T = 1
    k = torch.randn(1, 64, generator=generator).to(device)

    def score(query_at: int, key_at: int) -> float:
        rotated_q = apply_rope(q, torch.tensor([query_at], device=device))
        rotated_k = apply_rope(k, torch.tensor([key_at], device=device))
        return (rotated_q @ rotated_k.T).item()

    m_shifted, n_shifted = m + shift, n + shift  # negative positions are fine for a rotation
    assert score(m, n) == pytest.approx(score(m_shifted, n_shifted), abs=1e-4)
    assert score(m, n) == pytest.approx(score(0, n - m), abs=1e-4)


@PROPERTY
@given(positions=st.lists(st.integers(0, 100_000), min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_rope_preserves_norms(device: torch.device, positions: list[int], seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(len(positions), 32, generator=generator).to(device)
    rotated = apply_rope(x, torch.tensor(positions, device=device))
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
def test_rope_refuses_integer_tensors(device: torch.device, dtype: torch.dtype) -> None:
    x = torch.arange(8, device=device).reshape(2, 4).to(dtype)
    with pytest.raises(ValueError, match="floating-point"):
        apply_rope(x)
    with pytest.raises(ValueError, match="floating-point"):
        rotate_pairs(x, torch.zeros(2, device=device))
    assert apply_rope(x.float()).abs().sum() > 0
