"""What every chapter's page needs around its recorded results: where they are, a Markdown
table, a piece of text glued into the prose.

Written by hand, not exported. Needs IPython (and MyST-NB for `glue_md`), both installed with
the book's requirements (`pip install .[book]`); it does not handle pages built outside the
repository (the records live in `book/results/`, which the package does not install).
"""

from __future__ import annotations

from pathlib import Path

from IPython.display import Markdown


def book_root(starts: list[Path] | None = None) -> Path:
    """The repository's root (the folder holding `_toc.yml`), found from the working directory
    or from the package when it is installed in editable mode.

    Described in the appendix "Running it for real"."""
    import scratchformer

    starts = starts or [Path.cwd(), Path(scratchformer.__file__).resolve().parent]
    root = next((p for start in starts for p in [start, *start.parents]
                 if (p / "_toc.yml").exists()), None)
    if root is None:
        raise FileNotFoundError("run this chapter inside the scratchformer repository: "
                                "its recorded results are in book/results/")
    return root


def markdown_table(header: list[str], rows: list[list[object]]) -> Markdown:
    """A Markdown table of `rows` under `header`, for a page to display.

    Described in the appendix "Running it for real"."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def glue_md(name: str, text: str) -> None:
    """Glue a piece of text for the prose, where it is rendered as Markdown.

    Described in the appendix "Running it for real"."""
    from myst_nb import glue

    glue(name, Markdown(text), display=False)
