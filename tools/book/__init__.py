"""The book's tooling, one module per job; `tools/export.py` is its command line.

- `cells`: read the toc and a chapter's code cells, their tags and chapter lines;
- `chapters`: the exported cells of the whole book, grouped by module;
- `render`: the text of each generated module and the chapter line of each of its lines;
- `write`: write the package, refusing to overwrite a hand edit; the diff of `--check`;
- `update`: carry a hand edit of a generated module back into its chapter;
- `sync`: notebooks beside the chapters, and merging a notebook and a chapter that both changed;
- `pages`: files beside the chapters the book would ignore;
- `package_lint`: the package as the chapters generate it imports and uses no undefined name;
- `chapter_lint`: every code cell of every chapter uses no undefined name (pyflakes);
- `conventions`: every static convention of the book, in one checker (`make check`): a chapter's
  structure (map, summary, exercises, closing section) and what it says about the package, with
  `cell_conventions` (code width, alt text, what is shown and folded) and `layers` (the package's
  imports run down its layers);
- `where`: the chapter line a generated line comes from;
- `run`: execute one chapter against the current package;
- `scaffold`: a new chapter that passes every check;
- `site`, `rebuild`, `parallel`, `reference`, `notebooks`: the Sphinx extensions and what they
  publish (`parallel`: the chapters a build must run, `BOOK_JOBS` at a time).

The names below are the ones other code uses (the tests, the Sphinx extensions).
"""

from book.cells import (CODE_CELL_FENCE, HEADING, PACKAGE, ExportError, cell_fence_lines,
                        cell_source_lines, numbered_chapters, read_myst, toc_chapters)
from book.chapters import Block, Module, Origin, collect
from book.cli import check_problems, main
from book.render import FINGERPRINT_MARK, fingerprint, recorded_fingerprint, generated, origins, render, without_fingerprint
from book.sync import notebook_state, stale_notebooks
from book.where import GENERATED_LINE, chapter_line, with_chapter_lines
from book.update import update
from book.write import check, export, hand_edited

__all__ = ["recorded_fingerprint", "GENERATED_LINE", "FINGERPRINT_MARK", "fingerprint", "hand_edited", "update", "without_fingerprint", "CODE_CELL_FENCE", "HEADING", "PACKAGE", "Block", "ExportError", "Module", "Origin",
           "cell_fence_lines", "cell_source_lines", "chapter_line", "check", "check_problems",
           "collect", "export", "generated", "main", "notebook_state", "numbered_chapters",
           "origins", "read_myst", "render", "stale_notebooks", "toc_chapters",
           "with_chapter_lines"]
