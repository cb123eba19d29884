"""scratchformer: the Transformer the book *Transformers from Scratch* builds, chapter by chapter.

Sub-packages by layer, each importing only those below it: `io`, then `tokenize` and `nn`,
`data`, `models`, `runs`, `measure`, `train`, `web`, `cli`. Most modules are generated from the
chapters that teach them (see `tools/export.py`); the rest say in their docstring why they are
written by hand. What moved between releases is in CHANGELOG.md.
"""

__version__ = "0.4.0"
