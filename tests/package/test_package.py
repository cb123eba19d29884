"""`pip install .` (not editable) gives a working package."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from support import ROOT

import book

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


def declared_closure(name: str) -> set[str]:
    """`name`'s distribution and every distribution it requires, at any depth, with their
    markers read for this interpreter and no extras: what `pip install <name>` would bring."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    found: set[str] = set()
    waiting = [name]
    while waiting:
        current = waiting.pop()
        key = current.lower().replace("_", "-")
        if key in found:
            continue
        found.add(key)
        try:
            requires = distribution(current).requires or []
        except PackageNotFoundError:
            raise AssertionError(f"{current}, which {name} needs, is not installed here") from None
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                waiting.append(requirement.name)
    return found


def link_distributions(names: set[str], site: Path) -> None:
    """Make the installed distributions `names` (their packages, modules and metadata)
    importable in `site` by linking their top-level entries there: nothing else of this
    environment is."""
    from importlib.metadata import distribution

    for name in names:
        dist = distribution(name)
        base = Path(dist.locate_file(""))
        for entry in {Path(f).parts[0] for f in dist.files or []}:
            source, target = base / entry, site / entry
            if entry not in ("..", "__pycache__") and source.exists() and not target.exists():
                target.symlink_to(source)


@pytest.mark.slow
def test_the_wheel_works_with_its_declared_dependencies_only(wheel: Path, tmp_path: Path) -> None:
    """A user's `pip install scratchformer`: a fresh virtual environment holding the wheel and
    the distributions it declares (not the book's IPython, matplotlib or MyST-NB), where every
    module imports, every exported name is there, and the command and each sub-command answer
    `--help`."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                   check=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    link_distributions(declared_closure("scratchformer") - {"scratchformer"}, site)
    checks = "; ".join(f"from {module} import {', '.join(names)}" for module, names in EXPORTED.items())
    script = f"""
import importlib, importlib.util, pathlib, pkgutil, sys, contextlib, io
import scratchformer
assert pathlib.Path(scratchformer.__file__).is_relative_to({str(env_dir)!r}), scratchformer.__file__
modules = [m.name for m in pkgutil.walk_packages(scratchformer.__path__, "scratchformer.")]
for name in modules:
    importlib.import_module(name)
{checks}
for absent in ("IPython", "matplotlib", "myst_nb", "scratchbook"):
    assert importlib.util.find_spec(absent) is None, absent + " is importable: not a clean environment"
    assert absent not in sys.modules, absent + " was imported by the package"
from scratchformer.cli.commands import build_parser, main
commands = build_parser()._subparsers._group_actions[0].choices
for command in commands:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main([command, "--help"])
        except SystemExit as stop:
            assert stop.code == 0, (command, stop.code)
    assert out.getvalue().startswith("usage: scratchformer " + command), out.getvalue()[:200]
print(len(modules), sorted(commands))
"""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    count, commands = result.stdout.strip().split(" ", 1)
    assert int(count) >= 40 and {"train-imdb", "classify", "train-gpt", "generate", "pretrain",
                                 "export-web"} <= set(eval(commands)), result.stdout
    command = subprocess.run([str(env_dir / "bin" / "scratchformer"), "--help"], capture_output=True,
                             text=True, env=env, cwd=tmp_path)
    assert command.returncode == 0 and command.stdout.startswith("usage: scratchformer"), command.stderr


@pytest.mark.slow
def test_the_wheel_holds_the_library_only(wheel: Path) -> None:
    """No book apparatus (records, pages, diagrams) and no data but GPT-2's vocabulary files."""
    names = zipfile.ZipFile(wheel).namelist()
    package_files = [name for name in names if not name.startswith("scratchformer-")]
    assert all(name.startswith("scratchformer/") for name in package_files), package_files
    assert not [name for name in package_files if any(part in name for part in (
        "records", "diagrams", "scratchbook", "pages", "_compat", "book/", "results"))]
    data = [name for name in package_files if not name.endswith((".py", "py.typed"))]
    assert sorted(data) == [f"scratchformer/tokenize/gpt2/{name}"
                            for name in ("GPT2-LICENSE", "encoder.json", "vocab.bpe")], data


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
