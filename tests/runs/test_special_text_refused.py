"""The appendix "Running it for real", "Failing safely": `--special-text refuse` in every command
that reads reviews or texts (`train-imdb`, with and without `--init`, `train-gpt`, `pretrain`,
`classify`).

A review that writes a special token's text ("[MASK]", "<|endoftext|>") is read as plain text by
default (tests/runs/test_special_text.py). With `--special-text refuse` each command stops with
status 2 and one line naming the split, the file and line (JSON Lines), the file (aclImdb/) or the
review's number (parquet) of the first five such texts and how many each split holds, before
anything is written: a new folder is never made, and a run that `--overwrite` was to replace stays
byte for byte. The commands run through their `main` in this process (`support.runs.cli`).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from scratchformer.cli.commands import build_parser
from scratchformer.data.imdb import load_imdb, load_unlabeled
from scratchformer.data.special_text import (SPECIAL_TEXTS, ReadTexts, SpecialTextRefused,
                                             check_special_text, review_places, special_text_in,
                                             unlabeled_source)
from scratchformer.data.windows import SPECIAL_TOKENS
from scratchformer.models.pretraining import BERT_SPECIAL_TOKENS
from support.runs import cli, refused
from support.toy import toy_texts

TINY = ["--config", "tiny", "--device", "cpu", "--no-progress", "--threads", "1"]
REFUSE = ["--special-text", "refuse"]
# review index -> the special text appended to it, per split (train 2, test 1, unsup 7)
PLANTED = {"train": {3: "[MASK]", 10: "<|endoftext|>"}, "test": {7: "[CLS]"},
           "unsup": {0: "[PAD]", 20: "<|positive|>", 40: "[SEP]", 60: "<|negative|>", 80: "[MASK]",
                     100: "[PAD]", 120: "[CLS]"}}
COUNTS = {"train": 120, "test": 40, "unsup": 200}


def planted_texts(split: str) -> tuple[list[str], list[int]]:
    count, seed = COUNTS[split], {"train": 1, "test": 2, "unsup": 3}[split]
    texts, labels = toy_texts(count, seed)
    return ([f"{text} {PLANTED[split][i]} said the critic" if i in PLANTED[split] else text
             for i, text in enumerate(texts)], labels)


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """JSON Lines files with the texts of `PLANTED`, and two blank lines after the second line of
    each: review i (from 0) stands on line i + 1, or i + 3 from the third review on."""
    folder = tmp_path_factory.mktemp("special-jsonl")
    for split in COUNTS:
        texts, labels = planted_texts(split)
        rows = [{"text": t} if split == "unsup" else {"text": t, "label": y} for t, y in zip(texts, labels)]
        lines = [json.dumps(row) + "\n" for row in rows]
        (folder / f"{split}.jsonl").write_text("".join([*lines[:2], "\n", "  \n", *lines[2:]]))
    return folder


def line_of(index: int) -> int:
    return index + 1 if index < 2 else index + 3


@pytest.fixture(scope="module")
def acl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same reviews in the official aclImdb/ layout, one file a review, named `{i}_{n}.txt`."""
    folder = tmp_path_factory.mktemp("special-acl") / "aclImdb"
    for split in COUNTS:
        texts, labels = planted_texts(split)
        for i, (text, label) in enumerate(zip(texts, labels)):
            kind = "unsup" if split == "unsup" else ("neg", "pos")[label]
            place = folder / ("train" if split == "unsup" else split) / kind
            place.mkdir(parents=True, exist_ok=True)
            (place / f"{i:04d}_{7 if label else 2}.txt").write_text(text, encoding="utf-8")
    return folder.parent


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, toy_dir: Path) -> dict[str, Path]:
    """A pretraining snapshot and a classifier, made on the toy reviews that write no special text."""
    root = tmp_path_factory.mktemp("special-refused-runs")
    made = {"pretrained": root / "pretrained", "imdb": root / "imdb"}
    result = cli("pretrain", "--data", str(toy_dir), "--out", str(made["pretrained"]), *TINY,
                 "--val-documents", "20", "--tokenizer-documents", "100", *REFUSE)
    assert result.returncode == 0, result.stderr[-3000:]
    made["snapshot"] = sorted(made["pretrained"].glob("snapshot-*.pt"))[-1]
    result = cli("train-imdb", "--data", str(toy_dir), "--out", str(made["imdb"]), *TINY, "--epochs", "1",
                 "--no-test", *REFUSE)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((made["imdb"] / "results.json").read_text())["data"]["special_text"] == "refuse"
    return made


