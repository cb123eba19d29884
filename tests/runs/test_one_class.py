"""The appendix "Running it for real", "Failing safely": `train-imdb --allow-one-class`.

Training reviews of one label are refused (tests/runs/test_refusals.py), and the refusal names the
flag that lets a demonstration train on them anyway. Then validation, whose slice is of the same
label, scores every model 1.0 and cannot choose: `best.pt` is the model of the last validation, the
command says so, and `results.json` records it (`best_chosen_on_validation: false`). On data of
both labels the flag changes nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scratchformer.runs.checkpoint import read_checkpoint
from support.runs import cli, refused

TINY = ["--config", "tiny", "--device", "cpu", "--no-progress", "--threads", "1", "--epochs", "2"]


@pytest.fixture(scope="module")
def one_class(tmp_path_factory: pytest.TempPathFactory, toy_dir: Path) -> Path:
    """The toy training reviews of label 0 only (a file sorted by label, cut), the toy test split."""
    folder = tmp_path_factory.mktemp("one-class")
    reviews = [json.loads(line) for line in (toy_dir / "train.jsonl").read_text().splitlines()]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reviews if r["label"] == 0))
    shutil.copy(toy_dir / "test.jsonl", folder / "test.jsonl")
    return folder


def test_the_refusal_names_the_flag(one_class: Path, tmp_path: Path) -> None:
    result = cli("train-imdb", "--data", str(one_class), "--out", str(tmp_path / "new"), *TINY)
    refused(result, "holds 60 negative and 0 positive reviews", "or --allow-one-class for a demonstration")
    assert not (tmp_path / "new").exists()


def test_one_class_trains_and_best_is_the_last_validated_model(one_class: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = cli("train-imdb", "--data", str(one_class), "--out", str(out), *TINY, "--allow-one-class")
    assert result.returncode == 0, result.stderr[-3000:]
    assert ("note: the reviews trained on are of one label (--allow-one-class): best.pt is the model of the "
            "last validation, not one chosen on validation") in result.stdout
    assert "(best)" not in result.stdout
    results = json.loads((out / "results.json").read_text())
    history = results["history"]
    assert len(history) == 2 and [h["val_accuracy"] for h in history] == [1.0, 1.0]  # nothing to choose by
    assert results["data"]["one_class"] is True and results["best_chosen_on_validation"] is False
    assert (results["best_epoch"], results["best_step"]) == (history[-1]["epoch"], history[-1]["step"])
    assert read_checkpoint(out / "best.pt")["training"]["step"] == history[-1]["step"] > history[0]["step"]
    assert results["test"]["examples"] == 40


def test_on_both_labels_the_flag_changes_nothing(toy_dir: Path, tmp_path: Path) -> None:
    made = {}
    for name, more in {"plain": [], "allowed": ["--allow-one-class"]}.items():
        out = tmp_path / name
        result = cli("train-imdb", "--data", str(toy_dir), "--out", str(out), *TINY, "--no-test", *more)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "--allow-one-class" not in result.stdout
        made[name] = json.loads((out / "results.json").read_text())
    for results in made.values():
        assert results["data"]["one_class"] is False and results["best_chosen_on_validation"] is True
    untimed = [[{k: v for k, v in record.items() if k not in ("seconds", "tokens_per_second")}
                for record in results["history"]] for results in made.values()]
    assert untimed[0] == untimed[1]
    assert (made["plain"]["best_step"], made["plain"]["validation"]) == (made["allowed"]["best_step"],
                                                                         made["allowed"]["validation"])
