"""Exporting the book's models and tokenizers for the browser (the appendix "Running the models in the browser").

Imports every layer below it; nothing of `cli`.
"""
