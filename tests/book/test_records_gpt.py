"""Chapter 12's recorded results, read by `scratchbook.records.gpt` outside the book: the
tables carry the numbers the prose quotes, and a record that contradicts the prose is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT
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
