"""scratchformer: the Transformer the book *Transformers from Scratch* builds, chapter by chapter.

Each submodule is generated from the chapters that teach it (see `tools/export.py`).
"""

__version__ = "0.2.0"
