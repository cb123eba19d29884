"""Training: the loops of chapters 11-13, their settings and presets, fine-tuning, loading a classifier.

Imports every layer below it; nothing of `web` or `cli`.
"""

from scratchformer._compat import old_names

# The names this module had before release 0.3.0 still import from it, with a DeprecationWarning.
__getattr__ = old_names(__name__)
