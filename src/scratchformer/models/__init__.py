"""Models assembled from the layers: BERT (chapter 10), GPT (chapter 12), pretraining heads (chapter 13).

Imports `nn`, `data`, `tokenize` and `io` from the package.
"""
