"""Appendix "Running it for real", "Failing safely": the refusals a hostile trial of the commands
asked for, one table.

Each case is a command line (or a damaged file, then a command line) that once ended in a
traceback, a wrong result or a message without the file's name; each must now exit with status
2 and one line naming the problem, having written nothing. Runs of chapters 11-13's commands
(`train-imdb`, `train-gpt --no-labels`, `pretrain`) on toy data are made once for the module.
"""

from __future__ import annotations

import json
import math
import pickle
import shutil
import subprocess
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from scratchformer.cli.commands import main
from scratchformer.nn.attention import MultiHeadAttention, SelfAttention
from scratchformer.nn.block import FeedForward
from scratchformer.nn.positional import LearnedPositionalEmbedding
from scratchformer.runs.checkpoint import read_checkpoint
from support.runs import SCRIPT

TINY = ["--config", "tiny", "--device", "cpu", "--no-progress", "--threads", "1"]


def imdb(data: Path, out: Path, *more: str) -> list[str]:
    return ["train-imdb", "--data", str(data), "--out", str(out), *TINY, "--epochs", "2", "--no-test", *more]


def gpt(data: Path, out: Path, cache: Path, *more: str) -> list[str]:
    return ["train-gpt", "--data", str(data), "--out", str(out), *TINY, "--val-documents", "20",
            "--heldout", "10", "--cache", str(cache), "--no-labels", *more]


