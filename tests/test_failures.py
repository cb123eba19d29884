"""Chapter 10: runs never lose or fake a result; bad data, inputs and checkpoints get messages.

Each test makes its own tiny data; the command line is run as a user runs it, through the
installed `scratchformer` console script in a subprocess.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

from scratchformer import imdb
from scratchformer.imdb import ReviewSplit, encode_review, encode_reviews, load_imdb, review_tokens
from scratchformer.tokenizer import BPETokenizer
from test_bert_imdb import toy_reviews, write_jsonl

# --- data -------------------------------------------------------------------------------------


def test_a_truncated_gzip_file_is_named(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl.gz", toy_reviews(200, seed=1))
    write_jsonl(tmp_path / "test.jsonl", toy_reviews(4, seed=2))
    data = (tmp_path / "train.jsonl.gz").read_bytes()
    (tmp_path / "train.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"train\.jsonl\.gz: truncated or damaged gzip file"):
        load_imdb(tmp_path)


def test_plain_text_named_gz_is_named(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl", toy_reviews(4, seed=1))
    (tmp_path / "train.jsonl").rename(tmp_path / "train.jsonl.gz")
    write_jsonl(tmp_path / "test.jsonl", toy_reviews(4, seed=2))
    with pytest.raises(ValueError, match=r"train\.jsonl\.gz: named \.gz but not gzip-compressed"):
        load_imdb(tmp_path)


def test_text_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl", toy_reviews(4, seed=1))
    (tmp_path / "test.jsonl").write_bytes(b'{"text": "fine", "label": 1}\n{"text": "caf\xe9", "label": 0}\n')
    with pytest.raises(ValueError, match=r"test\.jsonl: not UTF-8 text after line \d"):
        load_imdb(tmp_path)
    with gzip.open(tmp_path / "test.jsonl.gz", "wb") as handle:
        handle.write(b'{"text": "caf\xe9", "label": 0}\n')
    (tmp_path / "test.jsonl").unlink()
    with pytest.raises(ValueError, match=r"test\.jsonl\.gz: not UTF-8 text"):
        load_imdb(tmp_path)
    for split in ("train", "test"):
        for name in ("neg", "pos"):
            (tmp_path / "aclImdb" / split / name).mkdir(parents=True)
            (tmp_path / "aclImdb" / split / name / "0_1.txt").write_text("fine")
    (tmp_path / "aclImdb" / "test" / "pos" / "1_9.txt").write_bytes(b"Latin-1: caf\xe9")
    with pytest.raises(ValueError, match=r"1_9\.txt: not UTF-8 text"):
        load_imdb(tmp_path)


def test_only_the_splits_asked_for_are_read(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl", toy_reviews(6, seed=1))
    assert list(load_imdb(tmp_path, splits=("train",))) == ["train"]
    (tmp_path / "test.jsonl").write_bytes(b"\xff damaged")
    assert len(load_imdb(tmp_path, splits=["train"])["train"]) == 6
    with pytest.raises(ValueError, match="splits must name"):
        load_imdb(tmp_path, splits=("validation",))


def test_an_empty_split_encodes_to_no_rows(tmp_path: Path) -> None:
    ids, labels = encode_reviews(ReviewSplit([], []), 16, cache_dir=tmp_path)
    assert ids.shape == (0, 16) and labels.shape == (0,)
    again, _ = encode_reviews(ReviewSplit([], []), 16, cache_dir=tmp_path)  # now from the cache
    assert again.shape == (0, 16)


def test_a_million_spaces_do_not_crash_the_tokenizer(tmp_path: Path) -> None:
    # tiktoken's regex engine panics (a Rust panic, not an exception) near a million.
    long = "Great film." + " " * 1_100_000 + "Loved it.\n" + "\t" * 200_000 + "<|endoftext|> ok"
    ids, _ = encode_reviews(ReviewSplit([long, "Dull."], [1, 0]), 12, "head", tmp_path)
    expected = BPETokenizer.from_gpt2().encode_ordinary(imdb.clean_review(long))
    assert [t.tolist() for t in review_tokens(ReviewSplit([long, "Dull."], [1, 0]), tmp_path)][0] == expected
    assert ids[0].tolist() == imdb.frame_tokens(expected, 12, "head") == encode_review(long, 12, "head")
    assert ids[1].tolist() == encode_review("Dull.", 12, "head")
