"""Turn a chapter (MyST Markdown) into a notebook that runs anywhere, for the launch buttons.

Colab and Binder cannot run our `.md` chapters, so the book build writes an `.ipynb` of each
chapter next to the HTML (`_notebooks/book/NN_topic.ipynb`). The notebook is the chapter as
jupytext reads it, with one cell in front: inside the repository (where `scratchformer` is
importable) that cell does nothing; anywhere else it installs the package from the repository
and the two libraries the chapters use besides it (matplotlib for figures, myst-nb for `glue`).
The same requirements go into `binder/requirements.txt` of the published site, which is what
Binder builds its environment from.

    PYTHONPATH=tools python -m book.notebooks book/04_self_attention.md -o /tmp/04.ipynb

The list of names that closes each chapter (the directive `package-additions`) is written
out, as plain Markdown, since notebooks know no directives.

What this deliberately does not handle: outputs (the notebooks are published unexecuted) and
MyST-only syntax in Markdown cells (roles such as {glue:text} show as plain text outside the book).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml

from book import reference

INSTALL_CELL_ID = "install-scratchformer"
ADDITIONS = re.compile(rf"^(`{{3,}}|~{{3,}})\{{{reference.ADDITIONS_DIRECTIVE}\}}[^\n]*\n\1[ \t]*$", re.M)
# What a notebook needs besides the package: figures and glue.
EXTRA_REQUIREMENTS = ["matplotlib>=3.7", "myst-nb>=1.0"]
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def package_requirement(repository_url: str, ref: str) -> str:
    """A pip requirement that installs the package from the repository at `ref`."""
    if not repository_url.startswith("https://"):
        raise ValueError(f"the repository url must be an https url, got {repository_url!r}")
    return f"scratchformer @ git+{repository_url.rstrip('/')}@{ref}"


def install_source(repository_url: str, ref: str) -> str:
    """The first cell of every published notebook."""
    requirements = " ".join(f'"{r}"' for r in [package_requirement(repository_url, ref), *EXTRA_REQUIREMENTS])
    return (
        "# Run this cell first. Inside the scratchformer repository it does nothing; anywhere else\n"
        "# (Colab, Binder, a fresh Jupyter) it installs the package this book builds.\n"
        "try:\n"
        "    import scratchformer  # noqa: F401\n"
        "except ImportError:\n"
        f"    %pip install --quiet {requirements}"
    )


def binder_requirements(repository_url: str, ref: str) -> str:
    """`binder/requirements.txt` for the published site (CPU torch keeps the image small)."""
    lines = [
        "# The environment Binder builds for the notebooks published with the book.",
        f"--extra-index-url {TORCH_CPU_INDEX}",
        "torch",
        package_requirement(repository_url, ref),
        *EXTRA_REQUIREMENTS,
    ]
    return "\n".join(lines) + "\n"


def chapter_notebook(chapter: Path, repository_url: str, ref: str = "main") -> nbformat.NotebookNode:
    """The chapter as a notebook, with the install cell first and stable cell ids."""
    notebook = jupytext.read(chapter, fmt="md:myst")
    root = next((p for p in Path(chapter).resolve().parents if (p / "_toc.yml").is_file()), None)
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and root is not None and ADDITIONS.search(cell.source):
            name = Path(chapter).resolve().relative_to(root).as_posix()
            additions = reference.chapter_additions(root, name, plain=True).strip()
            cell.source = ADDITIONS.sub(lambda _: additions, cell.source)
    install = nbformat.v4.new_code_cell(install_source(repository_url, ref))
    install.id = INSTALL_CELL_ID
    notebook.cells.insert(0, install)
    for index, cell in enumerate(notebook.cells[1:], start=1):
        digest = hashlib.sha1(cell.source.encode("utf-8")).hexdigest()[:8]
        cell.id = f"cell-{index:03d}-{digest}"
    # Keep what Jupyter needs (the kernel); drop the build's own keys (jupytext pairing, export).
    notebook.metadata = nbformat.from_dict({
        "kernelspec": notebook.metadata.get(
            "kernelspec", {"display_name": "Python 3", "language": "python", "name": "python3"}
        ),
        "language_info": {"name": "python"},
    })
    notebook.nbformat, notebook.nbformat_minor = 4, 5
    nbformat.validate(notebook)
    return notebook


def write_notebook(notebook: nbformat.NotebookNode, path: Path) -> bool:
    """Write `notebook` to `path` unless it already holds exactly that; return whether it wrote."""
    text = nbformat.writes(notebook) + "\n"
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--repository", help="default: repository.url in _config.yml")
    parser.add_argument("--ref", default="main")
    args = parser.parse_args(argv)
    if args.repository is None:
        config = yaml.safe_load((Path(__file__).resolve().parents[2] / "_config.yml").read_text(encoding="utf-8"))
        args.repository = config["repository"]["url"]
    write_notebook(chapter_notebook(args.chapter, args.repository, args.ref), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
