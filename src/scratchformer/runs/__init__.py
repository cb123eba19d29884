"""Runs: folders and locks, checkpoints, provenance, hardware and load. No training code.

Imports the layers below it (`models`, `data`, `nn`, `tokenize`, `io`).
"""


# The names this module had before release 0.3.0 still import from it, with a DeprecationWarning.
def __getattr__(name: str) -> object:
    from scratchformer._compat import moved_name

    return moved_name(__name__, name)
