"""Shared fixtures: every numeric test runs on each available device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(
    params=[
        "cpu",
        pytest.param(
            "cuda",
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
        ),
    ]
)
def device(request: pytest.FixtureRequest) -> torch.device:
    """A torch device: `cpu` always, `cuda` when one is present."""
    return torch.device(request.param)
