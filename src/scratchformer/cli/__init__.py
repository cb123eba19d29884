"""The `scratchformer` command: one module per group of commands (the appendix "Running it for real").

The top layer: it may import any other.
"""


# The names this module had before release 0.3.0 still import from it, with a DeprecationWarning.
def __getattr__(name: str) -> object:
    from scratchformer._compat import moved_name

    return moved_name(__name__, name)
