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
fitted reviews also hold, with validation drawn at random and held out in blocks of
consecutive reviews: the page's measure of why random validation cannot see the gain.
"""

from __future__ import annotations

from pathlib import Path

from IPython.display import Markdown

from scratchformer.measure.statistics import interval_text, paired_difference
from scratchbook.pages import markdown_table
from scratchbook.record import Record, RecordError
from scratchbook.records import (IMDB_SENTENCES, IMDB_SHARED_WORDS, IMDB_TAUGHT,
                                 IMDB_TAUGHT_BLOCKS, SHORT_TEXTS)

FIT_REVIEWS = 22_500  # the training split less the 2,500 of each run's validation slice
TAUGHT_MODEL = "whole review, taught by NBSVM"  # the blocks record's name for the taught model
TEACHERS = {"none": "none", "nbsvm": "NBSVM",
            "transformer": "untaught Transformer"}  # the teachers a record may hold, besides
SENTENCES_ARM = "nbsvm, sentences "  # + K: the blocks record's arms also taught K a review
SHORT_ARMS = {"none": "untaught", "nbsvm": "taught"}  # the sentences record's names


def sentences_kept(versus: dict) -> bool:
    """Whether the served model's rule keeps an arm over the one before it, from their
    paired differences (`ch11_sentences.py`): a 95% interval above zero on the validation
    sentences labelled as texts and one that reaches above zero on whole validation reviews."""
    return versus["validation_labelled"]["low"] > 0 and versus["validation"]["high"] > 0


def sentences_arm(per_review: int) -> str:
    """The blocks record's arm of the NBSVM-taught runs that also learned from up to
    `per_review` sentences of each review (`ch11_taught.py --sentences K`)."""
    return f"{SENTENCES_ARM}{per_review}"


def per_review(arm: str) -> int | None:
    """The sentences a review an arm (of either record) learned from, None if it learned
    from none."""
    for prefix in (SENTENCES_ARM, "sentences "):
        if arm.startswith(prefix) and arm[len(prefix):].isdigit():
            return int(arm[len(prefix):])
    return None


def teacher_name(arm: str) -> str:
    """An arm of the blocks record as the page's table names its teacher."""
    count = per_review(arm)
    return TEACHERS[arm] if count is None else f"NBSVM + {count} sentences"


def short_arm(arm: str) -> str:
    """The sentences record's name for an arm of the blocks record."""
    count = per_review(arm)
    return SHORT_ARMS.get(arm, arm) if count is None else f"sentences {count}"


def sentence_arms(arms) -> list[str]:
    """The arms (of either record) that learned from sentences, fewest a review first."""
    return sorted((arm for arm in arms if per_review(arm)), key=per_review)


def read_taught_record(path: Path | None = None, record: Record = IMDB_TAUGHT) -> dict:
    """`record` (by default the book's `imdb_taught.json`), every run's accuracies checked to
    be numbers from 0 to 1, every arm's teacher known and NBSVM's teaching over two seeds or
    more; a RecordError naming the file otherwise."""
    data = record.read(path)
    source = record.locate(path)
    for teacher in data["runs"]:
        if teacher not in TEACHERS and per_review(teacher) is None:
            raise RecordError(f"{source}: no teacher is called {teacher!r}")
    if len(data["taught"]["nbsvm"]["per_seed"]) < 2:
        raise RecordError(f"{source}: NBSVM's teaching has fewer than two seeds")
    return data


