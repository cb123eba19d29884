"""`pip install .` (not editable) gives a working package."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from conftest import ROOT

EXPORTED = {
    "scratchformer.attention": [
        "scaled_dot_product_attention",
        "SelfAttention",
        "causal_mask",
        "padding_mask",
        "masked_softmax",
        "dropout",
        "CausalSelfAttention",
        "MultiHeadAttention",
    ],
    "scratchformer.block": ["LayerNorm", "GELU", "FeedForward", "TransformerBlock"],
    "scratchformer.tokenizer": ["gpt2_encoding"],
}


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv(tmp_path: Path) -> None:
    wheel_dir = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheel_dir), str(ROOT)],
        check=True,
    )
    (wheel,) = wheel_dir.glob("scratchformer-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    target = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", target, str(wheel)],
        check=True,
    )
    # The dependencies (torch, tiktoken) come from this environment; the package itself must come
    # from the fresh venv, not from the source tree.
    env = {**os.environ, "PYTHONPATH": sysconfig.get_path("purelib")}
    checks = "; ".join(
        f"from {module} import {', '.join(names)}" for module, names in EXPORTED.items()
    )
    script = (
        "import scratchformer, pathlib; "
        f"{checks}; "
        f"assert pathlib.Path(scratchformer.__file__).is_relative_to({str(env_dir)!r}), scratchformer.__file__; "
        "print(scratchformer.__version__)"
    )
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == subprocess.run(
        [sys.executable, "-c", "import scratchformer; print(scratchformer.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()


@pytest.mark.slow
def test_wheel_carries_gpt2_vocabulary(tmp_path: Path) -> None:
    import zipfile

    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
    )
    (wheel,) = tmp_path.glob("scratchformer-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for data_file in ("vocab.bpe", "encoder.json", "GPT2-LICENSE"):
        assert f"scratchformer/data/{data_file}" in names
