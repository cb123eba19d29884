"""The `scratchformer` command: one module per group of commands (the appendix "Running it for real").

The top layer: it may import any other.
"""

from scratchformer._compat import old_names

# The names this module had before release 0.3.0 still import from it, with a DeprecationWarning.
__getattr__ = old_names(__name__)
