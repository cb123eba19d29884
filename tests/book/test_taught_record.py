"""The records of chapter 11's classifier taught on unlabelled reviews
(`book/results/imdb_taught.json`, validation drawn at random, and
`book/results/imdb_taught_blocks.json`, validation held out in blocks with its own untaught
runs): their summaries recompute from their own runs and from the whole-review and counting
records, every run is within an hour, the chosen model is the rule's, and the page's figures
refuse a record that turns a reading around; likewise the rare words validation and test
reviews share with the fitted reviews (`book/results/imdb_shared_words.json`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import pytest

from support import ROOT, record_script
from scratchbook.record import RecordError
from scratchformer.measure.statistics import paired_difference
from scratchbook.records.taught import (SHORT_TEXTS, blocks_figures,
                                        per_review, read_sentences_record,
                                        read_taught_record, sentence_arms, sentences_arm,
                                        sentences_figures, shared_words_figures, short_arm,
                                        taught_figures, taught_table)

RESULTS = ROOT / "book" / "results"
RECORD = RESULTS / "imdb_taught.json"
BLOCKS = RESULTS / "imdb_taught_blocks.json"
SHORT = RESULTS / "imdb_sentences.json"


@pytest.fixture(scope="module")
def record() -> dict:
    return read_taught_record(RECORD)


@pytest.fixture(scope="module")
def blocks() -> dict:
    return read_taught_record(BLOCKS)


@pytest.fixture(scope="module", params=["random", "blocks"])
def each_record(request: pytest.FixtureRequest) -> dict:
    return read_taught_record(RECORD if request.param == "random" else BLOCKS)


def untaught_of(record: dict) -> dict:
    """The untaught runs a record pairs with: its own, or the whole-review record's."""
    if "untaught" not in record:
        whole = json.loads((RESULTS / "imdb_whole_review.json").read_text())
        return whole["candidates"]["whole review"]
    runs = record["untaught"]
    return {"validation": {s: run["validation"] for s, run in runs.items()},
            "test": {s: run["test"]["accuracy"] for s, run in runs.items()},
            "minutes": {s: run["minutes"] for s, run in runs.items()}}


def test_the_summary_is_recomputed_from_the_runs(each_record: dict) -> None:
    record = each_record
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


def test_each_run_is_what_its_command_says(each_record: dict) -> None:
    record = each_record
    holdout = record.get("holdout", "reviews")
    for teacher, runs in record["runs"].items():
        for seed, run in runs.items():
            words = shlex.split(run["command"])
            assert words[1] == "tools/records/ch11_taught.py"
            assert words[words.index("--teacher") + 1] == teacher.split(",")[0]
            taught_sentences = run.get("sentences", 0) > 0
            assert ("--sentences" in words) == (per_review(teacher) is not None) \
                == taught_sentences
            if taught_sentences:
                assert teacher == sentences_arm(int(words[words.index("--sentences") + 1]))
            assert words[words.index("--seed") + 1] == seed and "--test" in words
            assert run["validation"] == max(row["val_accuracy"] for row in run["history"])
            assert run["test"]["examples"] == 25_000
            assert (run["teacher_run"] is None) == teacher.startswith("nbsvm")
            assert (f"validation={holdout}" in words) == (holdout != "reviews")
    for seed, run in record.get("untaught", {}).items():
        words = shlex.split(run["command"])
        assert words[1] == "train-imdb" and f"seed={seed}" in words
        assert f"validation={holdout}" in words and "truncation=windows" in words
        assert run["holdout"] == holdout and run["test"]["examples"] == 25_000
    assert len({run["unlabelled"] for runs in record["runs"].values()
                for run in runs.values()}) == 1


def test_the_comparisons_are_the_recorded_runs_and_baselines(each_record: dict) -> None:
    record = each_record
    untaught = untaught_of(record)
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
    versus = record["taught"]["nbsvm"]["against_whole_review"]
    assert figures["taught_minus_whole"].startswith(f"{100 * versus['test']['mean']:+.2f} points")
    taught = record["taught"]["nbsvm"]
    rows = taught_table().data.strip().splitlines()
    assert rows[2].startswith("| NBSVM, random slice |")  # header, rule, then the runs
    assert (f"{100 * taught['mean']:.2f}% ({100 * taught['interval_95'][0]:.2f}–"
            f"{100 * taught['interval_95'][1]:.2f})") in rows[2]
    turned = json.loads(json.dumps(record))
    turned["taught"]["nbsvm"]["against_whole_review"]["validation"]["low"] = 0.001
    path = tmp_path / "imdb_taught.json"
    path.write_text(json.dumps(turned))
    with pytest.raises(ValueError, match="not on validation"):
        taught_figures(path)
    del turned["taught"]["nbsvm"]
    path.write_text(json.dumps(turned))
    with pytest.raises(RecordError, match="no 'nbsvm' under taught"):
        read_taught_record(path)
    with pytest.raises(RecordError, match="does not exist"):
        read_taught_record(tmp_path / "missing.json")


