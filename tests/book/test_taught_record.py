"""The record of chapter 11's classifier taught on unlabelled reviews
(`book/results/imdb_taught.json`): its summaries recompute from its own runs and from the
whole-review and counting records, every run is within an hour, and the page's figures refuse
a record that turns a reading around; likewise the rare words validation and test reviews
share with the fitted reviews (`book/results/imdb_shared_words.json`).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from conftest import ROOT
from scratchformer.measure.statistics import paired_difference
from scratchformer.records.taught import (TaughtRecordError, read_taught_record,
                                          shared_words_figures, taught_figures, taught_table)

RESULTS = ROOT / "book" / "results"
RECORD = RESULTS / "imdb_taught.json"


@pytest.fixture(scope="module")
def record() -> dict:
    return read_taught_record(RECORD)


def test_the_summary_is_recomputed_from_the_runs(record: dict) -> None:
    for teacher, row in record["taught"].items():
        runs = record["runs"][teacher]
        assert row["seeds"] == sorted(runs, key=int)
        assert row["per_seed"] == [runs[seed]["test"]["accuracy"] for seed in row["seeds"]]
        interval = paired_difference(row["per_seed"])
        assert row["mean"] == pytest.approx(interval["mean"], abs=1e-12)
        assert row["interval_95"] == pytest.approx([interval["low"], interval["high"]],
                                                   abs=1e-12)
        assert row["df"] == len(row["per_seed"]) - 1
        assert row["minutes"] == max(run["minutes"] for run in runs.values()) <= 60
    assert len(record["taught"]["nbsvm"]["per_seed"]) >= 5


def test_each_run_is_what_its_command_says(record: dict) -> None:
    for teacher, runs in record["runs"].items():
        for seed, run in runs.items():
            words = shlex.split(run["command"])
            assert words[1] == "tools/records/ch11_taught.py"
            assert words[words.index("--teacher") + 1] == teacher
            assert words[words.index("--seed") + 1] == seed and "--test" in words
            assert run["validation"] == max(row["val_accuracy"] for row in run["history"])
            assert run["test"]["examples"] == 25_000
            assert (run["teacher_run"] is None) == (teacher == "nbsvm")
    assert len({run["unlabelled"] for runs in record["runs"].values()
                for run in runs.values()}) == 1


def test_the_comparisons_are_the_recorded_runs_and_baselines(record: dict) -> None:
    whole = json.loads((RESULTS / "imdb_whole_review.json").read_text())
    untaught = whole["candidates"]["whole review"]
    baselines = {row["model"]: row["accuracy"] for row in
                 json.loads((RESULTS / "imdb_baselines.json").read_text())["test"]}
    for teacher, row in record["taught"].items():
        runs, versus = record["runs"][teacher], row["against_whole_review"]
        for split, of_run in (("test", lambda run: run["test"]["accuracy"]),
                              ("validation", lambda run: run["validation"])):
            expected = paired_difference([of_run(runs[s]) for s in versus["seeds"]],
                                         [untaught[split][s] for s in versus["seeds"]])
            assert versus[split] == pytest.approx(expected, abs=1e-12)
        against = row["against_counting"]
        assert against["bag_of_words"]["accuracy"] == baselines[
            "bag of words, logistic regression"]
        assert against["nbsvm"]["accuracy"] == baselines["NBSVM, uni+bigrams"]
        for counted in against.values():
            assert counted["lower_end_above"] == (row["interval_95"][0] > counted["accuracy"])


def test_the_page_figures_and_table(record: dict, tmp_path: Path) -> None:
    figures = taught_figures()
    taught = record["taught"]["nbsvm"]
    assert figures["taught_mean"] == f"{100 * taught['mean']:.2f}%"
    assert figures["taught_seeds"] == str(len(taught["per_seed"]))
    rows = taught_table().data.strip().splitlines()
    assert len(rows) == 2 + len(record["runs"])  # header, rule, a row per teacher
    assert f"{figures['taught_mean']} ({figures['taught_interval'].replace('%', '')})" in rows[2]
    turned = json.loads(json.dumps(record))
    turned["taught"]["nbsvm"]["against_counting"]["bag_of_words"]["lower_end_above"] = False
    path = tmp_path / "imdb_taught.json"
    path.write_text(json.dumps(turned))
    with pytest.raises(ValueError, match="above bag of words"):
        taught_figures(path)
    turned = json.loads(json.dumps(record))
    turned["runs"]["transformer"]["0"]["test"]["accuracy"] = 0.5
    path.write_text(json.dumps(turned))
    with pytest.raises(ValueError, match="its own verdicts gain"):
        taught_figures(path)
    del turned["taught"]["nbsvm"]
    path.write_text(json.dumps(turned))
    with pytest.raises(TaughtRecordError, match="is not the record"):
        read_taught_record(path)
    with pytest.raises(TaughtRecordError, match="does not exist"):
        read_taught_record(tmp_path / "missing.json")


def test_the_shared_words_record_and_its_figures(record: dict, tmp_path: Path) -> None:
    shared = json.loads((RESULTS / "imdb_shared_words.json").read_text())
    assert shlex.split(shared["command"])[1] == "tools/records/ch11_shared_words.py"
    assert set(record["taught"]["nbsvm"]["seeds"]) <= set(shared["seeds"])
    assert shared["reviews"]["unlabelled"] == record["runs"]["nbsvm"]["0"]["unlabelled"]
    validation = [split["validation"]["fit"] for split in shared["seeds"].values()]
    test = [split["test"]["fit"] for split in shared["seeds"].values()]
    assert all(0 < share < 1 for share in validation + test)
    figures = shared_words_figures()
    assert figures["shared_validation"] == f"{100 * sum(validation) / len(validation):.0f}%"
    assert figures["shared_test"] == f"{100 * sum(test) / len(test):.0f}%"
    assert figures["shared_splits"] == str(len(shared["seeds"]))
    shared["seeds"]["1"]["test"]["fit"] = shared["seeds"]["1"]["validation"]["fit"]
    path = tmp_path / "imdb_shared_words.json"
    path.write_text(json.dumps(shared))
    with pytest.raises(ValueError, match="validation above test in every split"):
        shared_words_figures(path)
    del shared["rare"]
    path.write_text(json.dumps(shared))
    with pytest.raises(ValueError, match="is not the record"):
        shared_words_figures(path)
    with pytest.raises(ValueError, match="does not exist"):
        shared_words_figures(tmp_path / "missing.json")
