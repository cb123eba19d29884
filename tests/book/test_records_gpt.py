"""Chapter 12's recorded results, read by `scratchbook.records.gpt` outside the book: the
tables carry the numbers the prose quotes, and a record that contradicts the prose is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import ROOT
from scratchbook import pages, stand_in
from scratchbook.records import gpt

RESULTS = ROOT / "book" / "results"


def test_the_tables_carry_the_numbers_the_prose_quotes(capsys: pytest.CaptureFixture) -> None:
    heldout = gpt.heldout_table(RESULTS).data
    assert "| Kneser-Ney bigram | 1.793 |" in heldout and "| GPT | 1.771 |" in heldout
    orders = gpt.ngram_orders_table(RESULTS).data
    assert "| GPT, the full run |" in orders and "| Kneser-Ney 4-gram |" in orders
    kv = gpt.kv_cache_timing(RESULTS).data
    assert "12.9" in kv
    first = gpt.first_step_table(RESULTS, "The acting in this movie was").data
    assert first.splitlines()[0] == ("| next token | softmax | greedy | temperature 0.7 | "
                                     "top-k, k = 5 | top-p, p = 0.9 |")
    printed = capsys.readouterr().out
    assert "python tools/records/ch12_ngram_orders.py" in printed


def test_a_page_of_the_wrong_prompt_is_refused() -> None:
    with pytest.raises(AssertionError, match="continue this page's prompt"):
        gpt.first_step_table(RESULTS, "A different prompt")


def test_a_run_whose_validation_loss_rose_at_the_end_is_refused(tmp_path: Path) -> None:
    record = json.loads((RESULTS / "gpt_cpu.json").read_text())
    record["history"][-1]["val_loss"] = record["history"][-2]["val_loss"] + 0.1
    (tmp_path / "gpt_cpu.json").write_text(json.dumps(record))
    with pytest.raises(AssertionError):
        gpt.full_cpu_run(tmp_path)  # the prose says it was still falling


def test_a_table_cell_is_never_read_as_markdown() -> None:
    assert pages.table_cell("a *b* | <br />") == r"a \*b\* \| \<br /\>"
    assert pages.table_cell(pages.Code("<|endoftext|>\n")) == "`<\\|endoftext\\|>↵`"


def test_the_stand_in_splits_repeat_texts_across_splits_as_imdb_does() -> None:
    train, unlabeled, test = stand_in.stand_in_splits()
    assert (len(train), len(unlabeled), len(test)) == (2_000, 3_050, 1_020)
    assert set(unlabeled) & set(train.texts) and set(unlabeled) & set(test.texts)
    assert stand_in.stand_in_splits()[1] == unlabeled  # the same texts every time


SHORT_RUN = {"unigram (add-1)": 2.9, "add-k bigram (k = 0.1)": 2.5, "Kneser-Ney bigram": 2.4,
             "GPT": 2.6}  # a short run's scores, as `heldout_scores` returns them


def test_the_chapters_table_sets_the_short_run_beside_the_full_run_and_the_longer_counts(
        ) -> None:
    rows = gpt.bits_per_byte_table(RESULTS, SHORT_RUN, 128).data.splitlines()
    assert rows[0] == "| model | predicts from | short run | full run |"
    assert "| Kneser-Ney bigram | 1 token | 2.400 | 1.793 |" in rows
    assert "| Kneser-Ney 4-gram | 3 tokens |  | 1.575 |" in rows
    assert "| GPT | 128 / 512 tokens | 2.600 | 1.771 |" in rows


def copy_records(tmp_path: Path, *names: str) -> Path:
    """The named records of book/results/ (files or folders) copied under `tmp_path`."""
    import shutil

    for name in names:
        source = RESULTS / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    return tmp_path


def test_a_shorter_run_that_beat_its_own_windows_bigram_is_refused(tmp_path: Path) -> None:
    results = copy_records(tmp_path, "gpt_cpu.json", "gpt_cpu_3000_steps.json")
    record = json.loads((results / "gpt_cpu_3000_steps.json").read_text())
    record["heldout"]["bits_per_byte"]["GPT"] = 1.7  # better than the bigram of its windows
    (results / "gpt_cpu_3000_steps.json").write_text(json.dumps(record))
    with pytest.raises(AssertionError, match="lost to its windows"):
        gpt.shorter_run_table(results)


def test_the_shorter_run_is_set_beside_the_full_run_with_the_bigram_of_its_windows() -> None:
    rows = gpt.shorter_run_table(RESULTS).data.splitlines()[2:]
    assert rows == ["| 3,000 | 3,078,000 | 5.58 | 1.995 | 1.855 |",
                    "| 13,000 | 13,338,000 | 4.94 | 1.771 | 1.805 |"]


def test_reviews_judged_by_another_classifier_are_refused(tmp_path: Path) -> None:
    results = copy_records(tmp_path, "gpt_cpu_reviews", "imdb_cpu_predictions.json",
                           "gpt_cpu_sentiment.json", "gpt_cpu.json", "imdb_cpu.json")
    path = results / "gpt_cpu_reviews" / "finetuned_positive.json"
    record = json.loads(path.read_text())
    record["judge_sha256"] = "0" * 64  # not the checkpoint of chapter 11's recorded run
    path.write_text(json.dumps(record))
    with pytest.raises(AssertionError, match="chapter 11's classifier"):
        gpt.reviews_on_demand(results)


def test_the_hint_of_the_judged_effect_counts_the_recorded_pairs(monkeypatch) -> None:
    """The hint once said "200 pairs" in words; it counts the record's pairs now."""
    glued = {}
    monkeypatch.setattr(gpt, "glue_md", lambda name, text: glued.__setitem__(name, text))
    gpt.reviews_on_demand(RESULTS)
    pairs = len(json.loads((RESULTS / "gpt_cpu_reviews" / "pretrained_positive.json")
                           .read_text())["samples"])
    assert glued["reviews_per_request"] == f"{pairs:,}"
    assert glued["judged_hint"] == (f"The larger, +8.0 points, is a hint that {pairs} pairs "
                                    "cannot confirm.")
    assert glued["judged_interval_finetuned"].count(" to ") == 1
    assert " 到 " in glued["judged_interval_finetuned_zh"]


def test_recorded_samples_of_different_seeds_are_refused(tmp_path: Path) -> None:
    results = copy_records(tmp_path, "gpt_cpu_sampling", "gpt_cpu.json")
    path = results / "gpt_cpu_sampling" / "top_k.json"
    record = json.loads(path.read_text())
    record["seed"] = 1
    path.write_text(json.dumps(record))
    with pytest.raises(AssertionError, match="one seed"):
        gpt.sampling_setup(results)


def test_without_imdb_a_language_model_page_reads_the_labelled_stand_in(monkeypatch) -> None:
    monkeypatch.setattr(stand_in, "book_reviews", lambda: None)
    train, unlabeled, test, kind = stand_in.language_model_splits()
    assert (len(train), len(unlabeled), len(test)) == (2_000, 3_050, 1_020)
    assert "STAND-IN" in kind and kind != stand_in.REAL_DATA
