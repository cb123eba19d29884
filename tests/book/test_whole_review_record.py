"""The record of chapter 11's classifier reading whole reviews (`book/results/imdb_whole_review.json`):
its summary recomputes from its own runs, the choice was made on validation, its counting
baselines are the recorded ones, and the page's figures refuse a record that turns a reading
around.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import ROOT
from scratchbook.record import RecordError
from scratchformer.measure.statistics import paired_difference
from scratchbook.records.whole_review import (CANDIDATES, read_whole_review_record,
                                              whole_review_figures, whole_review_table)

RESULTS = ROOT / "book" / "results"
RECORD = RESULTS / "imdb_whole_review.json"


@pytest.fixture(scope="module")
def record() -> dict:
    return read_whole_review_record(RECORD)


def test_the_best_transformer_is_recomputed_from_its_runs(record: dict) -> None:
    best, runs = record["best_transformer_test_accuracy"], record["runs"]
    assert best["model"] == "whole review" and len(best["per_seed"]) >= 5
    assert best["per_seed"] == [runs[seed]["test"]["accuracy"] for seed in best["seeds"]]
    interval = paired_difference(best["per_seed"])
    assert best["mean"] == pytest.approx(interval["mean"], abs=1e-12)
    assert best["interval_95"] == pytest.approx([interval["low"], interval["high"]], abs=1e-12)
    assert best["df"] == len(best["per_seed"]) - 1
    longest = max(run["seconds"]["total"] for run in runs.values()) / 60
    assert best["minutes"] == pytest.approx(longest, abs=1e-9) and best["minutes"] <= 60


def test_the_runs_differ_only_in_their_seed_and_read_whole_reviews(record: dict) -> None:
    runs = record["runs"].values()
    settings = {json.dumps([{k: v for k, v in run["train_config"].items() if k != "seed"},
                            run["model_config"]], sort_keys=True) for run in runs}
    assert len(settings) == 1
    assert all(run["train_config"]["truncation"] == "windows" for run in runs)
    assert sorted(int(seed) for seed in record["runs"]) == list(range(len(record["runs"])))
    assert all(run["validation"]["accuracy"] == record["candidates"]["whole review"]
               ["validation"][seed] for seed, run in record["runs"].items())


def test_the_choice_is_made_on_validation_over_the_shared_seeds(record: dict) -> None:
    table, shared = record["candidates"], record["chosen_on"]["shared_seeds"]
    assert shared == ["0", "1", "2"]
    means = {name: sum(table[name]["validation"][seed] for seed in shared) / len(shared)
             for name in CANDIDATES}
    assert max(means, key=means.get) == record["best_transformer_test_accuracy"]["model"]
    ablations = json.loads((RESULTS / "imdb_cpu_ablations.json").read_text())
    for name, variant in (("254 tokens", "preset"), ("510 tokens", "max_len=512")):
        runs = ablations["runs"][variant]
        assert table[name]["test"] == {seed: run["test"]["accuracy"] for seed, run in runs.items()}
        assert table[name]["validation"] == {seed: run["validation"]["accuracy"]
                                             for seed, run in runs.items()}


def test_counting_is_the_recorded_baselines(record: dict) -> None:
    baselines = json.loads((RESULTS / "imdb_baselines.json").read_text())
    recorded = {row["model"]: row["accuracy"] for row in baselines["test"]}
    against = record["against_counting"]
    assert against["bag_of_words"]["accuracy"] == recorded["bag of words, logistic regression"]
    assert against["nbsvm"]["accuracy"] == recorded["NBSVM, uni+bigrams"]
    low = record["best_transformer_test_accuracy"]["interval_95"][0]
    for row in against.values():
        assert row["lower_end_above"] == (low > row["accuracy"])


def test_the_page_figures_and_table(record: dict, tmp_path: Path) -> None:
    figures = whole_review_figures()
    assert figures["whole_seeds"] == "5" and figures["whole_bag_accuracy"] == "88.51%"
    assert figures["best_mean"] == f"{100 * record['best_transformer_test_accuracy']['mean']:.2f}%"
    rows = whole_review_table().data.strip().splitlines()
    assert len(rows) == 2 + len(CANDIDATES) + 2  # header, rule, candidates, two baselines
    turned = json.loads(json.dumps(record))
    turned["best_transformer_test_accuracy"]["model"] = "510 tokens"
    path = tmp_path / "imdb_whole_review.json"
    path.write_text(json.dumps(turned))
    with pytest.raises(ValueError, match="the whole review chosen on validation"):
        whole_review_figures(path)
    del turned["candidates"]["whole review"]
    path.write_text(json.dumps(turned))
    with pytest.raises(RecordError, match="no 'whole review' under candidates"):
        read_whole_review_record(path)