def taught_table(path: Path | None = None, blocks: Path | None = None,
                 short: Path | None = None, seeds: int = 5) -> Markdown:
    """The page's table: NBSVM's teaching with validation drawn at random (its teacher named
    with the slice), then with validation held out in blocks (`imdb_taught_blocks.json`), its
    untaught runs first and the runs that also learned from sentences last (fewest a review
    first); every row of `seeds` runs (a ValueError otherwise: the page says how many). A row
    gives the mean validation accuracy on whole reviews and, for the blocks rows, on one
    sentence of each validation review (`imdb_sentences.json`) labelled as its review, and on
    those drawn sentences that two language models, each given the written guide, labelled
    alike ("model-labelled"); the mean test accuracy with its 95%
    t-interval, and the minutes ("min") per run at most."""
    short_runs = read_sentences_record(short)["runs"]
    rows = []
    for slice_name, record in (("random", read_taught_record(path)),
                               ("blocks", read_taught_record(blocks, IMDB_TAUGHT_BLOCKS))):
        arms = {**({"none": record["untaught"]} if "untaught" in record else {}),
                **{teacher: record["runs"][teacher] for teacher in
                   ("nbsvm", *sentence_arms(record["runs"])) if teacher in record["runs"]}}
        for teacher, runs in arms.items():
            test = [run["test"]["accuracy"] for run in runs.values()]
            interval = paired_difference(test)
            validation = sum(run["validation"] for run in runs.values()) / len(runs)
            scored = short_runs.get(short_arm(teacher), {}) if slice_name == "blocks" else {}
            sentences = ["", ""]
            if set(runs) <= set(scored):
                sentences = [f"{100 * sum(scored[seed][key] for seed in runs) / len(runs):.2f}%"
                             for key in SHORT_TEXTS]
            if len(runs) != seeds:
                raise ValueError(f"{len(runs)} seeds for {teacher_name(teacher)} on the "
                                 f"{slice_name} slice, where the page says {seeds}")
            shown = teacher_name(teacher) + (", random slice" if slice_name == "random" else "")
            rows.append([shown, f"{100 * validation:.2f}%",
                         *sentences,
                         f"{100 * interval['mean']:.2f}% ({100 * interval['low']:.2f}–"
                         f"{100 * interval['high']:.2f})",
                         f"{max(run['minutes'] for run in runs.values()):.0f}"])
    return markdown_table(["teacher", "validation", "sentences", "model-labelled",
                           "test (95% interval)", "min"], rows)


def test_figures(name: str, summary: dict) -> dict[str, str]:
    """A model's test accuracies over seeds as the page quotes them: `<name>_mean` and
    `<name>_interval` (95%)."""
    low, high = summary["interval_95"]
    return {f"{name}_mean": f"{100 * summary['mean']:.2f}%",
            f"{name}_interval": f"{100 * low:.2f}% to {100 * high:.2f}%"}


def _points(difference: dict) -> dict:
    return {**difference, **{k: 100 * difference[k] for k in ("mean", "low", "high")}}


def taught_figures(path: Path | None = None) -> dict[str, str]:
    """The numbers chapter 11's prose quotes from the record, as text, keyed by glue name.

    Refuses (ValueError) a record that no longer supports what the prose says: NBSVM's
    teaching above the untaught runs on test with an interval above zero, and not on
    validation.

    Described in the appendix "Experiments behind chapter 11", "Teaching: a random slice, then
    blocks"."""
    record = read_taught_record(path)
    versus = record["taught"]["nbsvm"]["against_whole_review"]
    claims = {
        "above the untaught runs on test": versus["test"]["low"] > 0,
        "not on validation": versus["validation"]["low"] <= 0 <= versus["validation"]["high"],
    }
    broken = [claim for claim, holds in claims.items() if not holds]
    if broken:
        raise ValueError(f"the record no longer supports chapter 11's reading: {broken}")
    first = next(iter(record["runs"]["nbsvm"].values()))
    return {
        "taught_unlabelled": f"{first['unlabelled']:,}",
        "taught_reviews": f"{FIT_REVIEWS + first['unlabelled']:,}",
        "taught_updates": f"{first['history'][-1]['step']:,}",
        "taught_minus_whole": interval_text(_points(versus["test"])),
        "taught_minus_whole_validation": interval_text(_points(versus["validation"])),
    }


