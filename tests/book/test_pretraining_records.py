"""Chapter 13's recorded results, read by `scratchbook.records.pretraining`: the values the
page quotes come out of the records, and a record that no longer supports the prose's reading
is refused, naming the reading."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib
import pytest

from conftest import ROOT
from scratchbook import pages
from scratchbook.records import PRETRAIN_CPU
from scratchbook.records import pretraining as records

matplotlib.use("Agg")
RESULTS = ROOT / "book" / "results"


@pytest.fixture(autouse=True)
def no_figures_left_open():
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def test_the_quoted_values_come_from_the_records() -> None:
    runs = records.recorded_runs(RESULTS)
    assert (runs.text["mlm_steps"], runs.text["electra_steps"]) == ("6,000", "1,600")
    assert (runs.text["mlm_final_loss"], runs.text["mlm_passes"]) == ("6.42", "2.1")
    assert runs.table is not None and "| mlm |" in runs.table.data
    by_position = records.loss_by_position(RESULTS)
    assert (by_position.text["loss_at_mask"], by_position.text["frequencies_at_mask"]) == (
        "6.99", "7.04")
    differences = records.arm_differences(RESULTS)
    assert (differences.text["mlm_final_test"], differences.text["scratch_test"],
            differences.text["best_gain"]) == ("86.85%", "86.57%", "-0.01")
    assert records.throughput(RESULTS).text == {"electra_step_cost": "1.7",
                                                "short_window_speedup": "1.17"}
    assert records.gpt_gains(RESULTS).text["gain_2500"] == "+2.35"
    assert records.matched_time(RESULTS).text["gpt_gain_short"].startswith("+2.36 ")
    electra = records.electra_losses(RESULTS)
    assert (electra.text["electra_rtd_last"], electra.text["electra_rtd_floor"]) == (
        "0.403", "0.406")
    assert electra.markdown["electra_rtd_verdict"].startswith("barely did better")


def test_every_table_of_the_page_is_laid_out() -> None:
    for table in (records.question_table, records.fine_tuning_arms, records.everything_table,
                  records.predictions_table, records.transfer_selection, records.gpt_context,
                  records.gpt_transfer_table, records.evidence_table):
        shown = table(RESULTS)
        lines = shown.table.data.splitlines()
        assert len(lines) > 2 and all(line.count("|") == lines[0].count("|") for line in lines)


def test_the_appendix_names_each_record_and_its_runs() -> None:
    """The appendix section "How chapter 13's numbers were made": every record chapter 13
    reads, with the command that made it, and every run seed by seed."""
    made_by = records.record_commands(RESULTS).data
    for name in ("pretrain_cpu.json", "pretrain_electra_losses_cpu.json",
                 "pretrain_sweep_cpu.json", "pretraining_throughput.json", "transfer_cpu.json"):
        assert f"| {name.replace('_', chr(92) + '_')}: " in made_by
    commands = records.pretraining_commands(RESULTS)
    assert sum(c.startswith("scratchformer pretrain") for c in commands) == 7  # 2 + rerun + 4
    runs = records.fine_tuning_runs(RESULTS).data.splitlines()
    recorded = PRETRAIN_CPU.read(RESULTS)["fine_tuning"]
    assert len(runs) == 2 + len(recorded)
    assert "| from scratch | 1 | 87.52% | 86.88% | 5.1 |" in runs


def test_a_record_that_no_longer_supports_the_prose_is_refused(tmp_path: Path) -> None:
    for name in ("pretrain_cpu.json",):
        shutil.copy(RESULTS / name, tmp_path / name)
    record = json.loads((tmp_path / "pretrain_cpu.json").read_text())
    record["pretraining"]["mlm"]["history"][-1]["val_loss"] = 3.0  # far below the floor
    (tmp_path / "pretrain_cpu.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="just under the context-free mark"):
        records.recorded_runs(tmp_path)


def test_table_cells_show_markdown_marks_as_they_are() -> None:
    table = pages.escaped_table(["token"], [["[MASK]"], ["*"], ["a  b\nc"]]).data
    assert table.splitlines()[2:] == [r"| \[MASK\] |", r"| \* |", "| a b c |"]
