"""Validation sentences labelled as texts: the short texts on which chapter 11 chooses the
model its box serves.

`ch11_sentences.py` scores every run on one sentence of each review of its seed's validation
slice, labelled as its review is: a noisy stand-in for a short review, since many sentences of
a review say nothing of its verdict. Here a random draw of those same sentences (`PER_SEED` of
each seed's, `drawn`) is read by two annotators, two language models working independently
(no person labelled them), which label every sentence, read alone, `positive`, `negative` or
`none` (no verdict on the film, or both), by the written guide `labelling_guide.md` beside
this file, which each was given; a sentence both label with the same verdict is kept with
it, the rest are left out. `book/results/sentences_labelled.jsonl` holds, per sentence, the
seed, its place among the seed's validation sentences, the sha256 of its text (checked when
read, so a changed draw is refused rather than mislabelled) and the two labels; not the text,
which is IMDB's and is rebuilt from the data.

What this deliberately does not handle: sentences of other slices than the runs' own
validation, annotators other than two, and labels on a scale (a verdict or none).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from scratchbook.records import SENTENCES_LABELLED

LABELS = SENTENCES_LABELLED.path
PER_SEED = 500  # sentences of each seed's validation drawn for labelling
VERDICTS = ("negative", "positive")  # a kept sentence's label is its index here
LABEL_WORDS = (*VERDICTS, "none")


def validation_sentences(labels: list[int], tokens: list, seed: int, held: str,
                         val_size: int) -> tuple[list, list[int]]:
    """One sentence of each review of the seed's validation slice (drawn with the seed) and
    the label of the review it came from: the sentences every run of the seed is scored on."""
    from scratchformer.data.holdout import holdout  # here: the tools read their arguments
    from scratchformer.data.sentences import draw_sentences  # before torch is imported

    val_index, _ = (i.tolist() for i in holdout(labels, val_size, seed, held))
    sentences, owners = draw_sentences([tokens[i] for i in val_index], 1, seed)
    return sentences, [labels[val_index[owner]] for owner in owners]


def sentence_text(sentence: np.ndarray) -> str:
    """A sentence's GPT-2 tokens as the text an annotator reads."""
    from scratchformer.data.framing import review_encoding

    return review_encoding().decode(sentence.tolist()).strip()


def text_sha256(text: str) -> str:
    """The first 16 hex digits of the sha256 of a sentence's text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def drawn(count: int, seed: int) -> list[int]:
    """The places, in order, of `PER_SEED` of a seed's `count` validation sentences drawn for
    labelling (a draw of its own, apart from the one that picked each review's sentence)."""
    generator = np.random.default_rng([11, seed])
    return sorted(generator.choice(count, min(PER_SEED, count), replace=False).tolist())


def read_labels(path: Path = LABELS) -> list[dict]:
    """The labelled sentences' rows, each checked: a seed, a place, a text's sha256 and two
    labels of `LABEL_WORDS`; a ValueError naming the file and line otherwise."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        row = json.loads(line)
        if (set(row) != {"seed", "index", "sha256", "labels"} or len(row["labels"]) != 2
                or not set(row["labels"]) <= set(LABEL_WORDS)):
            raise ValueError(f"{path}:{number}: not a labelled sentence: {line}")
        rows.append(row)
    return rows


def kept_labels(rows: list[dict], seed: int, sentences: list[np.ndarray]) -> dict[int, int]:
    """{place: label} of the seed's sentences both annotators gave the same verdict, each
    text's sha256 checked against the row's (a ValueError if the draw has changed)."""
    kept = {}
    for row in rows:
        if row["seed"] != seed:
            continue
        if text_sha256(sentence_text(sentences[row["index"]])) != row["sha256"]:
            raise ValueError(f"seed {seed}, sentence {row['index']}: its text is not the one "
                             "that was labelled (the sentences are drawn otherwise now)")
        first, second = row["labels"]
        if first == second and first in VERDICTS:
            kept[row["index"]] = VERDICTS.index(first)
    return kept
