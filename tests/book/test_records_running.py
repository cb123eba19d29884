"""The appendix "Running it for real" reads its recorded results through
`scratchbook.records.running`: the tables come from the records, and a record that no longer
supports what the page says is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support import ROOT
from scratchbook.records import running

RESULTS = ROOT / "book" / "results"


def copy_records(tmp_path: Path, *names: str) -> Path:
    for name in names:
        shutil.copy(RESULTS / name, tmp_path / name)
    return tmp_path


def test_the_tuning_table_has_the_preset_first_and_a_row_per_change() -> None:
    tuning = running.cpu_tuning(RESULTS)
    rows = running.tuning_table(RESULTS).data.splitlines()[2:]
    assert rows[0].startswith(f"| {running.PRESET} | ")
    assert len(rows) == len(tuning) >= 2
    assert all(len(runs) >= 3 for runs in tuning.values())


def test_the_recorded_run_log_ends_with_the_recorded_test_accuracy() -> None:
    record = json.loads((RESULTS / "imdb_cpu.json").read_text())
    log = running.recorded_run_log(RESULTS).splitlines()
    assert log[0] == record["command"]
    assert len(log) == len(record["history"]) + 2
    assert log[-1].startswith(f"test accuracy {record['test']['accuracy']:.4f} ")


def test_a_rerun_that_no_longer_matches_the_record_is_refused(tmp_path: Path) -> None:
    results = copy_records(tmp_path, "imdb_cpu.json", "imdb_cpu_ablations.json")
    assert set(running.rerun_numbers(results)) == {"seed_spread", "rerun_minutes"}
    ablations = json.loads((results / "imdb_cpu_ablations.json").read_text())
    ablations["runs"]["preset"]["0"]["history"][0]["val_accuracy"] += 0.0004
    (results / "imdb_cpu_ablations.json").write_text(json.dumps(ablations))
    with pytest.raises(ValueError, match="no longer matches imdb_cpu.json"):
        running.rerun_numbers(results)


def test_the_reruns_on_another_processor_are_what_the_page_says_or_refused(tmp_path: Path) -> None:
    """The page says: two runs on another processor, with the record's torch, agree with each
    other, share the record's first loss and part from it at the second step."""
    results = copy_records(tmp_path, "imdb_cpu_reruns.json")
    numbers = running.other_processor_numbers(results)
    record = json.loads((results / "imdb_cpu_reruns.json").read_text())
    assert numbers["other_cpu"] != numbers["recorded_cpu"]
    assert numbers["other_test"] == f"{100 * record['runs'][0]['test_accuracy']:.2f}"
    assert float(numbers["other_test_gap"]) == pytest.approx(
        abs(float(numbers["other_test"]) - float(numbers["recorded_test"])), abs=0.011)
    assert running.processor_name({"cpu": "Intel(R) Xeon(R) Processor"}) == "Intel Xeon"

    def refused(change, message: str) -> None:
        changed = json.loads(json.dumps(record))
        change(changed)
        (results / "imdb_cpu_reruns.json").write_text(json.dumps(changed))
        with pytest.raises(ValueError, match=message):
            running.other_processor_numbers(results)

    refused(lambda r: r["runs"][1]["val_accuracy"].__setitem__(0, 0.5), "differ from each other")
    refused(lambda r: r["runs"].pop(), "holds one run")
    refused(lambda r: [run["hardware"].__setitem__("cpu", "AMD EPYC") for run in r["runs"]],
            "the record's own processor")
    refused(lambda r: [run["first_step_losses"].__setitem__(1, r["recorded"]["first_step_losses"][1])
                       for run in r["runs"]], "part from the record at the second step")


def test_a_change_tried_with_fewer_than_three_seeds_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "imdb_cpu_tuning"
    folder.mkdir()
    for seed, change in [(0, ""), (1, ""), (2, ""), (0, " --set lr=1e-3"), (1, " --set lr=1e-3")]:
        run = {"command": f"scratchformer train-imdb --set seed={seed}{change}",
               "train_config": {"seed": seed},
               "history": [{"val_accuracy": 0.8, "train_accuracy": 0.9, "seconds": 60}],
               "throughput": {"train_tokens_per_second": 1000.0},
               "load": {"start": 0.5, "end": 0.5, "cpus": 2, "own_threads": [0, 1],
                        "busy": False}}
        (folder / f"{seed}{change.replace(' ', '_')}.json").write_text(json.dumps(run))
    with pytest.raises(ValueError, match="lr=1e-3: 2 seed"):
        running.tuning_summary(running.cpu_tuning(tmp_path))


def test_a_step_timing_from_another_processor_is_refused(tmp_path: Path) -> None:
    results = copy_records(tmp_path, "imdb_cpu.json", "bert_step_benchmark_cpu.json")
    record = json.loads((results / "bert_step_benchmark_cpu.json").read_text())
    record["hardware"]["cpu"] = "another processor"
    (results / "bert_step_benchmark_cpu.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="another processor than"):
        running.step_benchmark_table(results)
