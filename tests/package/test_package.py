"""`pip install .` (not editable) gives a working package."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import book  # noqa: E402

# Every name the chapters export, by module, straight from the exporter: a new chapter's names
# are checked in the installed wheel without anyone listing them here.
EXPORTED = {
    name: [n for block in module.blocks for n in block.names]
    for name, module in book.collect(ROOT).items()
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built as a wheel, the way `pip install .` builds it."""
    wheel_dir = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheel_dir), str(ROOT)],
        check=True,
    )
    (built,) = wheel_dir.glob("scratchformer-*.whl")
    return built


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
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
        # GPT-2's vocabulary files are read from the installed package, hash-checked.
        "from scratchformer.tokenize.bpe import BPETokenizer; from scratchformer.tokenize.gpt2_files import gpt2_encoding; "
        "assert gpt2_encoding().encode(' Building') == BPETokenizer.from_gpt2().encode(' Building') == [11819]; "
        "print(scratchformer.__version__)"
    )
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == subprocess.run(
        [sys.executable, "-c", "import scratchformer; print(scratchformer.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()


@pytest.mark.slow
def test_wheel_carries_gpt2_vocabulary(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for data_file in ("vocab.bpe", "encoder.json", "GPT2-LICENSE"):
        assert f"scratchformer/tokenize/gpt2/{data_file}" in names


@pytest.mark.slow
def test_wheel_declares_the_console_script(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [name for name in archive.namelist() if name.endswith(".dist-info/entry_points.txt")]
    text = archive.read(entry_points).decode()
    assert "[console_scripts]" in text and "scratchformer = scratchformer.cli.commands:main" in text
