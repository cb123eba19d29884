"""Training: the loops of chapters 11-13, their settings and presets, fine-tuning, loading a classifier.

Imports every layer below it; nothing of `web` or `cli`.
"""
