"""The `scratchformer` command: one module per group of commands (the appendix "Running it for real").

The top layer: it may import any other.
"""
