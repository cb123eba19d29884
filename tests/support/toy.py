"""Toy data the package's tests train on: review-like texts whose label two words tell, the
folders and loaders made of them, and the smallest BERT configuration."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from scratchformer.data.batches import ReviewLoader
from scratchformer.data.imdb import ReviewSplit
from scratchformer.data.review_cache import encode_reviews
from scratchformer.models.bert import BertConfig

FILLER = ["the", "movie", "plot", "actor", "scene", "was", "a", "and", "camera", "story"]
POSITIVE = ["great", "wonderful", "loved", "superb"]
NEGATIVE = ["awful", "boring", "hated", "terrible"]


def toy_texts(count: int, seed: int) -> tuple[list[str], list[int]]:
    rng = random.Random(seed)
    texts, labels = [], []
    for i in range(count):
        label = i % 2
        words = [rng.choice(FILLER) for _ in range(rng.randint(4, 25))]
        words.insert(rng.randint(0, len(words)), rng.choice(POSITIVE if label else NEGATIVE))
        texts.append(" ".join(words) + ".<br /><br />The end.")
        labels.append(label)
    return texts, labels


REVIEW_POSITIVE = ["great", "wonderful", "loved", "superb", "brilliant"]
REVIEW_NEGATIVE = ["awful", "boring", "hated", "terrible", "dreadful"]


def toy_reviews(count: int, seed: int) -> ReviewSplit:
    """Reviews whose label is told by two sentiment words hidden in neutral filler."""
    rng = random.Random(seed)
    texts, labels = [], []
    for i in range(count):
        label = i % 2
        words = [rng.choice(FILLER) for _ in range(rng.randint(3, 30))]
        for _ in range(2):
            words.insert(rng.randint(0, len(words)), rng.choice(REVIEW_POSITIVE if label else REVIEW_NEGATIVE))
        texts.append(" ".join(words) + "<br /><br />The end.")
        labels.append(label)
    return ReviewSplit(texts, labels, "toy")


def write_jsonl(path: Path, split: ReviewSplit) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as handle:
        for text, label in zip(split.texts, split.labels):
            handle.write(json.dumps({"text": text, "label": label}) + "\n")


def tiny_config(**changes: object) -> BertConfig:
    settings_ = {"d_model": 16, "num_layers": 2, "num_heads": 2, "d_hidden": 32, "max_len": 32, "dropout": 0.0}
    return BertConfig(**{**settings_, **changes})


def toy_loaders(cache: Path, batch_size: int = 16) -> tuple[ReviewLoader, ReviewLoader]:
    ids, labels = encode_reviews(toy_reviews(80, seed=7), max_len=32, cache_dir=cache)
    fit = ReviewLoader(ids[:64], labels[:64], batch_size, shuffle=True, seed=0, length_groups=2)
    return fit, ReviewLoader(ids[64:], labels[64:], 16)
