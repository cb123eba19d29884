"""The order pairs found in held-out reviews (`book/results/order_pairs_found.json`, written by
`tools/records/ch11_order_pairs.py` with the rule of `tools/records/order_pairs.py`): every
row follows the rule from its own recorded scores, the draw and the halves are the seeded
ones, the check's summary recomputes from the checker's file, and the rule cuts and swaps
sentences as it says; with IMDB, every pair's texts are found again with the recorded hashes.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from support import record_script

rule = record_script("order_pairs")

RECORD = rule.read_pairs()


def test_every_row_follows_the_rule_from_its_own_scores() -> None:
    stressed_of = {kind: stressed for kind, _, stressed in rule.CONSTRUCTIONS}
    rows = RECORD["pairs"]
    assert [row["id"] for row in rows] == list(range(rule.SIZE)) == list(range(RECORD["size"]))
    assert RECORD["found"] >= rule.SIZE >= 300
    for row in rows:
        assert rule.leaning(row["x_score"], row["y_score"]), row
        assert row["stressed"] == stressed_of[row["kind"]], row
        assert row["positive_is"] == rule.positive_member(row["stressed"], row["x_score"],
                                                          row["y_score"]), row
        assert row["original_sha256"] != row["swapped_sha256"]
    places = [(row["review"], row["sentence"]) for row in rows]
    assert places == sorted(places, key=lambda p: (RECORD_ORDER[p[0]], p[1]))
    assert len(set(places)) == len(places)
    assert RECORD["kinds"] == dict(Counter(row["kind"] for row in rows))
    assert RECORD["positive_is"] == dict(Counter(row["positive_is"] for row in rows))


RECORD_ORDER = {review: n for n, review in enumerate(
    dict.fromkeys(row["review"] for row in RECORD["pairs"]))}


def test_the_halves_are_the_seeded_draw() -> None:
    _, halves = rule.draw(RECORD["found"])
    assert [row["half"] for row in RECORD["pairs"]] == halves
    assert RECORD["halves"] == {"test": rule.SIZE // 2, "validation": rule.SIZE // 2}
    assert RECORD["draw"]["seed"] == rule.DRAW_SEED


def test_the_check_recomputes_from_the_checkers_file() -> None:
    rows = [json.loads(line) for line in rule.CHECK.read_text().splitlines() if line.strip()]
    ids = [RECORD["pairs"][place]["id"] for place in rule.check_sample()]
    assert sorted(row["id"] for row in rows) == ids == RECORD["check"]["sample"]["ids"]
    assert len(ids) == rule.CHECK_SIZE == 50
    by_id = {row["id"]: row for row in RECORD["pairs"]}
    agrees = sum(row["judged"] == by_id[row["id"]]["positive_is"] for row in rows)
    neither = sum(row["judged"] == "neither" for row in rows)
    result = RECORD["check"]["result"]
    assert (result["agrees"], result["neither"], result["disagrees"]) == (
        agrees, neither, len(rows) - agrees - neither)
    assert result["agreement"] == pytest.approx(agrees / len(rows), abs=1e-12)
    assert "language model" in RECORD["provenance"]["checked_by"]


@pytest.mark.parametrize("sentence, kind, stressed, swapped", [
    ("The plot is weak, but the acting is great.", "but", "y",
     "The acting is great, but the plot is weak."),
    ("Tom Hanks is great but the script is a mess!", "but", "y",
     "The script is a mess but Tom Hanks is great!"),
    ("Although the acting is good, the film is a bore.", "although first", "y",
     "Although the film is a bore, the acting is good."),
    ("The film is a joy, though the ending drags on.", "although second", "x",
     "The ending drags on, though the film is a joy."),
    ("The film is a joy, yet the ending drags on.", "yet", "y",
     "The ending drags on, yet the film is a joy."),
])
def test_the_rule_cuts_and_swaps_a_sentence(sentence: str, kind: str, stressed: str,
                                            swapped: str) -> None:
    parts = rule.construction(sentence)
    assert (parts["kind"], parts["stressed"]) == (kind, stressed)
    assert rule.swapped(parts, {"the", "it"}) == swapped


@pytest.mark.parametrize("sentence", [
    "The plot is weak, but the acting is great, although short.",  # two contrast words
    "It is nothing but a bore, and the acting is weak.",  # an idiom
    "The plot is weak, but is saved by the cast.",  # no clause of its own after "but"
    "Good, but bad.",  # clauses too short
    "The plot (such as it is) is weak, but the acting is great.",  # brackets
])
def test_the_rule_finds_no_pair_where_it_says_it_skips(sentence: str) -> None:
    assert rule.construction(sentence) is None


def test_a_pair_leans_only_with_opposite_scores_far_enough_from_zero() -> None:
    assert rule.leaning(0.5, -0.5) and rule.leaning(-rule.LEAN, rule.LEAN)
    assert not rule.leaning(0.5, 0.5) and not rule.leaning(0.5, -0.1) and not rule.leaning(0, 1)
    assert rule.positive_member("y", -0.4, 0.6) == "original"
    assert rule.positive_member("x", -0.4, 0.6) == "swapped"


def test_the_pairs_are_found_again_in_imdb() -> None:
    """With IMDB and VADER, the rule finds every recorded pair's texts again (hashes match),
    both texts with the same words."""
    pytest.importorskip("vaderSentiment")
    from scratchformer.data.imdb import book_reviews
    from scratchformer.measure.baselines import review_words

    data = book_reviews()  # under SCRATCHFORMER_REQUIRE_IMDB=1 a missing copy raises
    if data is None:
        pytest.skip("no copy of IMDB can be reached")
    train = data["train"]
    rows = rule.pair_texts(RECORD, train.texts, train.labels)  # a changed text raises
    found = rule.find_pairs(train.texts, train.labels, rule.source_reviews(train.labels))
    assert len(found) == RECORD["found"]
    for row in rows:
        assert Counter(review_words(row["original"])) == Counter(review_words(row["swapped"]))
        assert {row["positive"], row["negative"]} == {row["original"], row["swapped"]}