def test_the_shared_words_record_and_its_figures(record: dict, tmp_path: Path) -> None:
    shared = json.loads((RESULTS / "imdb_shared_words.json").read_text())
    assert shlex.split(shared["command"])[1] == "tools/records/ch11_shared_words.py"
    assert set(record["taught"]["nbsvm"]["seeds"]) <= set(shared["seeds"])
    assert shared["reviews"]["unlabelled"] == record["runs"]["nbsvm"]["0"]["unlabelled"]
    validation = [split["reviews"]["validation"]["fit"] for split in shared["seeds"].values()]
    blocks = [split["blocks"]["validation"]["fit"] for split in shared["seeds"].values()]
    test = [split["reviews"]["test"]["fit"] for split in shared["seeds"].values()]
    assert all(0 < share < 1 for share in validation + blocks + test)
    figures = shared_words_figures()
    assert figures["shared_validation"] == f"{100 * sum(validation) / len(validation):.0f}%"
    assert figures["shared_blocks"] == f"{100 * sum(blocks) / len(blocks):.0f}%"
    assert figures["shared_test"] == f"{100 * sum(test) / len(test):.0f}%"
    assert figures["shared_splits"] == str(len(shared["seeds"]))
    # held out in blocks, validation is nearer test than at random, and still above it
    assert all(v - 0.1 > r > t for v, r, t in zip(validation, blocks, test))
    next_review = shared["neighbours_sharing_a_rare_word"]["next"]
    assert next_review > 100 * shared["neighbours_sharing_a_rare_word"]["random"]
    assert figures["shared_next"] == f"{100 * next_review:.1f}%"
    path = tmp_path / "imdb_shared_words.json"
    for seed, split, turned in (("1", "reviews", "blocks"), ("3", "blocks", "test")):
        changed = json.loads(json.dumps(shared))
        turned_share = (changed["seeds"][seed]["reviews"]["test"]["fit"] if turned == "test"
                        else changed["seeds"][seed]["blocks"]["validation"]["fit"])
        changed["seeds"][seed][split]["validation"]["fit"] = turned_share
        path.write_text(json.dumps(changed))
        with pytest.raises(ValueError, match="no longer supports"):
            shared_words_figures(path)
    del shared["rare"]
    path.write_text(json.dumps(shared))
    with pytest.raises(RecordError, match="no 'rare' under the top level"):
        shared_words_figures(path)
    with pytest.raises(ValueError, match="does not exist"):
        shared_words_figures(tmp_path / "missing.json")


def test_blocks_choose_the_model_by_the_rule_and_record_it(blocks: dict) -> None:
    taught = blocks["taught"]["nbsvm"]
    untaught = untaught_of(blocks)
    assert blocks["holdout"] == "blocks" and len(taught["per_seed"]) >= 5
    assert sorted(blocks["untaught"], key=int) == taught["seeds"]
    best = blocks["best_transformer_test_accuracy"]
    validation = paired_difference([blocks["runs"]["nbsvm"][s]["validation"]
                                    for s in taught["seeds"]],
                                   [untaught["validation"][s] for s in taught["seeds"]])
    arm = "nbsvm" if validation["low"] > 0 else "none"
    short = read_sentences_record(SHORT)
    for candidate in sentence_arms(blocks["runs"]) if arm == "nbsvm" else []:
        seeds = taught["seeds"]
        versus = {key: paired_difference(
            [blocks["runs"][candidate][s][key] if key == "validation"
             else short["runs"][short_arm(candidate)][s][key] for s in seeds],
            [blocks["runs"][arm][s][key] if key == "validation"
             else short["runs"][short_arm(arm)][s][key] for s in seeds])
            for key in ("validation", "validation_labelled")}
        if versus["validation_labelled"]["low"] > 0 and versus["validation"]["high"] > 0:
            arm = candidate
    assert best["arm"] == arm
    assert short["served"]["arm"] == (short_arm(arm) if arm != "none" else "taught")
    per_seed = (blocks["taught"][arm]["per_seed"] if arm != "none"
                else [untaught["test"][s] for s in taught["seeds"]])
    interval = paired_difference(per_seed)
    assert best["per_seed"] == per_seed and best["df"] == len(per_seed) - 1 >= 4
    assert best["interval_95"] == pytest.approx([interval["low"], interval["high"]], abs=1e-12)
    assert best["minutes"] <= 60


