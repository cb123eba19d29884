"""Appendix "Running it for real", "The command line" and "Failing safely": every way a user
spells `--data` trains to the end, and no error after a run has finished training throws it away.

`--data .`, `./`, a relative name, an absolute path with a trailing slash: each trainer
(`train-imdb`, chapter 11; `train-gpt`, chapter 12; `pretrain`, chapter 13) runs to its
`results.json`, whose command shows the data as `$IMDB_DIR`. An empty `--data` is refused before
anything runs. The commands run through their `main` in this process (`support.runs.cli`), in the
toy data's folder where the spelling is relative to it.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

import scratchformer.cli.session as session
from scratchformer.runs.folders import SET_ASIDE, reader_command
from support.runs import cli, refused

TINY = ["--config", "tiny", "--device", "cpu", "--no-progress", "--threads", "1"]


def arguments(trainer: str, data: str, out: Path, cache: Path) -> list[str]:
    return {
        "train-imdb": ["train-imdb", "--data", data, "--out", str(out), *TINY, "--epochs", "1",
                       "--cache", str(cache)],
        "train-gpt": ["train-gpt", "--data", data, "--out", str(out), *TINY, "--val-documents", "20",
                      "--tokenizer-documents", "100", "--heldout", "10", "--cache", str(cache)],
        "pretrain": ["pretrain", "--data", data, "--out", str(out), *TINY, "--val-documents", "20",
                     "--tokenizer-documents", "100"],
    }[trainer]


@pytest.mark.parametrize(("data", "shown"), [
    (".", "$IMDB_DIR"), ("./", "$IMDB_DIR"), ("..", "$IMDB_DIR"), ("/", "$IMDB_DIR"), ("imdb", "$IMDB_DIR"),
    ("/data/imdb/", "$IMDB_DIR"), ("./train.jsonl.gz", "$IMDB_DIR/train.jsonl.gz"),
    ("/data/imdb/train.jsonl", "$IMDB_DIR/train.jsonl"), ("/data/.hidden", "$IMDB_DIR"),
])
def test_every_spelling_of_a_data_folder_is_shown_as_imdb_dir(data: str, shown: str) -> None:
    assert reader_command(["scratchformer", "train-imdb", "--data", data]) == f"scratchformer train-imdb --data {shown}"
    assert reader_command(["scratchformer", "train-imdb", f"--data={data}"]) == f"scratchformer train-imdb --data={shown}"


@pytest.mark.parametrize("out", [".", "./", "/", "..", "/srv/x/", "../runs/"])
def test_every_spelling_of_a_run_folder_is_shown_without_a_crash(out: str) -> None:
    shown = reader_command(["scratchformer", "train-imdb", "--out", out])
    assert shown.startswith("scratchformer train-imdb --out ") and not shown.endswith("--out ")


@pytest.mark.parametrize(("trainer", "data", "where"), [
    ("train-imdb", ".", "inside"), ("train-imdb", "./", "inside"), ("train-imdb", "NAME", "beside"),
    ("train-imdb", "ABSOLUTE/", "anywhere"), ("train-gpt", ".", "inside"),
    pytest.param("train-gpt", "./", "inside", marks=pytest.mark.slow), ("pretrain", ".", "inside"),
    pytest.param("pretrain", "ABSOLUTE/", "anywhere", marks=pytest.mark.slow),
])
def test_each_trainer_runs_to_its_results_whatever_the_spelling_of_data(
        tmp_path: Path, toy_dir: Path, trainer: str, data: str, where: str) -> None:
    data = data.replace("NAME", toy_dir.name).replace("ABSOLUTE", str(toy_dir))
    cwd = {"inside": toy_dir, "beside": toy_dir.parent, "anywhere": tmp_path}[where]
    out = tmp_path / "run"
    result = cli(*arguments(trainer, data, out, tmp_path / "cache"), cwd=cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    shown = shlex.split(results["command"])
    assert shown[shown.index("--data") + 1] == "$IMDB_DIR"


def test_an_overwrite_with_data_dot_replaces_the_old_run(tmp_path: Path, toy_dir: Path) -> None:
    out = tmp_path / "run"
    first = cli(*arguments("train-imdb", str(toy_dir), out, tmp_path / "cache"))
    assert first.returncode == 0, first.stderr[-3000:]
    old = (out / "results.json").read_text()
    again = cli(*arguments("train-imdb", ".", out, tmp_path / "cache"), "--overwrite", "--set", "seed=1",
                cwd=toy_dir)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (out / "results.json").read_text() != old and not (out / SET_ASIDE).exists()


@pytest.mark.parametrize("trainer", ["train-imdb", "train-gpt", "pretrain"])
def test_an_empty_data_path_is_refused_before_anything_runs(tmp_path: Path, trainer: str) -> None:
    result = cli(*arguments(trainer, "", tmp_path / "run", tmp_path / "cache"), cwd=tmp_path)
    assert result.returncode == 2 and "argument --data: the path is empty" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()


def test_a_run_that_finished_training_is_kept_when_its_results_cannot_be_written(
        tmp_path: Path, toy_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    first = cli(*arguments("train-imdb", str(toy_dir), out, tmp_path / "cache"))
    assert first.returncode == 0, first.stderr[-3000:]
    old = {name: (out / name).read_bytes() for name in ("best.pt", "last.pt", "results.json")}

    def full_disk(path: Path, record: dict) -> None:
        raise OSError(f"could not write {path}: is the disk full?")

    monkeypatch.setattr(session, "write_json", full_disk)
    failed = cli(*arguments("train-imdb", str(toy_dir), out, tmp_path / "cache"), "--overwrite", "--set", "seed=1")
    refused(failed, "is the disk full?")
    assert f"the new run finished training but not its results: it stays in {out}" in failed.stdout
    assert {name: (out / SET_ASIDE / name).read_bytes() for name in old} == old, "the old run, set aside, intact"
    assert (out / "best.pt").read_bytes() != old["best.pt"] and (out / "last.pt").is_file()
    assert not (out / ".lock").exists()
    monkeypatch.undo()  # the user follows the advice: keep the new run, finish it
    shutil.rmtree(out / SET_ASIDE)
    resumed = cli(*arguments("train-imdb", str(toy_dir), out, tmp_path / "cache"), "--resume", "--set", "seed=1")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads((out / "results.json").read_text())["train_config"]["seed"] == 1