def shared_words_figures(path: Path | None = None) -> dict[str, str]:
    """The shares of rare words (used by 2 to 10 of IMDB's reviews) that the fitted reviews
    also hold, for validation reviews drawn at random, for validation held out in blocks of
    consecutive reviews, and for test reviews, as the page quotes them: means over the
    record's splits; and how often a review shares a rare word with the next one in the file
    and with one drawn at random.

    Refuses (ValueError) a record in which some split turns the page's reading around (random
    validation above blocks, blocks above test, in their share of rare words with the fitted
    reviews; the next review sharing no more than a random one), and a record that is
    missing or of another shape.

    Described in the appendix "Experiments behind chapter 11", "Teaching: a random slice, then
    blocks"."""
    source = IMDB_SHARED_WORDS.locate(path)
    record = IMDB_SHARED_WORDS.read(path)
    shares = {seed: tuple(IMDB_SHARED_WORDS.field(split, key, source) for key in (
        "reviews.validation.fit", "blocks.validation.fit", "reviews.test.fit"))
        for seed, split in record["seeds"].items()}
    rare = record["rare"]["reviews_using_it"]
    neighbours = record["neighbours_sharing_a_rare_word"]
    next_review, random_review = neighbours["next"], neighbours["random"]
    if (not shares or next_review <= random_review
            or any(not reviews > blocks > test for reviews, blocks, test in shares.values())):
        raise ValueError(f"{source} no longer supports chapter 11's reading: validation at "
                         "random above validation in blocks above test in every split, the "
                         f"next review above a random one; got {shares}, {neighbours}")

    def mean(column: int) -> str:
        return f"{100 * sum(s[column] for s in shares.values()) / len(shares):.0f}%"

    return {
        "shared_rare": f"{rare[0]} to {rare[1]}",
        "shared_splits": str(len(shares)),
        "shared_validation": mean(0),
        "shared_blocks": mean(1),
        "shared_test": mean(2),
        "shared_next": f"{100 * next_review:.1f}%",
        "shared_random": f"{100 * random_review:.3f}%",
    }


def blocks_figures(path: Path | None = None) -> dict[str, str]:
    """The numbers chapter 11's prose quotes from the blocks record
    (`imdb_taught_blocks.json`: both models again, every seed's validation held out in
    blocks of consecutive reviews), as text, keyed by glue name.

    Refuses (ValueError) a record that no longer supports what the prose says: validation
    held out in blocks; teaching above the untaught runs on validation and on test, each
    interval above zero, so that validation chooses the taught model; the chosen model's
    test interval above bag of words and below NBSVM; every run within 60 minutes.

    Described in the appendix "Experiments behind chapter 11", "Teaching: a random slice, then
    blocks"."""
    record = read_taught_record(path, IMDB_TAUGHT_BLOCKS)
    try:
        taught, best = record["taught"]["nbsvm"], record["best_transformer_test_accuracy"]
        versus = taught["against_whole_review"]
        bag = taught["against_counting"]["bag_of_words"]
        nbsvm = taught["against_counting"]["nbsvm"]
        untaught_minutes = max(run["minutes"] for run in record["untaught"].values())
        claims = {
            "held out in blocks": record["holdout"] == "blocks",
            "above the untaught runs on validation": versus["validation"]["low"] > 0,
            "above them on test": versus["test"]["low"] > 0,
            "chosen on validation": best["arm"] in ("nbsvm",
                                                    *sentence_arms(record["runs"])) and
                                    best["per_seed"] == record["taught"][best["arm"]]["per_seed"],
            "above bag of words": bag["lower_end_above"],
            "below NBSVM": taught["interval_95"][1] < nbsvm["accuracy"],
            "within 60 minutes": max(taught["minutes"], untaught_minutes) <= 60,
        }
    except (KeyError, TypeError) as err:
        raise ValueError(f"the blocks record is not the shape tools/records/"
                         f"ch11_taught_record.py --untaught writes ({err!r})") from None
    broken = [claim for claim, holds in claims.items() if not holds]
    if broken:
        raise ValueError(f"the blocks record no longer supports chapter 11's reading: {broken}")
    return {
        "blocks_seeds": str(len(best["per_seed"])),
        "blocks_minus_whole_validation": interval_text(_points(versus["validation"])),
        "blocks_minus_whole": interval_text(_points(versus["test"])),
        **test_figures("chosen", taught),
        "chosen_minus_bag": interval_text(_points(bag["difference"])),
    }



def read_sentences_record(path: Path | None = None) -> dict:
    """`imdb_sentences.json` (`tools/records/ch11_sentences.py`), its accuracies checked to be
    numbers from 0 to 1 (`IMDB_SENTENCES`); a RecordError naming the file otherwise."""
    return IMDB_SENTENCES.read(path)


