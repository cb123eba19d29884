"""The honest baselines of the appendix "Models that count": majority class, bag-of-words
logistic regression, NBSVM.

Everything runs on tiny reviews written here; nothing needs IMDB.
"""

from __future__ import annotations

import math
import random

import pytest
import torch

from scratchformer.measure.baselines import (LOSSES, accuracy, build_vocabulary,
                                             count_features, fit_bag_of_words,
                                             fit_majority, fit_nbsvm, interpolate,
                                             log_count_ratio, review_words, scale_columns,
                                             train_linear, word_ngrams)

POSITIVE = ["great", "wonderful", "loved", "superb"]
NEGATIVE = ["awful", "boring", "hated", "dreadful"]
FILLER = ["the", "movie", "plot", "actor", "scene", "was", "a", "and"]


def separable_reviews(count: int, seed: int) -> tuple[list[str], list[int]]:
    """Neutral filler with one sentiment word that alone decides the label."""
    rng = random.Random(seed)
    texts, labels = [], []
    for i in range(count):
        label = i % 2
        words = [rng.choice(FILLER) for _ in range(rng.randint(3, 12))]
        words.insert(rng.randint(0, len(words)), rng.choice(POSITIVE if label else NEGATIVE))
        texts.append(" ".join(words) + ("<br /><br />" if i % 3 == 0 else ""))
        labels.append(label)
    return texts, labels


def test_words_are_lower_cased_without_line_breaks() -> None:
    assert review_words("Great<br />FILM, isn't it?<br/>Yes!") == ["great", "film", "isn't", "it", "?", "yes", "!"]
    assert word_ngrams(["not", "good", "at", "all"], 2) == ["not", "good", "at", "all", "not good", "good at", "at all"]
    assert word_ngrams(["a"], 3) == ["a"]


def test_vocabulary_keeps_terms_in_enough_documents() -> None:
    docs = [["a", "b", "a"], ["b", "c"], ["b"]]
    assert build_vocabulary(docs) == {"a": 0, "b": 1, "c": 2}
    assert build_vocabulary(docs, min_count=2) == {"b": 0}  # "a" twice but in one document


def test_features_are_binarized(device: torch.device) -> None:
    docs = [["good", "good", "good", "movie"], ["bad", "movie", "bad"], ["unseen"]]
    vocabulary = {"good": 0, "movie": 1, "bad": 2}
    binary = count_features(docs, vocabulary, binary=True, device=device)
    counts = count_features(docs, vocabulary, binary=False, device=device)
    assert binary.layout == torch.sparse_csr and binary.device.type == device.type
    expected_counts = torch.tensor([[3.0, 1, 0], [0, 1, 2], [0, 0, 0]])
    assert torch.equal(counts.to_dense().cpu(), expected_counts)
    assert torch.equal(binary.to_dense().cpu(), (expected_counts > 0).float())
    assert set(binary.values().cpu().tolist()) == {1.0}


def test_log_count_ratio_equals_a_hand_computation(device: torch.device) -> None:
    # Two positive and two negative documents over five words; alpha = 1.
    docs = [["good", "movie"], ["great", "good", "good"], ["bad", "movie"], ["bad", "plot"]]
    labels = [1, 1, 0, 0]
    vocabulary = build_vocabulary(docs)
    assert list(vocabulary) == ["good", "movie", "great", "bad", "plot"]
    features = count_features(docs, vocabulary, binary=True, device=device)
    ratio = log_count_ratio(features, labels, alpha=1.0)
    # p = 1 + positive documents containing each word = [3, 2, 2, 1, 1], |p|_1 = 9
    # q = 1 + negative documents containing each word = [1, 2, 1, 3, 2], |q|_1 = 9
    p, q = [3, 2, 2, 1, 1], [1, 2, 1, 3, 2]
    expected = torch.tensor([math.log((a / 9) / (b / 9)) for a, b in zip(p, q)])
    torch.testing.assert_close(ratio.cpu(), expected, rtol=0, atol=1e-6)
    # alpha = 0.5: p = [2.5, 1.5, 1.5, .5, .5] (6.5), q = [.5, 1.5, .5, 2.5, 1.5] (6.5)
    half = log_count_ratio(features, labels, alpha=0.5)
    expected_half = torch.tensor([math.log(2.5 / 0.5), 0.0, math.log(3.0), math.log(0.2), math.log(1 / 3)])
    torch.testing.assert_close(half.cpu(), expected_half, rtol=0, atol=1e-6)


