"""Runs: folders and locks, checkpoints, provenance, hardware and load. No training code.

Imports the layers below it (`models`, `data`, `nn`, `tokenize`, `io`).
"""

from scratchformer._compat import old_names

# The names this module had before release 0.3.0 still import from it, with a DeprecationWarning.
__getattr__ = old_names(__name__)
