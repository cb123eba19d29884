"""Chapter 11's classifier reading whole reviews: the record `book/results/imdb_whole_review.json`
(written by `tools/records/ch11_whole_review.py`) read, its shape checked, and laid out as the
page's table and the numbers its prose quotes.

Written by hand, not exported. The record holds, per candidate (the head+tail preset at 254
tokens, its `max_len=512` variant, and the whole review read in windows), each seed's validation
and test accuracy and minutes; the candidate chosen on validation; its test accuracies with
their mean and 95% t-interval; and the counting baselines' test accuracies. It does not handle
records of other candidates, and does not recompute anything but intervals from the record's
own per-seed numbers.
"""

from __future__ import annotations

from pathlib import Path

from IPython.display import Markdown

from scratchformer.measure.statistics import interval_text, paired_difference
from scratchbook.pages import markdown_table
from scratchbook.record import RecordError
from scratchbook.records import IMDB_WHOLE_REVIEW, WHOLE_REVIEW_CANDIDATES

CANDIDATES = WHOLE_REVIEW_CANDIDATES  # the table's rows, in order
READS = {"254 tokens": "head+tail, 254 tokens", "510 tokens": "head+tail, 510 tokens",
         "whole review": "every token, windows of 254"}  # the table's first column


def read_whole_review_record(path: Path | None = None) -> dict:
    """The record (by default the book's), every candidate's per-seed accuracies checked to be
    numbers from 0 to 1 (`IMDB_WHOLE_REVIEW`) and its best model one of them with two seeds or
    more; a RecordError naming the file otherwise."""
    record = IMDB_WHOLE_REVIEW.read(path)
    best = record["best_transformer_test_accuracy"]
    if best["model"] not in CANDIDATES or len(best["per_seed"]) < 2:
        raise RecordError(f"{IMDB_WHOLE_REVIEW.locate(path)}: best_transformer_test_accuracy "
                          "names no candidate with two seeds or more")
    return record


def _mean(values: dict) -> float:
    return sum(values.values()) / len(values)


def whole_review_table(path: Path | None = None) -> Markdown:
    """The page's table: a row per candidate (what it reads, seeds, mean validation and test
    accuracy, the test accuracy's 95% interval, minutes per run) and a row per counting
    baseline."""
    record = read_whole_review_record(path)
    rows = []
    for name in CANDIDATES:
        row = record["candidates"][name]
        test = [100 * value for value in row["test"].values()]
        interval = paired_difference(test)
        rows.append([READS[name], len(test), f"{100 * _mean(row['validation']):.2f}%",
                     f"{interval['mean']:.2f}%",
                     f"{interval['low']:.2f} to {interval['high']:.2f}",
                     f"{_mean(row['minutes']):.1f}"])
    for key, name in (("bag_of_words", "bag of words"), ("nbsvm", "NBSVM")):
        accuracy = record["against_counting"][key]["accuracy"]
        rows.append([f"{name}, whole review", "", "", f"{100 * accuracy:.2f}%", "", ""])
    return markdown_table(["model, reading", "seeds", "validation", "test",
                           "test, 95% interval", "minutes per run"], rows)


def whole_review_figures(path: Path | None = None) -> dict[str, str]:
    """The numbers chapter 11's prose quotes from the record, as text, keyed by glue name.

    Refuses (ValueError) a record that no longer supports what the prose says: the whole
    review chosen on validation; validation flattering it by more than either cut model;
    its test interval's lower end not above bag of words (the target the prose says is
    missed).

    Described in chapter 11, "Reading the whole review", and in the appendix "Experiments
    behind chapter 11", "Choosing the whole-review reading"."""
    record = read_whole_review_record(path)
    table, best = record["candidates"], record["best_transformer_test_accuracy"]
    whole = table["whole review"]
    shared = record["chosen_on"]["shared_seeds"]
    versus_510 = paired_difference([100 * whole["test"][s] for s in shared],
                                   [100 * table["510 tokens"]["test"][s] for s in shared])
    bag = record["against_counting"]["bag_of_words"]
    drops = {name: 100 * (_mean(row["validation"]) - _mean(row["test"]))
             for name, row in table.items()}
    claims = {
        "the whole review chosen on validation": best["model"] == "whole review",
        "validation flatters it most": all(drops["whole review"] > drops[name]
                                           for name in CANDIDATES[:2]),
        "bag of words not beaten": best["interval_95"][0] <= bag["accuracy"],
    }
    broken = [claim for claim, holds in claims.items() if not holds]
    if broken:
        raise ValueError(f"the record no longer supports chapter 11's reading: {broken}")
    return {
        "whole_seeds": str(len(whole["test"])),
        "whole_validation_mean": f"{100 * _mean(whole['validation']):.2f}%",
        "whole_minutes": f"{max(whole['minutes'].values()):.0f}",
        "whole_validation_drop": f"{drops['whole review']:.2f}",
        "cut_validation_drops": (f"{drops['254 tokens']:.2f} and "
                                 f"{drops['510 tokens']:.2f}"),
        "whole_minus_510": interval_text(versus_510),
        "whole_shared_seeds": str(len(shared)),
        "best_mean": f"{100 * best['mean']:.2f}%",
        "best_interval": (f"{100 * best['interval_95'][0]:.2f}% to "
                          f"{100 * best['interval_95'][1]:.2f}%"),
        "best_minus_bag": interval_text({**bag["difference"], **{
            k: 100 * bag["difference"][k] for k in ("mean", "low", "high")}}),
        "whole_bag_accuracy": f"{100 * bag['accuracy']:.2f}%",
    }
