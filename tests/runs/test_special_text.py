"""Chapters 12 and 13 and the appendix "Running it for real": a review that writes a special
token's text ("[PAD]", "[MASK]", "<|endoftext|>") is text, as GPT-2's framing treats it.

A user's reviews hold those strings in the training, unlabelled and test splits; `pretrain`,
`train-imdb --init` from its snapshot and `train-gpt` run to their results, the token streams
hold the strings' letters and never the special ids, and `classify` with the fine-tuned model
labels such a text like any other. The commands run through their `main` in this process
(`support.runs.cli`).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from scratchformer.data.windows import Document, encode_document, special_ids
from scratchformer.models.pretraining import bert_special_ids
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.tokenize.gpt2_files import END_OF_TEXT
from scratchformer.train.pretrain import encode_labelled
from support.runs import cli

from support.toy import toy_texts

TINY = ["--config", "tiny", "--device", "cpu", "--no-progress", "--threads", "1"]
WRITTEN = ["[PAD]", "[MASK]", "[CLS]", "[SEP]", "<|endoftext|>", "<|positive|>"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy reviews, every fifth of each split writing one of the special tokens' texts."""
    folder = tmp_path_factory.mktemp("special-text")
    for split, (count, seed) in {"train": (120, 1), "test": (40, 2), "unsup": (200, 3)}.items():
        texts, labels = toy_texts(count, seed)
        texts = [f"{text} {WRITTEN[i // 5 % len(WRITTEN)]} said the critic" if i % 5 == 0 else text
                 for i, text in enumerate(texts)]
        rows = [{"text": t} if split == "unsup" else {"text": t, "label": y} for t, y in zip(texts, labels)]
        with gzip.open(folder / f"{split}.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("special-text-runs")
    made = {"pretrained": root / "pretrained", "tuned": root / "tuned", "gpt": root / "gpt"}
    for name, arguments in {
        "pretrained": ["pretrain", "--data", str(data), "--out", str(made["pretrained"]), *TINY,
                       "--val-documents", "20", "--tokenizer-documents", "100"],
        "gpt": ["train-gpt", "--data", str(data), "--out", str(made["gpt"]), *TINY, "--val-documents", "20",
                "--tokenizer-documents", "100", "--heldout", "10", "--cache", str(root / "cache")],
    }.items():
        result = cli(*arguments)
        assert result.returncode == 0, (name, result.stderr[-3000:])
    snapshot = sorted(made["pretrained"].glob("snapshot-*.pt"))[-1]
    tuned = cli("train-imdb", "--data", str(data), "--out", str(made["tuned"]), *TINY, "--init", str(snapshot),
                "--epochs", "1")
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    return made


def test_pretraining_reads_special_token_text_as_letters(runs: dict[str, Path]) -> None:
    tokenizer = BPETokenizer.load(runs["pretrained"] / "tokenizer.json")
    special, mask = bert_special_ids(tokenizer)
    for name in ("fit.npy", "val.npy"):
        stream = np.load(runs["pretrained"] / name)
        assert not np.isin(stream, [special.pad, special.cls, mask]).any(), name  # [SEP] ends each review
    ids = encode_labelled(tokenizer, ["a [MASK] film [PAD]"], 64, "head")[0].tolist()
    assert mask not in ids and ids[1:ids.index(special.sep)] == tokenizer.encode_ordinary("a [MASK] film [PAD]")
    assert json.loads((runs["tuned"] / "results.json").read_text())["test"]["accuracy"] is not None


def test_a_gpt_reads_special_token_text_as_letters(runs: dict[str, Path]) -> None:
    tokenizer = BPETokenizer.load(runs["gpt"] / "tokenizer.json")
    eot = special_ids(tokenizer)[END_OF_TEXT]
    text = "the end <|endoftext|> of <|positive|> it"
    assert encode_document(tokenizer, Document(text)) == [eot, *tokenizer.encode_ordinary(text)]
    assert encode_document(tokenizer, Document(text)).count(eot) == 1
    assert json.loads((runs["gpt"] / "results.json").read_text())["heldout"]["bits_per_byte"]["GPT"] > 0


def test_classify_labels_special_token_text_with_a_fine_tuned_model(runs: dict[str, Path]) -> None:
    texts = ["a [MASK] film", "[PAD] [CLS] fine <|endoftext|>", "a film"]
    result = cli("classify", "--checkpoint", str(runs["tuned"]), "--json", *texts)
    assert result.returncode == 0, result.stderr
    assert [row["text"] for row in json.loads(result.stdout)] == texts


def test_the_runs_record_that_they_read_special_text_as_text(runs: dict[str, Path]) -> None:
    """No `--special-text` is `--special-text text`, and `results.json` says which was used."""
    for name, folder in runs.items():
        assert json.loads((folder / "results.json").read_text())["data"]["special_text"] == "text", name