def command(name: str, data: Path, out: Path, runs: dict[str, Path], cache: Path) -> list[str]:
    """The command line of `name` reading `data` into `out`."""
    start = {"train-imdb": ["train-imdb", "--epochs", "1"],
             "train-imdb --init": ["train-imdb", "--epochs", "1", "--init", str(runs["snapshot"])],
             "train-gpt": ["train-gpt", "--val-documents", "20", "--tokenizer-documents", "100",
                           "--heldout", "10", "--cache", str(cache)],
             "pretrain": ["pretrain", "--val-documents", "20", "--tokenizer-documents", "100"]}[name]
    return [*start, "--data", str(data), "--out", str(out), *TINY]


# which splits each command checks, and the counts its refusal gives
SPLITS = {"train-imdb": ("train", "test"), "train-imdb --init": ("train", "test"),
          "train-gpt": ("train", "test", "unsup"), "pretrain": ("train", "unsup")}


def expected_places(jsonl: Path, splits: tuple[str, ...]) -> list[str]:
    """'SPLIT split, FILE, line N writes TOKEN' of the first five planted texts, in reading order."""
    named = [f"{split} split, {jsonl / f'{split}.jsonl'}, line {line_of(i)} writes {special!r}"
             for split in splits for i, special in sorted(PLANTED[split].items())]
    return named[:5]


@pytest.mark.parametrize("name", list(SPLITS))
def test_refuse_names_split_file_line_and_counts_and_makes_no_folder(
        jsonl: Path, runs: dict[str, Path], tmp_path: Path, name: str) -> None:
    out = tmp_path / "new"
    result = cli(*command(name, jsonl, out, runs, tmp_path / "cache"), *REFUSE)
    splits = SPLITS[name]
    total = sum(len(PLANTED[s]) for s in splits)
    counts = ", ".join(f"{len(PLANTED[s])} of {COUNTS[s]} {s}" for s in splits)
    refused(result, f"--special-text refuse: {total} reviews write a special token's text ({counts})",
            *expected_places(jsonl, splits), "--special-text text (the default)")
    assert result.stderr.count("\n") == 1, result.stderr
    assert ("; the first 5" in result.stderr) == (total > 5)
    assert not out.exists(), "a refused run leaves no folder"


def test_train_imdb_without_the_test_split_checks_only_train(jsonl: Path, runs: dict[str, Path],
                                                             tmp_path: Path) -> None:
    result = cli(*command("train-imdb", jsonl, tmp_path / "new", runs, tmp_path), "--no-test", *REFUSE)
    refused(result, "2 reviews write a special token's text (2 of 120 train)")
    assert "test split" not in result.stderr


def test_train_gpt_without_unlabelled_reviews_checks_train_and_test(jsonl: Path, runs: dict[str, Path],
                                                                    tmp_path: Path) -> None:
    result = cli(*command("train-gpt", jsonl, tmp_path / "new", runs, tmp_path / "cache"), "--no-unlabeled",
                 *REFUSE)
    refused(result, "3 reviews write a special token's text (2 of 120 train, 1 of 40 test): ",
            *expected_places(jsonl, ("train", "test")))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() if path.is_file() else b"<folder>"
            for path in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("name", list(SPLITS))
def test_a_refused_overwrite_leaves_the_old_run_as_it_was(
        jsonl: Path, runs: dict[str, Path], tmp_path: Path, name: str) -> None:
    out = tmp_path / "old"
    out.mkdir()
    for file, text in {"best.pt": "old weights", "last.pt": "old state", "results.json": "{}",
                       "tokenizer.json": "{}", "fit.npy": "old stream", "notes.txt": "mine"}.items():
        (out / file).write_text(text)
    before = snapshot(out)
    result = cli(*command(name, jsonl, out, runs, tmp_path / "cache"), "--overwrite", *REFUSE)
    refused(result, "write a special token's text")
    assert snapshot(out) == before


@pytest.mark.parametrize("name", ["train-imdb", "train-imdb --init", "train-gpt", "pretrain"])
def test_the_default_and_text_read_special_text_as_text(jsonl: Path, runs: dict[str, Path], tmp_path: Path,
                                                        name: str) -> None:
    parsed = build_parser().parse_args(command(name, jsonl, tmp_path / "x", runs, tmp_path))
    assert parsed.special_text == "text"
    out = tmp_path / "run"
    result = cli(*command(name, jsonl, out, runs, tmp_path / "cache"), "--special-text", "text")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((out / "results.json").read_text())["data"]["special_text"] == "text"


