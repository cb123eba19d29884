"""The records of chapter 11's controls recompute from their own numbers: the order pairs'
scores (`book/results/order_pairs_scores.json`: counts, exact intervals, bag of words tying
every pair), the remedy's choice (in the scores' record), the control table
(`imdb_controls.json`: every mean, interval and difference from the per-seed rows, the
Transformer rows as the taught record has them, the closing sentence), the reading of the
pairs (`order_pairs_reading.json`: the served weights as the ONNX file has them, per-part
sums, its sentence), and the served arm against the counting models given its own inputs
(`imdb_sentences_equal.json`); and the paired
per-review tests (`tools/records/paired_tests.py`) give known values. No training here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from scratchformer.measure.statistics import paired_difference
from support import ROOT, record_script

paired_tests = record_script("paired_tests")
binomial_tail, bootstrap_mean_difference, mcnemar_exact = (
    paired_tests.binomial_tail, paired_tests.bootstrap_mean_difference, paired_tests.mcnemar_exact)

RESULTS = ROOT / "book" / "results"


def read(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def same_interval(recorded: dict, values: list[float], base: list[float] | None = None) -> None:
    expected = paired_difference(values, base)
    assert recorded["mean"] == pytest.approx(expected["mean"], abs=1e-12)
    low, high = recorded.get("interval_95", [recorded.get("low"), recorded.get("high")])
    assert (low, high) == pytest.approx((expected["low"], expected["high"]), abs=1e-12)


def test_mcnemar_gives_the_exact_binomial_value() -> None:
    # 10 reviews only the first gets right, 2 only the second: p = 2 P(X <= 2), X ~ B(12, 1/2)
    a = np.array([True] * 10 + [False] * 2 + [True] * 5 + [False] * 3)
    b = np.array([False] * 10 + [True] * 2 + [True] * 5 + [False] * 3)
    result = mcnemar_exact(a, b)
    assert (result["only_first_right"], result["only_second_right"]) == (10, 2)
    assert result["p_value"] == pytest.approx(2 * (1 + 12 + 66) / 4096, rel=1e-12)
    assert mcnemar_exact(a, a)["p_value"] == 1.0
    assert binomial_tail(12, 12) == pytest.approx(1.0)


def test_the_bootstrap_centres_on_the_mean_difference_and_repeats_itself() -> None:
    generator = np.random.default_rng(0)
    a = generator.random((3, 400)) < 0.8
    b = generator.random((3, 400)) < 0.7
    first = bootstrap_mean_difference(a, b, resamples=500)
    assert first == bootstrap_mean_difference(a, b, resamples=500)
    assert first["mean"] == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    assert first["low"] < first["mean"] < first["high"]


def test_the_order_scores_recompute_and_bag_of_words_ties_every_pair() -> None:
    clopper_pearson = record_script("ch11_order_scores").clopper_pearson

    record = read("order_pairs_scores.json")
    assert clopper_pearson(15, 30) == pytest.approx([0.31297, 0.68703], abs=1e-5)
    for name, row in record["table"].items():
        for key, counts in row.items():
            assert counts["ordered"] + counts["tied"] + counts["reversed"] == counts["pairs"]
            assert counts["share_ordered"] == counts["ordered"] / counts["pairs"]
            assert counts["interval_95"] == pytest.approx(
                clopper_pearson(counts["ordered"], counts["pairs"]), abs=1e-12)
    halves = record["table"]["nbsvm"]
    assert halves["found, validation half"]["pairs"] + halves["found, test half"]["pairs"] \
        == halves["found, all"]["pairs"] == record["pairs"]["size"]
    for name in ("bag_of_words", "majority"):  # the same words: the same score, every pair
        for key, counts in record["table"][name].items():
            assert counts["tied"] == counts["pairs"], (name, key)
    check = record["models"]["served"]["python_check"]  # the package's classifier, the box's
    assert check["checked"] and check["largest_difference"] < 1e-5  # weights: as the box
    assert check["verdicts_that_differ"] == 0


def test_the_remedy_keeps_the_epoch_its_rule_names() -> None:
    models = read("order_pairs_scores.json")["models"]
    remedies = [model for model in models.values() if "chosen_epoch" in model]
    assert remedies, "the record scores no remedy"
    record = remedies[0]
    history = record["history"]
    best = max(history, key=lambda e: (e["pairs_validation"]["ordered"], -e["epoch"]))
    assert record["chosen_epoch"] == best["epoch"]
    assert [e["epoch"] for e in history] == list(range(record["epochs"] + 1))


def test_the_control_table_recomputes_from_its_rows() -> None:
    controls = record_script("ch11_controls")
    compare, where_from = controls.compare, controls.where_from

    record = read("imdb_controls.json")
    blocks = read("imdb_taught_blocks.json")
    table = record["table"]
    for key, entry in table.items():
        seeds = entry["seeds"]
        for measure in ("validation", "test", "minutes"):
            if measure in entry:
                values = [entry["rows"][s][measure] for s in seeds]
                assert entry[measure]["per_seed"] == values
                same_interval(entry[measure], values)
                assert entry[measure]["df"] == len(seeds) - 1
    for seed, run in blocks["untaught"].items():
        assert table["transformer"]["rows"][seed]["test"] == run["test"]["accuracy"]
    for key, arm in (("transformer_nbsvm", "nbsvm"),
                     ("transformer_served", "nbsvm, sentences 2")):
        for seed, run in blocks["runs"][arm].items():
            assert table[key]["rows"][seed]["test"] == run["test"]["accuracy"]
            assert table[key]["rows"][seed]["updates"] == run["history"][-1]["step"]
    rows = {key: entry["rows"] for key, entry in table.items()}
    nothing = {key: {} for key in table}
    for key, versus in record["comparisons"].items():
        for other, recorded in versus.items():
            again = compare(rows, nothing, key, other)
            for measure in ("validation", "test"):
                if measure in recorded:
                    assert recorded[measure] == pytest.approx(again[measure], abs=1e-12)
            for seed, test in recorded["per_review"]["mcnemar_test"].items():
                assert test["only_first_right"] + test["only_second_right"] \
                    + test["both_right"] <= 25_000
    assert record["reading"] == where_from(table, record["comparisons"])


def test_keeping_a_record_keeps_every_row_and_per_review_test_it_holds(tmp_path: Path) -> None:
    """`ch11_controls.py --keep RECORD --self ...` rewrites the self-taught row alone: given no
    self-taught runs, every other row and comparison of the book's record comes back as it was
    (the per-review tests that only the counting runs' margins could make again included), the
    self-taught row without runs, with the command it was kept from."""
    controls = record_script("ch11_controls")
    book_record = ROOT / "book" / "results" / "imdb_controls.json"
    out = tmp_path / "imdb_controls.json"
    argv = ["--keep", str(book_record), "--record", str(out)]
    assert controls.main(controls.parse(argv), argv) == 0
    kept, written = read("imdb_controls.json"), json.loads(out.read_text())
    others = [key for key in kept["table"] if key != "transformer_self"]
    assert [key for key in written["table"] if key != "transformer_self"] == others
    assert all(written["table"][key] == kept["table"][key] for key in others)
    assert written["table"]["transformer_self"]["seeds"] == []
    assert written["comparisons"] == {key: value for key, value in kept["comparisons"].items()
                                      if key != "transformer_self"}
    assert written["reading"] == controls.where_from(written["table"], written["comparisons"])
    assert written["kept_from"] == {"record": "book/results/imdb_controls.json",
                                    "command": kept["command"]}
    assert written["sources"]["counting_runs"] == kept["sources"]["counting_runs"]
    assert written["command"].startswith("python tools/records/ch11_controls.py --keep ")


def test_the_reading_of_the_pairs_is_the_served_models_and_says_what_its_numbers_say() -> None:
    seen = record_script("ch11_order_reading").seen

    record = read("order_pairs_reading.json")
    assert record["model"]["largest_difference_from_onnx"] < 1e-5
    check = record["onnx_check"]  # the ONNX file's own contributions and attention
    assert check["largest_contribution_difference"] < 1e-5
    assert check["largest_attention_difference"] < 1e-5
    assert record["reading"] == seen(record["found_validation"])
    for pair in record["examples"]:
        for member in ("positive", "negative"):
            tokens = pair[member]["tokens"]
            for part in ("first", "joint", "second"):
                assert pair[member]["push"][part] == pytest.approx(
                    sum(t["contribution"] for t in tokens if t["part"] == part), abs=1e-9)


def test_the_served_arm_against_counting_on_its_inputs_recomputes() -> None:
    record = read("imdb_sentences_equal.json")
    sentences = read("imdb_sentences.json")
    seeds = record["seeds"]
    served = [sentences["runs"]["sentences 2"][s] for s in seeds]
    for measure in record["measures"]:
        assert record["table"]["served"][measure]["per_seed"] == [r[measure] for r in served]
    for name, versus in record["comparisons"].items():
        key = name.removeprefix("served - ")
        for measure, recorded in versus.items():
            same_interval(recorded, [r[measure] for r in served],
                          record["table"][key][measure]["per_seed"])
    again = record["untaught_as_sentences_record"]["sentences_more_right_here"]
    for model, per_seed in again.items():  # fitted again: within a sentence or two
        assert all(abs(n) <= 2 for counts in per_seed.values() for n in counts.values()), model
        for seed, counts in per_seed.items():
            for measure, n in counts.items():
                assert sentences["counting"][model][seed][measure] == pytest.approx(
                    record["table"][f"{model}_untaught"][measure]["per_seed"][
                        seeds.index(seed)] - n / SIZES[measure](sentences, seed), abs=1e-9)
    assert "language models" in record["labelled_provenance"]


SIZES = {"validation_sentences": lambda r, s: r["sentences"]["per_seed"][s]["sentences"],
         "validation_labelled": lambda r, s: r["sentences"]["per_seed"][s]["labelled"]["kept"]}