def test_the_sentences_record_is_of_the_same_runs_and_recomputes(blocks: dict) -> None:
    short = read_sentences_record(SHORT)
    assert short["holdout"] == blocks["holdout"] == "blocks"
    arms = {"untaught": blocks["untaught"], "taught": blocks["runs"]["nbsvm"],
            **{short_arm(arm): blocks["runs"][arm] for arm in sentence_arms(blocks["runs"])}}
    repeated = {arm for arm, runs in short["runs"].items() if len(runs) >= 2}
    assert repeated == set(arms) and len(arms) >= 4
    tried = {arm: runs["0"]["validation"] + runs["0"]["validation_sentences"]
             for arm, runs in short["runs"].items() if per_review(arm) and "0" in runs}
    assert short["tried"]["sums"] == pytest.approx(tried, abs=1e-12) and len(tried) >= 3
    assert short["tried"]["picked"] == max(tried, key=lambda arm: (tried[arm], per_review(arm)))
    assert all(list(short["runs"][arm]) == ["0"] for arm in set(short["runs"]) - repeated)
    for arm, runs in arms.items():
        assert sorted(short["runs"][arm], key=int) == sorted(runs, key=int)
        for seed, run in runs.items():
            scored = short["runs"][arm][seed]
            assert scored["checkpoint_sha256"] == run["checkpoint_sha256"]
            assert scored["validation"] == run["validation"]
    ladder = list(arms)  # untaught, taught, then by sentences a review
    assert {f"{arm} - {other}" for arm, other in zip(ladder[1:], ladder)} <= set(
        short["differences"])
    for name in short["differences"]:
        arm, other = name.split(" - ")
        seeds = sorted(short["runs"][arm], key=int)
        for key in ("validation", *SHORT_TEXTS):
            expected = paired_difference([short["runs"][arm][s][key] for s in seeds],
                                         [short["runs"][other][s][key] for s in seeds])
            assert short["differences"][name][key] == pytest.approx(expected, abs=1e-12)
    for seed, drawn in short["sentences"]["per_seed"].items():
        assert 2_000 < drawn["sentences"] <= 2_500 and 3 <= drawn["mean_tokens"] <= 60
        assert set(short["counting"]["nbsvm"]) == set(short["counting"]["bag_of_words"])
        assert set(short["counting"]["nbsvm"][seed]) == set(SHORT_TEXTS)


