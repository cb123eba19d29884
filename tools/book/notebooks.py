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

A translated edition publishes its own notebooks (`translated_notebook`): the same code cells,
and Markdown cells whose paragraphs, headings, list items and table cells are replaced by their
translations from the page's catalogue, found the way Sphinx finds them (a paragraph's text with
its line breaks as spaces); what the catalogue lacks stays English.

What this deliberately does not handle: outputs (the notebooks are published unexecuted) and
MyST-only syntax in Markdown cells (roles such as {glue:text} show as plain text outside the book).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path
from typing import Callable

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


def chapter_notebook(chapter: Path, repository_url: str, ref: str = "main",
                     translate: Callable[[str], str | None] | None = None) -> nbformat.NotebookNode:
    """The chapter as a notebook, with the install cell first and stable cell ids; with
    `translate` (a message -> its translation, or None), its Markdown cells translated."""
    notebook = jupytext.read(chapter, fmt="md:myst")
    root = next((p for p in Path(chapter).resolve().parents if (p / "_toc.yml").is_file()), None)
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and root is not None and ADDITIONS.search(cell.source):
            name = Path(chapter).resolve().relative_to(root).as_posix()
            # a translation finds the list's lines as the page has them, names as roles
            additions = reference.chapter_additions(root, name, plain=translate is None).strip()
            cell.source = ADDITIONS.sub(lambda _: additions, cell.source)
        if cell.cell_type == "markdown" and translate is not None:
            cell.source = PYTHON_ROLE.sub(r"`\1`", translated_markdown(cell.source, translate))
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


# A name in the package reference, as the additions list links it: `{py:func}`f(x) <target>``.
PYTHON_ROLE = re.compile(r"\{py:\w+\}`([^`<]*?)(?:\s*<[^>`]*>)?`")
# Directives whose content is Markdown a reader reads (and a catalogue translates).
PROSE_DIRECTIVES = {"note", "tip", "hint", "important", "warning", "caution", "attention", "danger",
                    "error", "seealso", "admonition", "dropdown"}


def markdown_parser():  # -> markdown_it.MarkdownIt, as MyST reads the book's pages
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(enable_extensions={"dollarmath", "amsmath", "colon_fence", "deflist", "substitution"})
    return create_md_parser(config, RendererHTML)


def translated_markdown(text: str, translate: Callable[[str], str | None]) -> str:
    """`text` (a Markdown cell) with each paragraph, heading, list item, definition term and table cell that
    `translate` knows replaced by its translation, on one line, after the markers it had
    (`## `, `- `, `1. `, `> `); a table row is written again cell by cell."""
    lines = text.split("\n")
    tokens = markdown_parser().parse(text)
    replacements: list[tuple[int, int, list[str]]] = []
    for index, token in enumerate(tokens):
        if token.type in ("paragraph_open", "heading_open", "dt_open") and token.map:
            content = tokens[index + 1].content
            translation = translate(message_of(content))
            if translation is None:
                continue
            start, end = token.map
            if token.type == "dt_open":  # a definition's term: its one line (its map is empty)
                end = start + 1
            first = content.split("\n")[0]
            column = lines[start].find(first)
            prefix = lines[start][:column] if column >= 0 else ""
            replacements.append((start, end, [prefix + translation]))
        elif token.type == "tr_open" and token.map:
            cells = []
            for inner in tokens[index + 1:]:
                if inner.type == "tr_close":
                    break
                if inner.type == "inline":
                    cells.append((inner.content, translate(message_of(inner.content))))
            if any(translation is not None for _, translation in cells):
                row = " | ".join(translation or content for content, translation in cells)
                replacements.append((token.map[0], token.map[0] + 1, [f"| {row} |"]))
        elif token.type in ("fence", "colon_fence") and token.map and \
                token.info.strip().strip("{}").split("}")[0] in PROSE_DIRECTIVES:
            start, end = token.map
            inside = translated_markdown(token.content.rstrip("\n"), translate).split("\n")
            replacements.append((start + 1, start + 1 + len(token.content.rstrip("\n").split("\n")), inside))
    for start, end, new in sorted(replacements, reverse=True):
        lines[start:end] = new
    return "\n".join(lines)


def message_of(content: str) -> str:
    """A paragraph's message, as Sphinx extracts it: its line breaks are spaces."""
    return content.replace("\n", " ").strip()


def catalogue_translations(path: Path) -> Callable[[str], str | None]:
    """The translations of a page's catalogue: message -> translation, or None when it has
    none (missing, empty or fuzzy)."""
    from babel.messages.pofile import read_po

    with path.open("rb") as handle:
        found = {m.id: m.string for m in read_po(handle) if m.id and m.string and not m.fuzzy}
    return found.get


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