def test_scale_columns_and_interpolate(device: torch.device) -> None:
    features = count_features([["a", "b"], ["b"]], {"a": 0, "b": 1}, device=device)
    scaled = scale_columns(features, torch.tensor([2.0, -3.0], device=device))
    assert torch.equal(scaled.to_dense().cpu(), torch.tensor([[2.0, -3.0], [0.0, -3.0]]))
    weight = torch.tensor([1.0, -3.0])
    assert torch.equal(interpolate(weight, 1.0), weight)
    assert torch.equal(interpolate(weight, 0.0), torch.tensor([2.0, 2.0]))
    torch.testing.assert_close(interpolate(weight, 0.25), torch.tensor([1.75, 0.75]))


def test_majority_baseline_returns_the_majority_share() -> None:
    model = fit_majority(["a", "b", "c", "d"], [1, 0, 1, 1])
    assert model.label == 1 and model.share == 0.75
    assert model.predict(["x", "y"]).tolist() == [1, 1]
    assert accuracy(model.predict(["x"] * 4), [1, 0, 1, 1]) == 0.75
    tie = fit_majority(["a", "b"], [1, 0])
    assert tie.label == 0 and tie.share == 0.5


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_train_linear_separates_separable_features(loss: str, device: torch.device) -> None:
    docs = [["good"], ["good", "film"], ["bad", "film"], ["bad"]]
    features = count_features(docs, build_vocabulary(docs), device=device)
    weight, bias = train_linear(features, [1, 1, 0, 0], loss, l2=1e-3)
    scores = features @ weight + bias
    assert weight.device.type == device.type
    assert (scores[:2] > 0).all() and (scores[2:] < 0).all()


@pytest.mark.parametrize(
    "fit",
    [
        lambda texts, labels, device: fit_bag_of_words(texts, labels, min_count=1, device=device),
        lambda texts, labels, device: fit_bag_of_words(texts, labels, binary=False, device=device),
        lambda texts, labels, device: fit_nbsvm(texts, labels, device=device),
        lambda texts, labels, device: fit_nbsvm(texts, labels, beta=1.0, loss="logistic", device=device),
    ],
    ids=["bag-of-words-binary", "bag-of-words-tf", "nbsvm", "nb-lr"],
)
def test_each_classifier_separates_a_separable_set(fit, device: torch.device) -> None:
    texts, labels = separable_reviews(200, seed=0)
    model = fit(texts, labels, device)
    assert model.weight.device.type == device.type
    assert accuracy(model.predict(texts), labels) == 1.0
    unseen_texts, unseen_labels = separable_reviews(100, seed=1)
    assert accuracy(model.predict(unseen_texts), unseen_labels) == 1.0
    assert model.predict([]).shape == (0,)


def test_nbsvm_weights_act_on_binary_uni_and_bigrams() -> None:
    model = fit_nbsvm(["good film", "bad film"], [1, 0])
    assert model.binary and model.ngrams == 2
    assert set(model.vocabulary) == {"good", "film", "good film", "bad", "bad film"}
    assert model.predict(["good good good bad"]).tolist() == model.predict(["good bad"]).tolist()


@pytest.mark.parametrize("fit", [fit_majority, fit_bag_of_words, fit_nbsvm])
@pytest.mark.parametrize(
    ("texts", "labels", "message"),
    [
        ([], [], "no texts"),
        (["good", "bad"], [1, 2], "0 \\(negative\\) or 1 \\(positive\\)"),
        (["good", "bad"], [1, -1], "0 \\(negative\\) or 1 \\(positive\\)"),
        (["good", "bad", "ok"], [1, 0], "3 texts but 2 labels"),
        (["good"], [1, 0], "1 texts but 2 labels"),
        (["good", None], [1, 0], "every text must be a string"),
    ],
)
def test_bad_input_is_refused_clearly(fit, texts: list, labels: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit(texts, labels)


def test_train_linear_refuses_unknown_loss_and_mismatched_rows() -> None:
    features = count_features([["a"], ["b"]], {"a": 0, "b": 1})
    with pytest.raises(ValueError, match="loss must be one of"):
        train_linear(features, [1, 0], loss="hinge")
    with pytest.raises(ValueError, match="2 feature rows but 3 labels"):
        train_linear(features, [1, 0, 1])
