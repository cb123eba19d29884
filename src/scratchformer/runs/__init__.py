"""Runs: folders and locks, checkpoints, provenance, hardware and load. No training code.

Imports the layers below it (`models`, `data`, `nn`, `tokenize`, `io`).
"""