def test_the_labelled_sentences_are_counted_from_their_file() -> None:
    """The record's counts of the labelled sentences recomputed from the labels' file
    (two labels a sentence; kept where both give the same verdict), and the file the one the
    record read."""
    short = read_sentences_record(SHORT)
    labelled = short["sentences"]["labelled"]
    path = ROOT / labelled["file"]
    assert labelled["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len({(row["seed"], row["index"]) for row in rows}) == len(rows)
    for seed, drawn in short["sentences"]["per_seed"].items():
        mine = [row["labels"] for row in rows if row["seed"] == int(seed)]
        kept = [first for first, second in mine
                if first == second and first in ("positive", "negative")]
        assert drawn["labelled"]["drawn"] == len(mine) == labelled["drawn_per_seed"]
        assert drawn["labelled"]["alike"] == sum(first == second for first, second in mine)
        assert drawn["labelled"]["kept"] == len(kept) >= 250  # enough to score on
        assert drawn["labelled"]["positive"] == kept.count("positive")
        assert drawn["labelled"]["kept"] // 3 < drawn["labelled"]["as_review"] <= len(kept)


KEPT = 2  # the sentences a review of the model chapter 11 says its rule keeps


def test_the_sentences_figures_refuse_a_reading_turned_around(tmp_path: Path) -> None:
    short = read_sentences_record(SHORT)
    figures = sentences_figures(KEPT)
    versus = short["differences"]["sentences 2 - taught"]["validation_labelled"]
    assert figures["sentences_2_gain"].startswith(f"{100 * versus['mean']:+.2f} points")
    # each a sum of two accuracies in %, out of 200: seed 0's on whole validation reviews and
    # on sentences labelled as their review, as the page says
    sums = short["tried"]["sums"]
    served = short["runs"]["sentences 2"]["0"]
    assert sums["sentences 2"] == pytest.approx(served["validation"]
                                                + served["validation_sentences"], abs=1e-12)
    assert figures["sentences_tried"] == ", ".join(
        f"{100 * total:.2f} for {per_review(arm)}" for arm, total in sorted(
            sums.items(), key=lambda item: per_review(item[0])))
    assert figures["sentences_tried"] == "159.70 for 2, 159.98 for 4, 160.30 for 8"
    noisy = short["differences"]["sentences 2 - taught"]["validation_sentences"]
    assert figures["sentences_2_gain_noisy"].startswith(f"{100 * noisy['mean']:+.2f} points")
    path = tmp_path / "imdb_sentences.json"
    for change, claim in (("gain", "2 a review kept"), ("served", "served"),
                          ("tried", "tried on seed 0 picked"),
                          ("counting", "counting on labelled sentences")):
        turned = json.loads(json.dumps(short))
        if change == "gain":
            turned["differences"]["sentences 2 - taught"]["validation_labelled"]["low"] = -1e-3
        elif change == "served":
            turned["served"]["arm"] = "taught"
        elif change == "counting":
            for scored in turned["counting"]["nbsvm"].values():
                scored["validation_labelled"] = 0.99
        else:
            turned["tried"]["picked"] = "sentences 2"
        path.write_text(json.dumps(turned))
        with pytest.raises(ValueError, match=claim):
            sentences_figures(KEPT, path)
    for other in {2, 8} - {KEPT}:  # the page's reading with another model kept is refused
        with pytest.raises(ValueError, match="no longer support"):
            sentences_figures(other)
    turned["runs"]["taught"]["0"]["validation_sentences"] = 1.5
    path.write_text(json.dumps(turned))
    with pytest.raises(ValueError, match="from 0 to 1"):
        read_sentences_record(path)


def test_the_blocks_figures_refuse_a_reading_turned_around(blocks: dict,
                                                           tmp_path: Path) -> None:
    figures = blocks_figures()
    best = blocks["best_transformer_test_accuracy"]
    assert figures["chosen_mean"] == f"{100 * blocks['taught']['nbsvm']['mean']:.2f}%"
    assert figures["blocks_seeds"] == str(len(best["per_seed"]))
    rows = taught_table().data.strip().splitlines()
    assert [row.split("|")[1] for row in rows[2:]] == [
        " NBSVM, random slice ", " none ", " NBSVM ", " NBSVM + 2 sentences ",
        " NBSVM + 8 sentences "]
    interval = figures["chosen_interval"].replace("%", "").replace(" to ", "–")
    assert f"{figures['chosen_mean']} ({interval})" in rows[4]
    assert rows[2].split("|")[3:5] == ["  ", "  "]  # the random slice's: not on sentences
    with pytest.raises(ValueError, match="5 seeds for NBSVM on the random slice"):
        taught_table(seeds=4)
    path = tmp_path / "imdb_taught_blocks.json"
    for change, claim in (("validation", "above the untaught runs on validation"),
                          ("holdout", "held out in blocks")):
        turned = json.loads(json.dumps(blocks))
        if change == "holdout":
            turned["holdout"] = "reviews"
        else:
            turned["taught"]["nbsvm"]["against_whole_review"]["validation"]["low"] = -0.001
        path.write_text(json.dumps(turned))
        with pytest.raises(ValueError, match=claim):
            blocks_figures(path)


def test_the_labelled_sentences_are_the_validation_sentences_drawn_from_imdb(
        tmp_path: Path) -> None:
    """With IMDB, each seed's validation sentences drawn now are the texts that were labelled
    (every sha256 matches), and the record's kept sentences are the ones found."""
    from scratchformer.data.imdb import book_reviews
    from scratchformer.data.review_cache import review_tokens
    from scratchformer.train.presets import preset

    labelled = record_script("labelled_sentences")
    kept_labels, read_labels, validation_sentences = (
        labelled.kept_labels, labelled.read_labels, labelled.validation_sentences)

    data = book_reviews()  # under SCRATCHFORMER_REQUIRE_IMDB=1 a missing copy raises
    if data is None:
        pytest.skip("no copy of IMDB can be reached")
    short = read_sentences_record(SHORT)
    train = data["train"]
    tokens = review_tokens(train, tmp_path)
    rows = read_labels(ROOT / short["sentences"]["labelled"]["file"])
    for seed, drawn in short["sentences"]["per_seed"].items():
        sentences, _ = validation_sentences(train.labels, tokens, int(seed), short["holdout"],
                                            preset("cpu")[1].val_size)
        assert len(sentences) == drawn["sentences"]
        kept = kept_labels(rows, int(seed), sentences)  # a changed text raises
        assert (len(kept), sum(kept.values())) == (drawn["labelled"]["kept"],
                                                   drawn["labelled"]["positive"])