def sentences_figures(kept: int, path: Path | None = None,
                      blocks: Path | None = None) -> dict[str, str]:
    """What the prose quotes of the runs that also learned from sentences: the validation
    sentences model-labelled as texts (`sentences_labelled_drawn`, those kept with a verdict,
    how often the two annotators, language models each given the written guide, agreed); for
    each number K of sentences a review, the texts added (`sentences_K_taught`) and the paired
    differences with the arm before it on model-labelled sentences, on sentences labelled as
    their review and on whole validation reviews (`sentences_K_gain`, `sentences_K_gain_noisy`,
    `sentences_K_gain_whole`); the seed-0 sums of two accuracies that picked the most a review
    (`sentences_tried`); the counting models' mean accuracy on the sentences labelled as
    their review (fitted on each seed's fit split) and the kept model's paired differences
    with them on those labelled as texts; its test accuracy; as text, keyed by glue name.

    Refuses (ValueError) records that no longer support what the prose says: that the rule
    keeps every arm up to `kept` sentences a review (its interval above the arm before it on
    sentences labelled as texts, not below it on whole validation reviews) and none after it,
    so that both records choose the arm of `kept`; the most a review among them the one the
    seed-0 tries picked; its test interval above bag of words; every run within 60 minutes;
    its interval above both counting models on sentences labelled as texts.

    Described in the appendix "Experiments behind chapter 11", "Sentences a review, and the
    served model's rule"."""
    short = read_sentences_record(path)
    record = read_taught_record(blocks, IMDB_TAUGHT_BLOCKS)
    figures, claims, before = {}, {}, "taught"
    try:
        for arm in sentence_arms(record["runs"]):
            count, name = per_review(arm), short_arm(arm)
            versus = short["differences"][f"{name} - {before}"]
            keeps = sentences_kept(versus)
            claims[f"{count} a review {'kept' if count <= kept else 'not kept'}"] = (
                keeps == (count <= kept))
            before = name  # the reading holds only if each arm is kept up to `kept`
            first = next(iter(record["runs"][arm].values()))
            figures |= {
                f"sentences_{count}_taught": f"{first['sentences']:,}",
                f"sentences_{count}_gain": interval_text(_points(versus["validation_labelled"])),
                f"sentences_{count}_gain_noisy": interval_text(
                    _points(versus["validation_sentences"])),
                f"sentences_{count}_gain_whole": interval_text(_points(versus["validation"])),
            }
        chosen, best = record["taught"][sentences_arm(kept)], record[
            "best_transformer_test_accuracy"]
        tried = short["tried"]
        figures["sentences_tried"] = ", ".join(  # each a sum of two accuracies in %, of 200
            f"{100 * total:.2f} for {per_review(arm)}"
            for arm, total in sorted(tried["sums"].items(), key=lambda item: per_review(item[0])))
        served = short["runs"][f"sentences {kept}"]
        served_seeds = sorted(served, key=int)
        over_counting = {
            model: paired_difference(
                [served[seed]["validation_labelled"] for seed in served_seeds],
                [short["counting"][model][seed]["validation_labelled"] for seed in served_seeds])
            for model in ("bag_of_words", "nbsvm")}
        claims |= {
            "the most a review repeated is the one tried on seed 0 picked":
                tried["picked"] == short_arm(sentence_arms(record["runs"])[-1]),
            "served": short["served"]["arm"] == f"sentences {kept}",
            "the book's best": best["arm"] == sentences_arm(kept),
            "above bag of words": chosen["against_counting"]["bag_of_words"]["lower_end_above"],
            "within 60 minutes": chosen["minutes"] <= 60,
            "above counting on labelled sentences":
                all(d["low"] > 0 for d in over_counting.values()),
        }
        labelled = [seed["labelled"] for seed in short["sentences"]["per_seed"].values()]
    except (KeyError, TypeError) as err:
        raise ValueError(f"the sentences records are not the shape their tools write "
                         f"({err!r})") from None
    broken = [claim for claim, holds in claims.items() if not holds]
    if broken:
        raise ValueError(f"the sentences records no longer support chapter 11's reading: "
                         f"{broken}")

    def mean(model: str) -> str:
        seeds = short["counting"][model].values()
        return f"{100 * sum(seed['validation_sentences'] for seed in seeds) / len(seeds):.1f}%"

    def total(key: str) -> int:
        return sum(seed[key] for seed in labelled)

    return {
        **figures,
        "sentences_bag": mean("bag_of_words"),
        "sentences_nbsvm": mean("nbsvm"),
        "sentences_labelled_kept": f"{total('kept'):,}",
        "sentences_labelled_drawn": f"{total('drawn'):,}",
        "sentences_labelled_alike": f"{100 * total('alike') / total('drawn'):.1f}%",
        "sentences_labelled_minus_bag": interval_text(_points(over_counting["bag_of_words"])),
        "sentences_labelled_minus_nbsvm": interval_text(_points(over_counting["nbsvm"])),
        **test_figures("sentences", best),
    }
