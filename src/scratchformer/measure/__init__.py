"""Measurements: evaluation, baselines that count (bag of words, NBSVM) and n-gram models.

Imports the layers below it (`runs`, `models`, `data`, `nn`, `tokenize`, `io`).
"""