def test_classify_refuses_by_argument_and_stdin_line(runs: dict[str, Path]) -> None:
    stdin = "a fine film\nthe end <|endoftext|> of it\nawful\n"
    result = cli("classify", "--checkpoint", str(runs["imdb"]), *REFUSE, "a [MASK] film", "-", "good",
                 stdin=stdin)
    refused(result, "--special-text refuse: 2 texts write a special token's text (2 of 5 texts): "
            "argument 1 writes '[MASK]'; stdin line 2 writes '<|endoftext|>'.")
    assert result.stdout == ""
    fine = cli("classify", "--checkpoint", str(runs["imdb"]), *REFUSE, "--json", "a fine film", "-",
               stdin="awful\n")
    assert fine.returncode == 0, fine.stderr
    assert [row["text"] for row in json.loads(fine.stdout)] == ["a fine film", "awful"]
    default = cli("classify", "--checkpoint", str(runs["imdb"]), "--json", "a [MASK] film")
    assert default.returncode == 0 and json.loads(default.stdout)[0]["text"] == "a [MASK] film"


def test_the_aclimdb_layout_is_named_by_file(acl: Path, runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "new"
    result = cli(*command("train-gpt", acl, out, runs, tmp_path / "cache"), *REFUSE)
    files = acl / "aclImdb"
    refused(result, "10 reviews write a special token's text (2 of 120 train, 1 of 40 test, 7 of 200 unsup); "
            "the first 5: ",
            f"train split, {files / 'train' / 'neg' / '0010_2.txt'} writes '<|endoftext|>'; "
            f"train split, {files / 'train' / 'pos' / '0003_7.txt'} writes '[MASK]'",
            f"test split, {files / 'test' / 'pos' / '0007_7.txt'} writes '[CLS]'",
            f"unsup split, {files / 'train' / 'unsup' / '0000_2.txt'} writes '[PAD]'")
    assert not out.exists()


def test_the_aclimdb_train_split_is_read_negative_first(acl: Path) -> None:
    """`review_places` lists the files as `read_aclimdb` reads them: neg/, then pos/, each sorted."""
    train = load_imdb(acl, ["train"])["train"]
    found = special_text_in(train.texts)
    places = review_places(train.source, [index for index, _ in found])
    assert [Path(place).name for place in places] == ["0010_2.txt", "0003_7.txt"]
    for (index, special), place in zip(found, places):
        assert Path(place).read_text(encoding="utf-8") == train.texts[index] and special in train.texts[index]
    unlabeled = load_unlabeled(acl)
    assert unlabeled_source(acl) == str(acl / "aclImdb" / "train" / "unsup")
    assert review_places(unlabeled_source(acl), [20]) == [str(acl / "aclImdb" / "train" / "unsup" / "0020_2.txt")]
    assert PLANTED["unsup"][20] in unlabeled[20]


def test_a_parquet_split_is_named_by_review_number(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    texts, labels = planted_texts("test")
    pq.write_table(pyarrow.table({"text": texts, "label": labels}), tmp_path / "test.parquet")
    split = load_imdb(tmp_path, ["test"])["test"]
    with pytest.raises(SpecialTextRefused) as refusal:
        check_special_text("refuse", [ReadTexts("test", split.texts, split.source)])
    assert str(refusal.value).startswith(
        "--special-text refuse: 1 review writes a special token's text (1 of 40 test): "
        f"test split, {tmp_path / 'test.parquet'}, review 8 writes '[CLS]'. ")


def test_a_gzipped_unlabelled_file_is_named_by_line(tmp_path: Path) -> None:
    lines = [json.dumps({"text": "fine"}), "", json.dumps({"text": "a [SEP] b"}), json.dumps({"text": "c"})]
    with gzip.open(tmp_path / "unsup.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    source = unlabeled_source(tmp_path)
    assert source == str(tmp_path / "unsup.jsonl.gz")
    texts = load_unlabeled(tmp_path)
    assert special_text_in(texts) == [(1, "[SEP]")]
    assert review_places(source, [1]) == [f"{source}, line 3"]


def test_the_check_knows_every_special_token_of_the_books_tokenizers() -> None:
    assert set(BERT_SPECIAL_TOKENS) | set(SPECIAL_TOKENS) == set(SPECIAL_TEXTS)
    assert special_text_in(["[mask] and [ MASK ] and <|endoftext| > are letters", "a <|negative|>[PAD]"]) == [
        (1, "<|negative|>")]
    check_special_text("text", [ReadTexts("train", ["[MASK]"], "x")])  # the default refuses nothing
    with pytest.raises(ValueError, match="choose one of"):
        check_special_text("drop", [ReadTexts("train", ["[MASK]"], "x")])


@pytest.mark.parametrize("name", ["train-imdb", "train-gpt", "pretrain", "classify"])
def test_every_command_documents_the_same_option(name: str) -> None:
    result = cli(name, "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "--special-text {text,refuse}" in text and "'text' reads them as plain text (default)" in text
    assert "'refuse' stops before anything is written" in text
