"""A review's sentences, cut from its GPT-2 tokens (chapter 11, "Learning from unlabelled
reviews")."""

import numpy as np
import pytest

from scratchformer.data.framing import review_encoding
from scratchformer.data.sentences import draw_sentences, review_sentences

TEXT = 'Meh. I was not disappointed for a second! Was it good? "Yes." Mr. Smith and the end'


def tokens(text: str) -> np.ndarray:
    return np.array(review_encoding().encode_ordinary(text), dtype=np.uint16)


def texts(pieces: list[np.ndarray]) -> list[str]:
    return [review_encoding().decode(piece.tolist()) for piece in pieces]


def test_cut_after_each_final_mark_and_kept_by_length() -> None:
    review = tokens(TEXT)
    assert review[:3].tolist() == [5308, 71, 13]  # "Meh" "." : golden GPT-2 ids
    assert texts(review_sentences(review)) == [
        "Meh.", " I was not disappointed for a second!", " Was it good?", ' "Yes."',
        " Smith and the end"]  # " Mr." is 2 tokens, under the 3 kept by default
    assert texts(review_sentences(review, shortest=1, longest=5)) == [
        "Meh.", " Was it good?", ' "Yes."', " Mr.", " Smith and the end"]
    # the pieces, put back together, are the review: nothing moved or lost
    pieces = review_sentences(review, shortest=1, longest=len(review))
    assert np.concatenate(pieces).tolist() == review.tolist()


def test_draw_is_seeded_and_names_each_sentences_review() -> None:
    review = tokens(TEXT)
    sentences, owners = draw_sentences([review, review[:3], review], 1, seed=0)
    assert texts(sentences) == [" Smith and the end", "Meh.", ' "Yes."']  # golden, seed 0
    assert owners == [0, 1, 2]
    again, _ = draw_sentences([review, review[:3], review], 1, seed=0)
    assert [s.tolist() for s in again] == [s.tolist() for s in sentences]
    many, owners = draw_sentences([review, tokens("no final mark here")], 9, seed=1)
    assert owners == [0] * 5 + [1]  # all five of the first, in order; the unmarked review whole
    assert texts(many)[:2] == ["Meh.", " I was not disappointed for a second!"]


def test_bad_lengths_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="shortest <= longest"):
        review_sentences(tokens(TEXT), shortest=5, longest=4)
    with pytest.raises(ValueError, match="per_review"):
        draw_sentences([tokens(TEXT)], 0, seed=0)
