"""Chapter 11's whole-review classifier taught on unlabelled reviews: the record
`book/results/imdb_taught.json` (written by `tools/records/ch11_taught_record.py` from runs of
`tools/records/ch11_taught.py`) read, its shape checked, and laid out as the page's table and
the numbers its prose quotes.

Written by hand, not exported. The record holds, per teacher (`nbsvm`, `transformer`) and
seed, the best validation accuracy, the test accuracy and the minutes to the trained model;
per teacher with two seeds or more, the test accuracies' mean and 95% t-interval and the paired
differences with the untaught whole-review runs and with the counting baselines. It does not
recompute anything but intervals from the record's own per-seed numbers.

Beside it, `book/results/imdb_shared_words.json` (`tools/records/ch11_shared_words.py`): per
seed's split, the share of the validation reviews' and the test reviews' rare words that the
fitted reviews also hold, the page's measure of why validation cannot see the gain.
"""

from __future__ import annotations

import json
from pathlib import Path

from IPython.display import Markdown

from scratchformer.measure.statistics import interval_text
from scratchformer.records.pages import book_root, markdown_table

RECORD = Path("book") / "results" / "imdb_taught.json"
SHARED_WORDS = Path("book") / "results" / "imdb_shared_words.json"
FIT_REVIEWS = 22_500  # the training split less the 2,500 of each run's validation slice
TEACHERS = {"nbsvm": "NBSVM", "transformer": "untaught Transformer"}  # the table's rows


class TaughtRecordError(ValueError):
    """The taught-classifier record is missing, or not of the shape its script writes."""


def read_taught_record(path: Path | None = None) -> dict:
    """The record (by default the repository's), every run's accuracies checked to be
    numbers from 0 to 1 and NBSVM's teaching summarised; a TaughtRecordError naming the file
    otherwise."""
    source = path if path is not None else book_root() / RECORD
    try:
        record = json.loads(source.read_text())
        for teacher, runs in record["runs"].items():
            for seed, run in runs.items():
                values = (run["validation"], run["test"]["accuracy"])
                if teacher not in TEACHERS or not all(
                        isinstance(v, (int, float)) and 0 <= v <= 1 for v in values):
                    raise TaughtRecordError(f"{source}: runs.{teacher}.{seed} is not a run "
                                            "with accuracies from 0 to 1")
        if len(record["taught"]["nbsvm"]["per_seed"]) < 2:
            raise TaughtRecordError(f"{source}: NBSVM's teaching has fewer than two seeds")
    except FileNotFoundError:
        raise TaughtRecordError(f"{source} does not exist: write it with "
                                "tools/records/ch11_taught_record.py") from None
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
        raise TaughtRecordError(f"{source} is not the record "
                                "tools/records/ch11_taught_record.py writes "
                                f"({type(err).__name__}: {err})") from None
    return record


def taught_table(path: Path | None = None) -> Markdown:
    """The page's table: a row per teacher (seeds, mean validation accuracy, mean test
    accuracy with its 95% interval where there are two seeds or more, minutes per run at
    most)."""
    record = read_taught_record(path)
    rows = []
    for teacher, runs in record["runs"].items():
        test = [100 * run["test"]["accuracy"] for run in runs.values()]
        mean_test = f"{sum(test) / len(test):.2f}%"
        if len(test) >= 2:
            low, high = (100 * value for value in record["taught"][teacher]["interval_95"])
            mean_test += f" ({low:.2f} to {high:.2f})"
        validation = sum(run["validation"] for run in runs.values()) / len(runs)
        rows.append([TEACHERS[teacher], len(runs), f"{100 * validation:.2f}%", mean_test,
                     f"{max(run['minutes'] for run in runs.values()):.0f}"])
    return markdown_table(["teacher", "seeds", "validation",
                           "test (95% interval)", "minutes"], rows)


def _points(difference: dict) -> dict:
    return {**difference, **{k: 100 * difference[k] for k in ("mean", "low", "high")}}


