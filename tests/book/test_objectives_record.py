"""Chapter 13's comparison of three objectives on equal terms
(`book/results/pretrain_objectives_cpu.json`): the objectives share the encoder, each seed's
tokenizer, the windows and (within 10%, the mean of an objective's runs) the minutes; each
arm's learning rate is the best on validation, and the tested runs use it; the gains and
differences recompute from the tested runs; and the page's table refuses a record that no
longer says what the prose reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean

import pytest

from support import ROOT
from scratchformer.measure.statistics import paired_difference
from scratchbook.records import PRETRAIN_OBJECTIVES_CPU
from scratchbook.records.objectives import NAMES, objectives_table

RECORD = PRETRAIN_OBJECTIVES_CPU.name

RESULTS = ROOT / "book" / "results"
OBJECTIVES = [arm for arm in NAMES if arm != "scratch"]


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads((RESULTS / RECORD).read_text())


def test_equal_terms(record: dict) -> None:
    seeds = record["seeds"]
    assert len(seeds) >= 3, "at least three independent pretrainings an objective"
    configs = {json.dumps(run["model_config"], sort_keys=True)
               for objective in OBJECTIVES for run in record["pretraining"][objective].values()}
    assert len(configs) == 1, "one encoder for every objective"
    for seed in map(str, seeds):
        runs = [record["pretraining"][objective][seed] for objective in OBJECTIVES]
        assert len({run["tokenizer_sha256"] for run in runs}) == 1, "a seed's tokenizer is shared"
        assert len({(run["window"], run["batch_size"]) for run in runs}) == 1
    means = {objective: fmean(run["minutes"] for run in record["pretraining"][objective].values())
             for objective in OBJECTIVES}
    assert record["mean_minutes"] == pytest.approx(means, abs=1e-12)
    assert max(means.values()) / min(means.values()) <= 1.10, "the same minutes an objective"


def test_rates_chosen_on_validation_and_tested_once(record: dict) -> None:
    for arm in NAMES:
        tried = record["selection"][arm]
        assert len(tried) >= 3 and all(run["test_accuracy"] is None for run in tried)
        best = max(tried, key=lambda run: run["validation_accuracy"])
        assert record["chosen_lr"][arm] == best["lr"]
        tested = record["tested"][arm]
        assert [run["seed"] for run in tested] == record["seeds"]
        assert all(run["lr"] == best["lr"] and run["test_accuracy"] is not None
                   for run in tested)
        assert tested[0]["validation_accuracy"] == best["validation_accuracy"], (
            "seed 0's tested run is the chosen one, tested afterwards")


def test_differences_recompute_from_the_tested_runs(record: dict) -> None:
    def points(arm: str) -> list[float]:
        return [100 * run["test_accuracy"] for run in record["tested"][arm]]

    for objective in OBJECTIVES:
        assert record["gain_over_scratch_points"][objective] == paired_difference(
            points(objective), points("scratch"))
    for pair, difference in record["between_objectives_points"].items():
        first, second = pair.split(" - ")
        assert difference == paired_difference(points(first), points(second))


def test_the_table_refuses_unequal_minutes_and_a_changed_gain(record: dict,
                                                              tmp_path: Path) -> None:
    shown = objectives_table(RESULTS)
    assert len(shown.table.data.strip().splitlines()) == 2 + len(NAMES)
    assert shown.markdown["objectives_reading"]
    unequal = json.loads(json.dumps(record))
    for run in unequal["pretraining"]["mlm"].values():
        run["minutes"] *= 1.5
    (tmp_path / RECORD).write_text(json.dumps(unequal))
    with pytest.raises(ValueError, match="equal within 10%"):
        objectives_table(tmp_path)
    changed = json.loads(json.dumps(record))
    changed["gain_over_scratch_points"]["electra"]["mean"] += 0.5
    (tmp_path / RECORD).write_text(json.dumps(changed))
    with pytest.raises(ValueError, match="electra's gain is the record's"):
        objectives_table(tmp_path)
