"""Export the book's tagged code cells into the `scratchformer` package, and check the book.

The command line of `tools/book/` (the book's tooling, one module per job): `tools/book/cli.py`
documents every mode. In short:

    python tools/export.py           # write src/scratchformer/ from the chapters
    python tools/export.py --check   # exit 1 listing every problem
    python tools/export.py --update  # carry hand edits of generated modules back into the chapters
    python tools/export.py --where src/scratchformer/<module>.py:<line>

Run it with the project's virtual environment (`make export`, or `.venv/bin/python
tools/export.py` after `make venv`): it needs jupytext and PyYAML.
"""

from __future__ import annotations

import sys

try:
    import jupytext  # noqa: F401 (the book's tooling needs it: say so before anything else)
    import yaml  # noqa: F401
except ImportError as err:  # the system Python, without the project's packages
    sys.exit(
        f"tools/export.py needs the project's virtual environment ({err}).\n"
        "Run `make export` (it creates .venv/ first if needed), or `make venv` and then "
        "`.venv/bin/python tools/export.py`."
    )

from book.cli import main  # noqa: E402 (after the check above)

if __name__ == "__main__":
    sys.exit(main())