def taught_figures(path: Path | None = None) -> dict[str, str]:
    """The numbers chapter 11's prose quotes from the record, as text, keyed by glue name.

    Refuses (ValueError) a record that no longer supports what the prose says: NBSVM's
    teaching above the untaught runs on test with an interval above zero, and not on
    validation; its test interval's lower end above bag of words and its upper end below
    NBSVM; every run within 60 minutes; a run taught by its own verdicts.

    Described in chapter 11, "Learning from unlabelled reviews"."""
    record = read_taught_record(path)
    taught = record["taught"]["nbsvm"]
    versus = taught["against_whole_review"]
    bag = taught["against_counting"]["bag_of_words"]
    nbsvm = taught["against_counting"]["nbsvm"]
    claims = {
        "above the untaught runs on test": versus["test"]["low"] > 0,
        "not on validation": versus["validation"]["low"] <= 0 <= versus["validation"]["high"],
        "above bag of words": bag["lower_end_above"],
        "below NBSVM": taught["interval_95"][1] < nbsvm["accuracy"],
        "within 60 minutes": taught["minutes"] <= 60,
        "a run taught by its own verdicts": bool(record["runs"].get("transformer")),
    }
    broken = [claim for claim, holds in claims.items() if not holds]
    if broken:
        raise ValueError(f"the record no longer supports chapter 11's reading: {broken}")
    nbsvm_runs = record["runs"]["nbsvm"]
    first = next(iter(nbsvm_runs.values()))
    figures = {
        "taught_unlabelled": f"{first['unlabelled']:,}",
        "taught_reviews": f"{FIT_REVIEWS + first['unlabelled']:,}",
        "taught_updates": f"{first['history'][-1]['step']:,}",
        "taught_seeds": str(len(taught["per_seed"])),
        "taught_mean": f"{100 * taught['mean']:.2f}%",
        "taught_interval": (f"{100 * taught['interval_95'][0]:.2f}% to "
                            f"{100 * taught['interval_95'][1]:.2f}%"),
        "taught_minutes": f"{taught['minutes']:.0f}",
        "taught_minus_whole": interval_text(_points(versus["test"])),
        "taught_minus_whole_validation": interval_text(_points(versus["validation"])),
        "taught_minus_bag": interval_text(_points(bag["difference"])),
        "taught_minus_nbsvm": interval_text(_points(nbsvm["difference"])),
    }
    whole = json.loads((book_root() / record["sources"]["whole_review"]).read_text())
    untaught = whole["candidates"]["whole review"]["test"]
    own = []
    for seed, run in record["runs"]["transformer"].items():
        gain = 100 * (run["test"]["accuracy"] - untaught[seed])
        nbsvm_gain = 100 * (nbsvm_runs[seed]["test"]["accuracy"] - untaught[seed])
        if not 0 < gain < nbsvm_gain:
            raise ValueError("the record no longer supports chapter 11's reading: its own "
                             f"verdicts gain {gain:+.2f} points, NBSVM's {nbsvm_gain:+.2f}")
        own.append(f"{100 * run['test']['accuracy']:.2f}% on test (seed {seed}; untaught "
                   f"{100 * untaught[seed]:.2f}%, so {gain:+.2f} points, where NBSVM's "
                   f"labels gave {nbsvm_gain:+.2f})")
    figures["self_taught_runs"] = "; ".join(own)
    return figures


def shared_words_figures(path: Path | None = None) -> dict[str, str]:
    """The shares of rare words (used by 2 to 10 of IMDB's reviews) that the fitted reviews
    also hold, for validation and for test reviews, as the page quotes them: means over the
    record's splits.

    Refuses (ValueError) a record in which some split's validation reviews do not share more
    of their rare words with the fitted reviews than the test reviews do, the page's reading,
    and a record that is missing or of another shape.

    Described in chapter 11, "Learning from unlabelled reviews"."""
    source = path if path is not None else book_root() / SHARED_WORDS
    try:
        record = json.loads(source.read_text())
        shares = {seed: (split["validation"]["fit"], split["test"]["fit"])
                  for seed, split in record["seeds"].items()}
        rare = record["rare"]["reviews_using_it"]
    except FileNotFoundError:
        raise ValueError(f"{source} does not exist: write it with "
                         "tools/records/ch11_shared_words.py") from None
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{source} is not the record tools/records/ch11_shared_words.py "
                         f"writes ({type(err).__name__}: {err})") from None
    if not shares or any(validation <= test for validation, test in shares.values()):
        raise ValueError(f"{source} no longer supports chapter 11's reading: validation "
                         f"above test in every split, got {shares}")
    return {
        "shared_rare": f"{rare[0]} to {rare[1]}",
        "shared_splits": str(len(shares)),
        "shared_validation": f"{100 * sum(v for v, _ in shares.values()) / len(shares):.0f}%",
        "shared_test": f"{100 * sum(t for _, t in shares.values()) / len(shares):.0f}%",
    }
