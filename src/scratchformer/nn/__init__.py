"""The layers of a Transformer: embeddings, positions, attention and the block (chapters 2-9).

Imports nothing of the package: torch only.
"""