def pretrain(data: Path, out: Path, *more: str) -> list[str]:
    return ["pretrain", "--data", str(data), "--out", str(out), *TINY, "--val-documents", "20", *more]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, toy_dir: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("refusals")
    made = {"data": toy_dir, "cache": root / "cache", "imdb": root / "imdb", "gpt": root / "gpt",
            "pretrain": root / "pretrain", "one_class": root / "one-class"}
    made["one_class"].mkdir()  # the first 40 toy reviews of one label, as a file sorted by label
    reviews = [json.loads(line) for line in (toy_dir / "train.jsonl").read_text().splitlines()]
    (made["one_class"] / "train.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in reviews if r["label"] == 0))
    shutil.copy(toy_dir / "test.jsonl", made["one_class"] / "test.jsonl")
    assert main(imdb(toy_dir, made["imdb"])) == 0
    assert main(gpt(toy_dir, made["gpt"], made["cache"], "--tokenizer-documents", "100")) == 0
    assert main(pretrain(toy_dir, made["pretrain"], "--tokenizer-documents", "100")) == 0
    return made


def edit_last(run: Path, edit: Callable[[dict], None]) -> Path:
    """A copy of `run` whose last.pt went through `edit` (a damaged file)."""
    copy = run.parent / f"{run.name}-damaged-{edit.__name__}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(run, copy)
    payload = torch.load(copy / "last.pt", weights_only=True)
    edit(payload["training"])
    torch.save(payload, copy / "last.pt")
    return copy


def nan_moment(state: dict) -> None:
    next(iter(state["optimizer"]["state"].values()))["exp_avg"].fill_(math.nan)


def short_rng(state: dict) -> None:
    state["rng"] = state["rng"][:100]


def negative_epoch(state: dict) -> None:
    state["epoch"] = -1


def huge_epoch(state: dict) -> None:
    state["epoch"] = 10**9


def huge_step(state: dict) -> None:
    state["step"] = 10**9


def empty_moments(state: dict) -> None:
    state["optimizer"]["state"] = {}


def pickled_stream(run: Path) -> Path:
    copy = run.parent / f"{run.name}-pickled-stream"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(run, copy)
    (copy / "fit.npy").write_bytes(pickle.dumps({"not": "a stream"}))
    return copy


# (what the case is, the arguments given the runs and a fresh folder, the phrase the message holds)
CASES = [
    ("seed 2**63", lambda r, new: imdb(r["data"], new, "--set", "seed=9223372036854775807"),
     "seed must be in [0, 2**40), got 9223372036854775807"),
    ("seed -1", lambda r, new: imdb(r["data"], new, "--set", "seed=-1"), "seed must be in [0, 2**40), got -1"),
    ("seed 2**40", lambda r, new: imdb(r["data"], new, "--set", "seed=1099511627776"),
     "seed must be in [0, 2**40)"),
    ("max_len 1e8", lambda r, new: imdb(r["data"], new, "--set", "max_len=100000000"),
     "GiB are free: lower max_len"),
    ("gpt context 1e8", lambda r, new: gpt(r["data"], new, r["cache"], "--set", "context_length=100000000"),
     "GiB are free: lower max_len (a GPT's context_length)"),
    ("max_steps=True", lambda r, new: imdb(r["data"], new, "--set", "max_steps=True"),
     "--set 'max_steps=True': 'True' is not a valid number"),
    ("pretrain vocab 257", lambda r, new: pretrain(r["data"], new, "--set", "vocab_size=257"),
     "vocab_size must be an integer of at least 260"),
    ("generate --json DIR", lambda r, new: ["generate", "--checkpoint", str(r["gpt"]), "--json", str(r["gpt"])],
     "is a folder; name a file"),
    ("generate --json in a missing folder", lambda r, new: ["generate", "--checkpoint", str(r["gpt"]), "--json",
                                                             str(new / "below" / "samples.json")], "cannot write into"),
    ("generate --sentiment, no labels", lambda r, new: ["generate", "--checkpoint", str(r["gpt"]), "--sentiment",
                                                         "positive"], "was trained with --no-labels"),
    ("classify non-UTF-8 argument", lambda r, new: ["classify", "--checkpoint", str(r["imdb"]),
                                                     b"caf\xe9".decode("utf-8", "surrogateescape")],
     "argument 1 is not UTF-8 text"),
    ("NaN in the optimizer state", lambda r, new: imdb(r["data"], edit_last(r["imdb"], nan_moment), "--resume"),
     "last.pt: the optimizer state holds NaN or infinity"),
    ("a damaged random state", lambda r, new: gpt(r["data"], edit_last(r["gpt"], short_rng), r["cache"], "--resume"),
     "last.pt: its optimizer or random state does not fit this run"),
    ("a negative epoch", lambda r, new: imdb(r["data"], edit_last(r["imdb"], negative_epoch), "--resume"),
     "last.pt: the training state's epoch is -1, not a count from 0 to 2"),
    ("a huge epoch", lambda r, new: imdb(r["data"], edit_last(r["imdb"], huge_epoch), "--resume"),
     "the training state's epoch is 1000000000"),
    ("a huge step", lambda r, new: pretrain(r["data"], edit_last(r["pretrain"], huge_step), "--resume"),
     "the training state's step is 1000000000"),
    ("an empty optimizer state", lambda r, new: gpt(r["data"], edit_last(r["gpt"], empty_moments), r["cache"],
                                                     "--resume"), "last.pt: the optimizer state is empty"),
    ("a pickled stream", lambda r, new: pretrain(r["data"], pickled_stream(r["pretrain"]), "--resume"),
     "fit.npy is not a token stream this command saved"),
    ("one-class training reviews", lambda r, new: imdb(r["one_class"], new),
     "train.jsonl) holds 60 negative and 0 positive reviews: a classifier learns nothing from one class"),
    ("gpt batch_size 100000", lambda r, new: gpt(r["data"], new, r["cache"], "--set", "batch_size=100000"),
     "make no batch of 100000 for each of 1 process(es): lower batch_size"),
    ("pretrain batch_size 100000", lambda r, new: pretrain(r["data"], new, "--set", "batch_size=100000"),
     "make no batch of 100000 for each of 1 process(es): lower batch_size"),
    ("resume with another dropout", lambda r, new: imdb(r["data"], r["imdb"], "--resume", "--set", "dropout=0.2"),
     "dropout 0.0 then, 0.2 now"),
    ("resume with another seed", lambda r, new: imdb(r["data"], r["imdb"], "--resume", "--set", "seed=5"),
     "seed 0 then, 5 now"),
    ("gpt resume with another dropout", lambda r, new: gpt(r["data"], r["gpt"], r["cache"], "--resume", "--set",
                                                          "dropout=0.2"), "dropout 0.0 then, 0.2 now"),
    ("pretrain resume with another seed", lambda r, new: pretrain(r["data"], r["pretrain"], "--resume", "--set",
                                                                  "seed=5"), "seed 0 then, 5 now"),
]


@pytest.mark.parametrize(("name", "arguments", "phrase"), CASES, ids=[case[0] for case in CASES])
def test_each_case_is_refused_in_one_line_having_written_nothing(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture, name: str,
        arguments: Callable, phrase: str) -> None:
    new = tmp_path / "new"
    argv = arguments(runs, new)
    capsys.readouterr()
    assert main(argv) == 2, name
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and phrase in said, said
    assert not any(derived in said for derived in ("config '", "documents '", "training reviews")), \
        "the setting is named, not a hash or fingerprint it changes"
    assert not new.exists(), "a refused run leaves no folder"


@pytest.mark.parametrize("command", ["train-gpt", "pretrain"])
def test_a_corrected_rerun_after_a_refused_batch_size_starts_afresh(
        runs: dict[str, Path], tmp_path: Path, command: str) -> None:
    out = tmp_path / "run"
    arguments = (gpt(runs["data"], out, runs["cache"], "--tokenizer-documents", "100") if command == "train-gpt"
                 else pretrain(runs["data"], out, "--tokenizer-documents", "100"))
    assert main([*arguments, "--set", "batch_size=100000"]) == 2
    assert not out.exists(), "no tokenizer, stream or snapshot was written"
    assert main(arguments) == 0, "the corrected command is not refused as 'already holds a run'"


def test_tokenizer_documents_on_resume_says_it_is_not_used(runs: dict[str, Path],
                                                           capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    assert main(pretrain(runs["data"], runs["pretrain"], "--resume", "--tokenizer-documents", "50")) == 0
    assert "note: --tokenizer-documents 50 is not used: a resumed run keeps the tokenizer" in capsys.readouterr().out


@pytest.mark.parametrize("build", [lambda: SelfAttention(d_in=2.5, d_out=4),
                                   lambda: MultiHeadAttention(4, 4.0, num_heads=2),
                                   lambda: FeedForward(d_model=8, d_hidden=16.5),
                                   lambda: LearnedPositionalEmbedding(max_len="8", d_model=4)])
def test_sizes_that_are_not_integers_are_refused_by_name(build: Callable) -> None:
    with pytest.raises(ValueError, match="must be positive integers, got"):
        build()


def test_a_plain_pickle_is_refused_without_a_warning(tmp_path: Path) -> None:
    (tmp_path / "raw.pt").write_bytes(pickle.dumps({"format": "x"}, protocol=4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="raw.pt is not a readable checkpoint"):
            read_checkpoint(tmp_path / "raw.pt")


def test_a_reader_that_leaves_ends_the_command_quietly(runs: dict[str, Path]) -> None:
    lines = "".join(f"a fine film, take {n}\n" for n in range(3_000))  # 120 kB out: past a pipe's buffer
    command = f"{SCRIPT} classify --checkpoint {runs['imdb']} - | head -1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], input=lines, capture_output=True,
                          text=True, timeout=300)
    assert done.stdout.count("\n") == 1 and done.stderr == "" and done.returncode == 141, done

