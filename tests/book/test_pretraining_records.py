"""Chapter 13's recorded results, read by `scratchbook.records.pretraining`: the values the
page quotes come out of the records, and a record that no longer supports the prose's reading
is refused, naming the reading."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib
import pytest

from support import ROOT
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
    for table in (records.question_table, records.fine_tuning_arms, records.recorded_runs,
                  records.predictions_table, records.transfer_selection, records.gpt_context,
                  records.gpt_transfer_table, records.evidence_table):
        shown = table(RESULTS)
        lines = shown.table.data.splitlines()
        assert len(lines) > 2 and all(line.count("|") == lines[0].count("|") for line in lines)


def test_the_appendix_names_each_record_and_its_runs() -> None:
    """The appendix "Experiments behind chapter 13": every record chapter 13 and the
    appendix read, with the command that made it, the commands of each experiment, and every
    run seed by seed."""
    made_by = records.record_commands(RESULTS).data
    for name in ("pretrain_cpu.json", "pretrain_electra_losses_cpu.json",
                 "pretrain_sweep_cpu.json", "pretraining_throughput.json", "transfer_cpu.json",
                 "pretrain_objectives_cpu.json", "imdb_taught_blocks.json", "gpt_ngrams.json"):
        assert f"| {name.replace('_', chr(92) + '_')}: " in made_by
    commands = records.experiment_commands(RESULTS)
    pretrain = [c for cs in commands.values() for c in cs if c.startswith("scratchformer pretrain")]
    assert len(pretrain) == 7  # the two recorded runs, ELECTRA's rerun, the sweep's four
    assert all(not c.startswith("python") or "tools/records/ch13_" in c
               for cs in commands.values() for c in cs)
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


def test_the_question_names_the_models_it_compares() -> None:
    """Chapter 11's run from labels alone is below bag of words; its model taught by NBSVM on
    the unlabelled reviews (the box's teacher and data) is above it, below NBSVM."""
    question = records.question_table(RESULTS)
    assert question.text["taught_unlabelled"] == "49,261"
    assert (question.text["scratch_accuracy"], question.text["bag_accuracy"],
            question.text["taught_accuracy"], question.text["nbsvm_accuracy"]) == (
        "86.71%", "88.51%", "89.21%", "91.50%")
    assert question.text["taught_over_bag"] == "+0.70 (+0.47 to +0.93)"
    assert "| Transformer also taught by NBSVM on 49,261 unlabelled reviews" in (
        question.table.data)
    evidence = records.evidence_table(RESULTS)
    assert evidence.text["best_here"] == "86.56%" < evidence.text["bag_accuracy"]
    rows = {line.split(" | ")[0].strip("| "): float(line.split(" | ")[1].strip(" |"))
            for line in evidence.table.data.splitlines()[2:]}
    bag = rows["bag of words, logistic regression"]
    here = [v for name, v in rows.items() if name.startswith(("encoder", "GPT"))]
    assert len(here) == 3 and max(here) < bag  # every Transformer chapter 13 trained
    assert rows["Transformer taught by NBSVM (chapter 11, 5 seeds)"] > bag


def test_the_predictions_reading_is_what_the_table_shows(tmp_path: Path) -> None:
    """Untrained: [MASK], the token in view, first at every blank, every probability near
    1/8,000; after pretraining: the same full stop first at every blank, nine tokens in all
    25 places. The sentences say who wrote them (a language model), when, and that they
    chose nothing."""
    shown = records.predictions_table(RESULTS)
    lines = shown.table.data.splitlines()[2:]
    assert all(line.split(" | ")[1].startswith(r"\[MASK\] (0.00)") for line in lines)
    assert all(line.split(" | ")[2].startswith(". (") for line in lines)
    assert (shown.text["predictions_untrained_highest"], shown.text["predictions_first_after"],
            shown.text["predictions_distinct"], shown.text["predictions_slots"]) == (
        "0.0003", "'.'", "9", "25")
    assert shown.text["predictions_made_by"].startswith("a language model")
    assert shown.text["predictions_written"].startswith("2026-11-30")
    assert shown.text["predictions_choice"].startswith("no:")
    record = json.loads((RESULTS / "pretrain_cpu.json").read_text())
    record["predictions"]["after"][0]["top"][0]["token"] = " great"  # a blank read in context
    (tmp_path / "pretrain_cpu.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="one token leads at every blank"):
        records.predictions_table(tmp_path)


def test_electra_validation_loss_is_its_generator_plus_50_discriminators() -> None:
    runs = records.recorded_runs(RESULTS)
    assert (runs.text["electra_val_loss"], runs.text["rtd_weight"]) == ("26.917", "50")
    assert "| generator + 50 x discriminator | 26.917 |" in runs.table.data
    parts = records.electra_losses(RESULTS, draw=False).text
    total = float(parts["electra_generator_last"]) + 50 * float(parts["electra_rtd_last"])
    assert parts["electra_parts_sum"] == "26.8" and abs(total - 26.917) < 0.5


def test_the_arm_nearest_in_time_is_reported_once() -> None:
    """The arm validation chose is also the masked snapshot nearest ELECTRA's time: its
    difference with six epochs from scratch (one seed, no interval) is glued once."""
    text = records.arm_differences(RESULTS).text
    assert "best_vs_longer" not in text and text["same_compute_gain"] == "-0.09"
    assert text["best_name"] == text["mlm_same_time_name"] == "MLM, 3,000 steps"
    page = (ROOT / "book" / "experiments_13.md").read_text(encoding="utf-8")
    assert page.count("same_compute_gain") == 1


def test_the_bigrams_of_chapters_12_and_13_differ_by_their_streams() -> None:
    """Chapter 12's bigram (1.793 bits per byte) and chapter 13's (1.792, 1.791) are counted on
    three training streams and scored on the same held-out reviews: chapter 12's stream held a
    sentiment token before each labelled review, seed 1's has its own tokenizer."""
    context = records.gpt_context(RESULTS).text
    assert (context["kn_bpb_chapter_12"], context["kn_bpb"]) == ("1.793", "1.792 and 1.791")
    assert context["sentiment_tokens"] == "24,713"
    chapter_12 = json.loads((RESULTS / "gpt_cpu.json").read_text())
    transfer = json.loads((RESULTS / "transfer_cpu.json").read_text())["pretraining"]
    assert (chapter_12["heldout"]["counted_tokens"] - transfer["gpt_s0"]["heldout"]["counted_tokens"]
            == 24_713)
    assert transfer["gpt_s0"]["tokenizer"] == chapter_12["tokenizer"]
    assert transfer["gpt_s1"]["tokenizer"]["sha256"] != chapter_12["tokenizer"]["sha256"]


def test_table_cells_show_markdown_marks_as_they_are() -> None:
    table = pages.escaped_table(["token"], [["[MASK]"], ["*"], ["a  b\nc"]]).data
    assert table.splitlines()[2:] == [r"| \[MASK\] |", r"| \* |", "| a b c |"]
