"""Chapter 11's hand-written reviews and order pairs: the sets are what the page says they are,
and the record's counts follow from its per-text scores."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from support import ROOT
from scratchbook.record import RecordError
from scratchbook.records.handwritten import (MODELS, PAIR_KINDS, REVIEW_KINDS,
                                             accuracy_by_kind, accuracy_difference,
                                             confident_errors, handwritten_figures,
                                             pairs_both_right, pairs_ordered,
                                             read_handwritten, reading_figures)

RESULTS = ROOT / "book" / "results"
WORD = re.compile(r"[a-z']+")


def json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def record() -> dict:
    return read_handwritten(RESULTS / "handwritten_reviews.json")


def test_the_reviews_are_many_balanced_and_of_every_kind() -> None:
    reviews = json_lines(RESULTS / "handwritten_reviews.jsonl")
    assert len(reviews) >= 64
    assert len({r["text"] for r in reviews}) == len(reviews), "a review is written twice"
    assert Counter(r["label"] for r in reviews) == {0: len(reviews) // 2, 1: len(reviews) // 2}
    for kind in REVIEW_KINDS:
        labels = Counter(r["label"] for r in reviews if r["kind"] == kind)
        assert labels[0] == labels[1] > 0, f"{kind}: {labels}"
    assert {r["kind"] for r in reviews} == set(REVIEW_KINDS)


def test_each_pair_holds_the_same_words_in_another_order() -> None:
    pairs = json_lines(RESULTS / "order_pairs.jsonl")
    assert len(pairs) >= 24
    for pair in pairs:
        positive, negative = (WORD.findall(pair[k].lower()) for k in ("positive", "negative"))
        assert Counter(positive) == Counter(negative), pair
        assert positive != negative, pair
        assert pair["kind"] in PAIR_KINDS


def test_the_record_scores_exactly_the_committed_sets(record: dict) -> None:
    reviews = json_lines(RESULTS / "handwritten_reviews.jsonl")
    pairs = json_lines(RESULTS / "order_pairs.jsonl")
    assert [{k: r[k] for k in ("text", "label", "kind")} for r in record["reviews"]] == reviews
    assert [{k: p[k] for k in ("positive", "negative", "kind")} for p in record["pairs"]] == pairs
    assert record["models"]["transformer"]["is_served_model"], "not the model the page serves"


def test_the_accuracies_recompute_from_the_scores(record: dict) -> None:
    for model in MODELS:
        threshold = record["models"][model]["threshold"]
        right = Counter()
        total = Counter()
        for review in record["reviews"]:
            correct = int(review["scores"][model] > threshold) == review["label"]
            for key in ("overall", review["kind"]):
                right[key] += correct
                total[key] += 1
        for key in ("overall", *REVIEW_KINDS):
            recorded = record["accuracy"][model][key]
            assert (recorded["right"], recorded["reviews"]) == (right[key], total[key])
            assert recorded["accuracy"] == pytest.approx(right[key] / total[key])


def test_the_pair_counts_recompute_from_the_scores(record: dict) -> None:
    for model in MODELS:
        counts = Counter()
        for pair in record["pairs"]:
            higher, lower = (pair["scores"][model][k] for k in ("positive", "negative"))
            outcome = "ordered" if higher > lower else "tied" if higher == lower else "reversed"
            counts[("overall", outcome)] += 1
            counts[(pair["kind"], outcome)] += 1
        for kind in ("overall", *PAIR_KINDS):
            recorded = record["pairs_ordered"][model][kind]
            for outcome in ("ordered", "tied", "reversed"):
                assert recorded[outcome] == counts[(kind, outcome)], (model, kind, outcome)
            assert recorded["pairs"] == sum(recorded[o] for o in ("ordered", "tied", "reversed"))


def test_a_pair_both_right_is_a_pair_ordered(record: dict) -> None:
    for model in MODELS:
        both = pairs_both_right(record, model)
        assert 0 <= both <= record["pairs_ordered"][model]["overall"]["ordered"]
    errors, confident = confident_errors(record, "transformer")
    assert errors == len(record["reviews"]) - record["accuracy"]["transformer"]["overall"]["right"]
    assert 0 <= confident <= errors
    with pytest.raises(ValueError, match="not a probability"):
        confident_errors(record, "nbsvm")


def test_bag_of_words_cannot_tell_a_pair_apart(record: dict) -> None:
    """Same words, same features, same score: every pair is a tie for a unigram model."""
    counts = record["pairs_ordered"]["bag_of_words"]["overall"]
    assert counts["tied"] == counts["pairs"] == len(record["pairs"])


def test_the_tables_have_a_row_per_model_and_the_figures_agree(record: dict) -> None:
    accuracy = accuracy_by_kind(record).data.splitlines()
    pairs = pairs_ordered(record).data.splitlines()
    by_kind = pairs_ordered(record, by_kind=True).data.splitlines()
    assert len(accuracy) == len(pairs) == len(by_kind) == 2 + len(MODELS)
    assert pairs[0].count("|") == 6 and by_kind[0].count("|") == 2 + len(PAIR_KINDS)
    figures = handwritten_figures(record)
    assert figures["handwritten_reviews"] == str(len(record["reviews"]))
    nbsvm = record["accuracy"]["nbsvm"]["overall"]
    assert figures["handwritten_nbsvm_right"] == str(nbsvm["right"])
    difference = accuracy_difference(record, "transformer", "nbsvm")
    transformer = record["accuracy"]["transformer"]["overall"]
    assert difference["mean"] == pytest.approx(100 * (transformer["accuracy"] - nbsvm["accuracy"]))
    assert difference["df"] == len(record["reviews"]) - 1
    with pytest.raises(ValueError, match="model must be one of"):
        accuracy_difference(record, "transformer", "gpt")


def test_a_damaged_record_is_refused_with_what_is_missing(tmp_path: Path, record: dict) -> None:
    damaged = json.loads(json.dumps(record))  # a copy: the fixture serves every test
    del damaged["pairs_ordered"]
    path = tmp_path / "handwritten_reviews.json"
    path.write_text(json.dumps(damaged))
    with pytest.raises(ValueError, match="no 'pairs_ordered'"):
        read_handwritten(path)
    damaged = json.loads(json.dumps(record))
    del damaged["accuracy"]["nbsvm"]["short"]
    path.write_text(json.dumps(damaged))
    with pytest.raises(ValueError, match="accuracy of 'nbsvm' has no .* for 'short'"):
        read_handwritten(path)
    with pytest.raises(RecordError, match="does not exist"):
        read_handwritten(tmp_path / "missing.json")


def test_the_prose_figures_refuse_a_record_that_turns_a_reading_around(record: dict) -> None:
    figures = reading_figures(record)
    assert figures["handwritten_transformer_accuracy"] == "76.2%"
    assert figures["coin_range"] == "10 to 20" and figures["served_meh"] == "0.5195"
    turned = json.loads(json.dumps(record))
    served = turned["pairs_ordered"]["transformer"]["overall"]
    served["ordered"], served["reversed"] = served["reversed"], served["ordered"]
    with pytest.raises(ValueError, match="served model orders fewer than a coin's low end"):
        reading_figures(turned)
    # "sometimes sure when wrong, where bag of words never is": a bag-of-words error made
    # with conviction turns it around
    sure = json.loads(json.dumps(record))
    wrong = next(r for r in sure["reviews"] if (r["scores"]["bag_of_words"] > 0.5) != r["label"])
    wrong["scores"]["bag_of_words"] = 0.01 if wrong["label"] else 0.99
    with pytest.raises(ValueError, match="some served errors confident, no bag-of-words error"):
        reading_figures(sure)
