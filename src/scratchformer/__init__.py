"""scratchformer: the Transformer the book *Transformers from Scratch* builds, chapter by chapter.

Sub-packages by layer, each importing only those below it: `io`, then `tokenize` and `nn`,
`data`, `models`, `runs`, `measure`, `train`, `web`, `cli`. Their modules are generated from the
chapters that teach them (see `tools/export.py`). The paths of releases 0.1.0 and 0.2.0
(`scratchformer.attention`, ...) still import, with a DeprecationWarning (`_compat`).
"""

import sys

from scratchformer._compat import OldPathFinder

__version__ = "0.3.0"

if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
    sys.meta_path.append(OldPathFinder())
