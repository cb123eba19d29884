"""Data: IMDB readers, framing reviews as model inputs, batches, language-model windows, caches.

Imports `tokenize`, `nn` and `io` from the package.
"""
