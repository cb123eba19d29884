"""Training: the loops of chapters 11-13, their settings and presets, fine-tuning, loading a classifier.

Imports every layer below it; nothing of `web` or `cli`.
"""


# The names this module had before release 0.3.0 still import from it, with a DeprecationWarning.
def __getattr__(name: str) -> object:
    from scratchformer._compat import moved_name

    return moved_name(__name__, name)
