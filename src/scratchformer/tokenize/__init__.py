"""Text to token ids: chapter 1's BPE, byte-level BPE, word-level BPE and GPT-2's files.

Imports only `scratchformer.io` from the package.
"""
