"""What chapter 11 and its appendix "Experiments behind chapter 11" say of the controls, the
served model and the order pairs is what their records hold (`scratchbook.records.controls`):
every glued value recomputes from the record it comes from, the control table shows the row of
the Transformer taught by itself as not run yet while its runs are missing and its numbers once they
land, each reading is refused by a record that turns it around, and every text set the book made
or labelled says who or what made it. No training here.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
from pathlib import Path

import pytest

from scratchformer.measure.statistics import interval_text, paired_difference
from scratchbook.records import (HANDWRITTEN_REVIEWS, IMDB_CONTROLS, IMDB_SENTENCES,
                                 ORDER_PAIRS, ORDER_PAIRS_SCORES, SENTENCES_LABELLED,
                                 WRITTEN_REVIEWS)
from scratchbook.records.controls import (CONTROL_ROWS, RUNNING, binomial_two_sided,
                                          controls_figures, controls_table, found_provenance_table,
                                          order_figures,
                                          order_scores_table, points, provenance_table,
                                          read_controls, remedy_table, seed_difference,
                                          sentences_equal_figures,
                                          sentences_equal_table, served_figures)
from scratchbook.records.handwritten import read_handwritten, reading_figures
from support import ROOT, record_script

controls = record_script("ch11_controls")
compare, summary, where_from = controls.compare, controls.summary, controls.where_from

RESULTS = ROOT / "book" / "results"


def read(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def write(tmp_path: Path, name: str, record: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(record))
    return path


def table_rows(markdown: str) -> list[list[str]]:
    lines = markdown.splitlines()[2:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def unrun_self_taught_row(record: dict) -> dict:
    """`record` as it was before the self-taught runs landed: that row without runs."""
    record = copy.deepcopy(record)
    record["table"]["transformer_self"] = {"name": "Transformer, taught by itself", "seeds": [],
                                           "rows": {}, "test_predictions": {}}
    record["comparisons"].pop("transformer_self", None)
    return record


@pytest.mark.parametrize("self_taught", ["measured", "not run"])
def test_the_control_table_has_every_row_and_shows_a_missing_one_as_not_run_yet(
        tmp_path: Path, self_taught: str) -> None:
    record = read("imdb_controls.json")
    if self_taught == "not run":
        record = unrun_self_taught_row(record)
    path = write(tmp_path, "imdb_controls.json", record)
    rows = table_rows(controls_table(path).data)
    assert [(row[0], row[1]) for row in rows] == [(model, teacher)
                                                  for _, model, teacher in CONTROL_ROWS]
    for (key, _, _), row in zip(CONTROL_ROWS, rows):
        entry = record["table"][key]
        if entry["seeds"]:
            low, high = entry["test"]["interval_95"]
            assert row[4] == (f"{100 * entry['test']['mean']:.2f}% "
                              f"({100 * low:.2f}–{100 * high:.2f})"), key
            assert row[2] == str(len(entry["seeds"]))
        else:
            assert row[3] == row[4] == RUNNING, key  # never a number the record lacks
    said = controls_figures(path)
    if self_taught == "not run":
        assert said["control_self"].startswith(f"is {RUNNING}")
        assert "control_self_lift" not in said  # the appendix's reading needs the runs
    else:  # as the pages read it now: five seeds, their teachers the table's untaught runs
        entry = record["table"]["transformer_self"]
        assert entry["seeds"] == ["0", "1", "2", "3", "4"]
        assert all(run["teacher_is_the_untaught_run"] for run in entry["rows"].values())
        assert said["control_self"].startswith("differs by +")
        assert said["self_teachers_same"].startswith("all 5 came out")
    # each taught Transformer tested review by review against taught bag of words, every seed
    for key, name in [("transformer_nbsvm", "taught_per_review")] + (
            [("transformer_self", "self_per_review")] if self_taught == "measured" else []):
        tests = record["comparisons"][key]["bag_of_words_taught"]["per_review"]
        assert tests["seeds_with_predictions"] == record["table"][key]["seeds"], key
        boot = tests["bootstrap_test"]
        assert boot["reviews"] == 25_000 and boot["seeds"] == 5
        below = sum(test["p_value"] < 0.01 for test in tests["mcnemar_test"].values())
        assert said[name].startswith(
            f"is {100 * boot['mean']:+.2f} points (95% bootstrap interval "
            f"{100 * boot['low']:+.2f} to {100 * boot['high']:+.2f}); McNemar's"), name
        assert f"p below 0.01 on {below} of its 5 seeds" in said[name]


def self_taught_record() -> dict:
    """A control record as `ch11_controls.py --self` writes it, with made-up accuracies (each
    seed's taught-by-NBSVM run less half a point) and teachers that are not the table's untaught
    runs, to test what the page does with them, never shown."""
    record = copy.deepcopy(read("imdb_controls.json"))
    nbsvm = record["table"]["transformer_nbsvm"]["rows"]
    rows = {seed: {**run, "test": run["test"] - 0.005, "validation": run["validation"] - 0.004,
                   "updates": 2243, "processor": "AMD EPYC 7B13 64-Core Processor",
                   "teacher_is_the_untaught_run": False} for seed, run in nbsvm.items()}
    seeds = sorted(rows, key=int)
    record["table"]["transformer_self"] = {
        "name": "Transformer, taught by itself", "seeds": seeds, "rows": rows,
        **{m: summary([rows[s][m] for s in seeds]) for m in ("validation", "test", "minutes")},
        "updates": {s: 2243 for s in seeds}, "test_predictions": {}}
    table_rows_ = {key: entry["rows"] for key, entry in record["table"].items()}
    nothing = {key: {} for key in record["table"]}
    record["comparisons"]["transformer_self"] = {
        other: compare(table_rows_, nothing, "transformer_self", other)
        for other in ("bag_of_words_taught", "nbsvm", "nbsvm_taught")}
    record["reading"] = where_from(record["table"], record["comparisons"])
    return record


def test_the_self_taught_row_reads_its_numbers_once_they_land(tmp_path: Path) -> None:
    path = write(tmp_path, "imdb_controls.json", self_taught_record())
    row = table_rows(controls_table(path).data)[5]
    assert row[:2] == ["Transformer", "itself (its untaught run)"]
    assert RUNNING not in row and row[2] == "5"
    figures = controls_figures(path)
    said, full = figures["control_self"], figures["control_self_full"]
    assert full.startswith("scores ") and RUNNING not in full
    assert "-0.50 points" in full  # less the Transformer taught by NBSVM, seed by seed
    # the chapter's shorter form: its difference from its own untaught runs, which taught it
    # (the made-up runs are not the table's teachers to the last bit, and it does not say so)
    lift = interval_text(points(seed_difference(
        read_controls(path), "transformer_self", "transformer")))
    assert said == f"differs by {lift} from its own untaught runs, which taught it"
    assert full.count(lift) == 1 and "to the last bit" not in full
    assert figures["self_processor"] == "AMD EPYC 7B13 64-Core"
    assert figures["self_teachers_same"].startswith("0 of 5 came out")
    # no predictions of the made-up runs: the page says the row has no per-review test
    assert figures["self_per_review"].startswith("is not tested review by review")


def test_the_control_figures_are_the_records() -> None:
    record = read("imdb_controls.json")
    figures = controls_figures()
    taught = record["comparisons"]["transformer_nbsvm"]
    assert figures["control_taught_minus_bag"] == interval_text(
        points(taught["bag_of_words_taught"]["test"]))
    assert figures["control_taught_minus_bag"].startswith(
        "+0.12 points (95% interval -0.16 to +0.39")
    assert figures["control_taught_minus_nbsvm"].startswith("-2.12 points")
    table = record["table"]

    def lift(key: str, base: str) -> str:
        seeds = table[key]["seeds"]
        return interval_text(paired_difference(
            [100 * table[key]["rows"][s]["test"] for s in seeds],
            [100 * table[base]["rows"][s]["test"] for s in seeds]))

    assert figures["control_bag_lift"] == lift("bag_of_words_taught", "bag_of_words")
    assert figures["control_transformer_lift"] == lift("transformer_nbsvm", "transformer")
    # The optimizer updates of each Transformer arm, as the record has them per seed.
    assert (figures["updates_untaught"], figures["updates_taught"],
            figures["updates_served"]) == ("1,408", "2,243", "6,712 to 6,713")
    assert set(table["transformer"]["updates"].values()) == {1408}
    assert set(table["transformer_served"]["updates"].values()) == {6712, 6713}
    test = taught["bag_of_words_taught"]["test"]  # the reading the chapter states
    assert test["low"] < 0 < test["high"]
    mcnemar = record["comparisons"]["transformer_served"]["bag_of_words_taught"][
        "per_review"]["mcnemar_test"]["0"]
    assert figures["served_mcnemar"].startswith(f"p = {mcnemar['p_value']:.2f}: 837 ")


def test_a_control_record_that_turns_the_reading_around_is_refused(tmp_path: Path) -> None:
    record = copy.deepcopy(read("imdb_controls.json"))
    versus = record["comparisons"]["transformer_nbsvm"]["bag_of_words_taught"]["test"]
    versus["low"], versus["high"] = 0.001, 0.004  # the Transformer above, taught alike
    with pytest.raises(ValueError, match="not told apart"):
        controls_figures(write(tmp_path, "imdb_controls.json", record))


def test_the_served_arms_own_test_differences_are_the_blocks_records() -> None:
    blocks = read("imdb_taught_blocks.json")["taught"]["nbsvm, sentences 2"]["against_counting"]
    figures = served_figures()
    assert figures["served_minus_bag"] == interval_text(
        points(blocks["bag_of_words"]["difference"]))
    assert figures["served_minus_bag"].startswith("+0.58 points (95% interval +0.19 to +0.98")
    assert figures["served_minus_nbsvm"].startswith("-2.41 points (95% interval -2.80 to -2.01")
    assert figures["served_mean"] == "89.10%"


def test_the_order_figures_are_the_records() -> None:
    scores = read("order_pairs_scores.json")
    figures = order_figures()
    served = scores["table"]["served"]["found, test half"]
    assert figures["order_served_test"] == "64 of 150 (42.7%, 95% interval 34.6% to 51.0%)"
    assert (served["ordered"], served["pairs"]) == (64, 150)
    assert figures["order_nbsvm_share"] == "56.0%"
    assert figures["order_remedy_test"] == "86 of 150 (57.3%, 95% interval 49.0% to 65.4%)"
    assert (figures["order_served_accuracy"], figures["order_remedy_accuracy"]) == (
        "88.91%", "88.66%")
    assert figures["order_push_first"] == "0.143" and figures["order_push_second"] == "0.111"
    # The 30 written pairs: 9 ordered, 21 reversed, no tie: read backwards, p about 0.04.
    written = scores["table"]["served"]["written"]
    assert (written["ordered"], written["reversed"], written["tied"]) == (9, 21, 0)
    exact = 2 * sum(math.comb(30, i) for i in range(10)) / 2 ** 30
    assert binomial_two_sided(9, 30) == pytest.approx(exact, rel=1e-12)
    assert binomial_two_sided(21, 30) == binomial_two_sided(9, 30)
    assert binomial_two_sided(15, 30) == 1.0
    assert figures["order_written_p"] == f"{exact:.2f}" == "0.04"
    tables = order_scores_table().data + remedy_table().data
    assert "64/150 (42.7%; 34.6–51.0)" in tables and "**84 of 150**" in tables


def test_an_order_record_whose_remedy_was_not_chosen_on_validation_is_refused(
        tmp_path: Path) -> None:
    record = copy.deepcopy(read("order_pairs_scores.json"))
    record["models"]["remedy"]["chosen_epoch"] = 1  # not the epoch with the most ordered
    with pytest.raises(ValueError, match="chosen on the validation half"):
        order_figures(write(tmp_path, "order_pairs_scores.json", record))


def test_the_equal_inputs_figures_are_the_records() -> None:
    record = read("imdb_sentences_equal.json")
    figures = sentences_equal_figures()
    same = record["comparisons"]["served - nbsvm_sentences"]
    assert figures["equal_nbsvm_labelled"] == interval_text(points(same["validation_labelled"]))
    assert figures["equal_nbsvm_sentences"].startswith("-0.78 points")
    assert figures["equal_p_sentences"] == "0.09" and figures["equal_p_labelled"] == "0.23"
    assert "model-labelled" in sentences_equal_table().data


def test_the_written_reviews_figures_say_what_their_record_says() -> None:
    record = read_handwritten()
    figures = reading_figures(record)
    errors = [r for r in record["reviews"]
              if (r["scores"]["transformer"] > 0.5) != r["label"]]
    sure = [r for r in errors if max(r["scores"]["transformer"],
                                     1 - r["scores"]["transformer"]) > 0.9]
    assert (figures["served_confident_errors"], figures["served_errors"]) == (
        str(len(sure)), str(len(errors))) == ("4", "19")
    assert (figures["bag_confident_errors"], figures["bag_errors"]) == ("0", "23")
    assert sure  # "sometimes sure when wrong", where logistic regression never is
    assert figures["pairs_transformer_ordered"] == "9"
    assert figures["coin_range"] == "10 to 20"  # 9 is below it: fewer than a coin would


@pytest.mark.parametrize("record", [WRITTEN_REVIEWS, ORDER_PAIRS, HANDWRITTEN_REVIEWS,
                                    SENTENCES_LABELLED, IMDB_SENTENCES])
def test_every_text_set_says_who_or_what_made_and_labelled_it(record) -> None:
    provenance = record.provenance
    assert {"made_by", "labelled_by", "when", "shaped_choices"} <= set(provenance)
    assert "language model" in provenance["labelled_by"]
    assert "when" in provenance and "commit" in provenance["when"]
    assert provenance_table(record).data.count("\n") == 5
    if record in (WRITTEN_REVIEWS, ORDER_PAIRS, HANDWRITTEN_REVIEWS):
        assert provenance["made_by"].startswith("a language model")
        assert "no longer held out" in provenance["shaped_choices"]
    else:
        assert "no person labelled them" in provenance["labelled_by"]
    assert ORDER_PAIRS_SCORES.provenance["written"] == WRITTEN_REVIEWS.provenance["made_by"]


def test_the_order_pairs_say_who_found_labelled_and_checked_them(tmp_path: Path) -> None:
    found = read("order_pairs_found.json")
    rows = table_rows(found_provenance_table().data)
    assert [row[0] for row in rows] == [key.replace("_", " ") for key in found["provenance"]]
    said = dict(rows)
    assert said["made by"].startswith("a script") and "language model" in said["checked by"]
    assert "before any model was scored" in said["when"]
    del found["provenance"]
    with pytest.raises(ValueError, match="no 'provenance'"):
        found_provenance_table(write(tmp_path, "order_pairs_found.json", found))


def git(*args: str) -> str:
    found = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else ""


def test_the_provenance_names_the_commits_that_made_the_sets() -> None:
    added = git("log", "--diff-filter=A", "--format=%h %ad", "--date=short", "--",
                "book/results/handwritten_reviews.jsonl")
    labelled = git("log", "--diff-filter=A", "--format=%h %ad", "--date=short", "--",
                   "book/results/sentences_labelled.jsonl")
    if not added or not labelled:
        pytest.skip("this checkout has no git history of book/results/")
    commit, day = added.splitlines()[-1].split()
    assert f"{day} (commit {commit[:7]})" in WRITTEN_REVIEWS.provenance["when"]
    commit, day = labelled.splitlines()[-1].split()
    assert f"{day} (commit {commit[:7]})" in SENTENCES_LABELLED.provenance["when"]
