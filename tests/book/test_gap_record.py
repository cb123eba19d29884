"""Chapter 11's gap record, `book/results/imdb_gap.json`: consistent with itself and with the
records it stands beside, and read by `scratchbook.records.gap` with clear errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from support import ROOT
from scratchbook.record import RecordError
from scratchbook.records.gap import (INPUTS, MODELS, TRANSFORMER_INPUTS, gap_figures, gap_table, read_gap_record)

RESULTS = ROOT / "book" / "results"
RECORDED_NAMES = {"bag_of_words": "bag of words, logistic regression",
                  "nbsvm": "NBSVM, uni+bigrams"}


def read(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


@pytest.fixture(scope="module")
def record() -> dict:
    return read_gap_record(RESULTS / "imdb_gap.json")


def test_the_gaps_recompute_from_the_accuracies(record: dict) -> None:
    counting, gaps = record["counting"], record["gaps"]
    for name in INPUTS:
        for model in MODELS:
            cost = counting["whole review"][model]["accuracy"] - counting[name][model]["accuracy"]
            assert math.isclose(gaps[name][f"truncation_cost_{model}"], cost, abs_tol=1e-12)
    for name in TRANSFORMER_INPUTS:
        seeds = record["transformer"]["inputs"][name]["test_accuracy"]
        mean = sum(seeds.values()) / len(seeds)
        assert math.isclose(record["transformer"]["inputs"][name]["mean"], mean, abs_tol=1e-12)
        for model in MODELS:
            assert math.isclose(gaps[name][f"transformer_minus_{model}"],
                                mean - counting[name][model]["accuracy"], abs_tol=1e-12)
    assert math.isclose(gaps["254 tokens"]["no_attention_minus_bag_of_words"],
                        record["attention_free"]["mean"]
                        - counting["254 tokens"]["bag_of_words"]["accuracy"], abs_tol=1e-12)
    for row in counting.values():
        for model in MODELS:
            assert row[model]["accuracy"] == row[model]["correct"] / row[model]["examples"]


def test_whole_reviews_reproduce_the_recorded_baselines(record: dict) -> None:
    baselines = read("imdb_baselines.json")
    recorded = {row["model"]: row for row in baselines["test"]}
    for model, name in RECORDED_NAMES.items():
        ours = record["counting"]["whole review"][model]
        assert (ours["accuracy"], ours["correct"], ours["features"]) == \
            (recorded[name]["accuracy"], recorded[name]["correct"], recorded[name]["features"])
        assert record["settings"][model] == baselines["validation"][model]["chosen"]
    assert {name: split["fingerprint"] for name, split in record["data"]["splits"].items()} == \
        {name: split["fingerprint"] for name, split in baselines["data"]["splits"].items()}


def test_the_transformer_numbers_are_the_recorded_runs(record: dict) -> None:
    runs = read("imdb_cpu_ablations.json")["runs"]
    for name, variant, tokens in (("254 tokens", "preset", 254), ("510 tokens", "max_len=512", 510)):
        ours = record["transformer"]["inputs"][name]
        assert ours["variant"] == variant and ours["max_len"] - 2 == tokens
        assert record["counting"][name]["tokens"] == tokens
        assert ours["test_accuracy"] == {seed: run["test"]["accuracy"]
                                         for seed, run in runs[variant].items()}
    assert record["attention_free"]["test_accuracy"] == {
        seed: run["test"]["accuracy"] for seed, run in runs["no attention"].items()}
    assert record["transformer"]["chapter_run"]["test_accuracy"] == \
        read("imdb_cpu.json")["test"]["accuracy"]


def test_the_table_has_a_row_per_input_in_order(record: dict) -> None:
    lines = gap_table(RESULTS / "imdb_gap.json").data.splitlines()
    assert [line.split(" | ")[0].strip("| ") for line in lines[2:]] == list(INPUTS)
    bag = record["counting"]["254 tokens"]["bag_of_words"]["accuracy"]
    assert f"| {100 * bag:.2f}% |" in lines[2]


def test_a_broken_record_is_refused_with_the_field_named(tmp_path: Path, record: dict) -> None:
    path = tmp_path / "imdb_gap.json"
    with pytest.raises(RecordError, match="does not exist"):
        read_gap_record(path)
    broken = json.loads(json.dumps(record))
    del broken["counting"]["510 tokens"]["nbsvm"]
    path.write_text(json.dumps(broken))
    with pytest.raises(RecordError, match="no 'nbsvm' under counting.510 tokens"):
        read_gap_record(path)
    broken = json.loads(json.dumps(record))
    broken["transformer"]["inputs"]["254 tokens"]["mean"] = 86.9  # points, not a fraction
    path.write_text(json.dumps(broken))
    with pytest.raises(RecordError, match="transformer.inputs.254 tokens.mean is 86.9"):
        read_gap_record(path)
    path.write_text("[1, 2]")
    with pytest.raises(RecordError, match="holds a list"):
        read_gap_record(path)


def test_the_prose_figures_refuse_a_record_that_turns_a_reading_around(tmp_path: Path) -> None:
    figures = gap_figures(RESULTS / "imdb_gap.json")
    assert figures["gap_bag_cost_254"] == "1.00" and figures["gap_cut_254"] == "39%"
    turned = read("imdb_gap.json")
    turned["gaps"]["254 tokens"]["no_attention_minus_bag_of_words"] = 0.01
    path = tmp_path / "imdb_gap.json"
    path.write_text(json.dumps(turned))
    with pytest.raises(ValueError, match="attention-free model is no longer behind"):
        gap_figures(path)
