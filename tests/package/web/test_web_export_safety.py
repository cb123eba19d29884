"""Appendix "Running the models in the browser", "Writing the files": `export-web` exports a
model with its own tokenizer and configuration, as `classify` and `generate` check them, and
changes its output folder whole or not at all.

A classifier fine-tuned from a pretraining snapshot (chapter 13, `train-imdb --init`) is exported
with the snapshot's tokenizer: the page's tokenizer (`bpe.mjs` under node) and ONNX Runtime give
`classify`'s probabilities on 100 reviews. A swapped tokenizer or an edited configuration is
refused with `classify`'s words. Then every way an export can fail late (a damaged
`results.json`, a full disk, Ctrl-C) leaves the earlier export byte-identical and no folder behind.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("onnx", reason="the web extra is not installed: pip install '.[web]'")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

import scratchformer.web.export as web_export  # noqa: E402
from scratchformer.cli.commands import main  # noqa: E402
from scratchformer.train.classify import load_classifier  # noqa: E402
from support.web import NODE, reviews, run_node, session_of  # noqa: E402

pytestmark = pytest.mark.slow
TINY = ["--config", "tiny", "--device", "cpu", "--no-progress", "--threads", "1"]


def tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
            for p in sorted(folder.rglob("*"))}


def pretrain(toy_dir: Path, out: Path, seed: int) -> Path:
    assert main(["pretrain", "--data", str(toy_dir), "--out", str(out), *TINY, "--val-documents", "20",
                 "--tokenizer-documents", "100", "--set", f"seed={seed}"]) == 0
    return sorted(out.glob("snapshot-*.pt"))[-1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, toy_dir: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("export-safety")
    snapshot = pretrain(toy_dir, root / "pretrained", seed=0)
    pretrain(toy_dir, root / "other", seed=1)  # a tokenizer of the same size, not the same
    tuned = root / "tuned"
    assert main(["train-imdb", "--data", str(toy_dir), "--out", str(tuned), *TINY, "--init", str(snapshot),
                 "--epochs", "3"]) == 0
    gpt = root / "gpt"
    assert main(["train-gpt", "--data", str(toy_dir), "--out", str(gpt), *TINY, "--val-documents", "20",
                 "--tokenizer-documents", "100", "--heldout", "10", "--cache", str(root / "cache")]) == 0
    return {"root": root, "tuned": tuned, "other": root / "other", "gpt": gpt}


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_an_init_fine_tune_exports_with_its_own_tokenizer_and_equals_classify(
        runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "web"
    assert main(["export-web", "--checkpoint", str(runs["tuned"]), "--out", str(out)]) == 0
    record = json.loads((out / "tokenizer.json").read_text())
    own = json.loads((runs["tuned"] / "tokenizer.json").read_text())
    assert record["special_tokens"] == own["special_tokens"] and len(record["tokens"]) == 300 - len(
        own["special_tokens"])
    assert [record["framing"][k] for k in ("cls", "sep", "pad")] == [
        own["special_tokens"][k] for k in ("[CLS]", "[SEP]", "[PAD]")]
    texts = reviews(100, seed=5)
    framed = np.array([result["framed"] for result in run_node(record, texts, tmp_path)])  # the page's ids
    probabilities = session_of(out / "model.onnx").run(None, {"ids": framed})[0]
    verdicts = load_classifier(runs["tuned"], torch.device("cpu"))(texts)
    expected = np.array([[v["probabilities"]["negative"], v["probabilities"]["positive"]] for v in verdicts])
    assert np.abs(probabilities - expected).max() < 1e-5
    assert expected[:, 1].std() > 1e-4, "the reviews do not all get one answer"


def refusals_match(runs: dict[str, Path], tmp_path: Path, run: Path, capsys: pytest.CaptureFixture,
                   phrase: str) -> None:
    """export-web and classify refuse `run` with the same message, and export-web writes nothing."""
    capsys.readouterr()
    assert main(["classify", "--checkpoint", str(run), "a fine film"]) == 2
    said_by_classify = capsys.readouterr().err.strip().partition(": error: ")[2]
    assert phrase in said_by_classify
    assert main(["export-web", "--checkpoint", str(run), "--out", str(tmp_path / "web")]) == 1
    said = capsys.readouterr().err.strip()
    assert said == f"scratchformer export-web: error: {said_by_classify}"
    assert not (tmp_path / "web").exists()


def test_a_swapped_tokenizer_is_refused_with_classifys_words(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "swapped"
    shutil.copytree(runs["tuned"], run)
    shutil.copy(runs["other"] / "tokenizer.json", run / "tokenizer.json")  # same size, other tokens
    refusals_match(runs, tmp_path, run, capsys, "was trained with the tokenizer of sha256")


def test_an_edited_configuration_is_refused_with_classifys_words(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "edited"
    shutil.copytree(runs["tuned"], run)
    payload = torch.load(run / "best.pt", weights_only=True)
    payload["config"]["num_heads"] = 1  # every shape stays the same
    torch.save(payload, run / "best.pt")
    refusals_match(runs, tmp_path, run, capsys, "its configuration is not the one it was trained with")


def test_a_gpt_with_another_runs_tokenizer_of_its_size_is_refused(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    swapped = tmp_path / "swapped.json"
    shutil.copy(runs["other"] / "tokenizer.json", swapped)  # a pretraining run's: 300 ids as well
    assert main(["generate", "--checkpoint", str(runs["gpt"]), "--tokenizer", str(swapped), "--prompt", "a",
                 "--max-new-tokens", "1"]) == 2
    said_by_generate = capsys.readouterr().err.strip().partition(": error: ")[2]
    assert "was trained with the tokenizer of sha256" in said_by_generate
    assert main(["export-web", "--checkpoint", str(runs["gpt"]), "--tokenizer", str(swapped), "--out",
                 str(tmp_path / "web")]) == 1
    assert capsys.readouterr().err.strip() == f"scratchformer export-web: error: {said_by_generate}"
    assert not (tmp_path / "web").exists()


def test_a_classifier_refuses_a_tokenizer_option(runs: dict[str, Path], tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    assert main(["export-web", "--checkpoint", str(runs["tuned"]), "--tokenizer",
                 str(runs["tuned"] / "tokenizer.json"), "--out", str(tmp_path / "web")]) == 1
    assert "--tokenizer is for a GPT" in capsys.readouterr().err
    assert not (tmp_path / "web").exists()


@pytest.fixture(scope="module")
def first_site(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fine-tuned run exported into `site/models/imdb`, once (an export takes 2 s)."""
    site = tmp_path_factory.mktemp("first-export") / "site"
    export = web_export.export_web(runs["tuned"], site / "models" / "imdb")
    assert export["test_accuracy"] is not None
    return site


@pytest.fixture()
def exported(runs: dict[str, Path], first_site: Path, tmp_path: Path) -> tuple[Path, Path, dict]:
    """A copy of the fine-tuned run, and of a site it was exported into (`site/models/imdb`)."""
    run = tmp_path / "run"
    shutil.copytree(runs["tuned"], run)
    shutil.copytree(first_site, tmp_path / "site")
    return run, tmp_path / "site" / "models" / "imdb", tree(tmp_path / "site")


BAD_RESULTS = {
    "truncated": ('{"command": "scratchformer train-imdb", "te', "is not a results file: "),
    "a list": ("[1, 2, 3]", "holds a JSON list, not the object a run writes"),
    "test not an object": ('{"test": 5}', "test is 5, not an object"),
    "accuracy NaN": ('{"test": {"accuracy": NaN}}', "test.accuracy is nan, not a finite number"),
    "accuracy a string": ('{"test": {"accuracy": "0.9"}}', "test.accuracy is '0.9', not a finite number"),
    "command a number": ('{"command": 5}', "command is 5, not a string"),
    "deep nesting": ("[" * 100000 + "]" * 100000, "is not a results file: "),
    "not UTF-8": (b"\xff\xfe{}", "is not a results file: "),
}


@pytest.mark.parametrize("case", BAD_RESULTS)
def test_a_damaged_results_file_is_refused_before_anything_is_written(
        exported: tuple[Path, Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture, case: str) -> None:
    run, out, before = exported
    content, phrase = BAD_RESULTS[case]
    (run / "results.json").write_bytes(content if isinstance(content, bytes) else content.encode())
    assert main(["export-web", "--checkpoint", str(run), "--out", str(out)]) == 1
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and str(run / "results.json") in said and phrase in said, said[-2000:]
    assert tree(tmp_path / "site") == before


@pytest.mark.parametrize("fault", ["full disk at the second file", "Ctrl-C at the manifest",
                                   "full disk in the swap"])
def test_an_export_that_fails_midway_leaves_the_old_export_byte_identical(
        exported: tuple[Path, Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    run, out, before = exported
    (run / "results.json").write_text(json.dumps({"command": "another run", "test": {"accuracy": 0.75}}))
    writes = []
    write_atomically = web_export.write_atomically

    def failing_write(path: Path, write) -> None:
        writes.append(Path(path).name)
        if fault == "full disk at the second file" and len(writes) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        if fault == "Ctrl-C at the manifest" and Path(path).name == "manifest.json":
            raise KeyboardInterrupt
        write_atomically(path, write)

    replace = os.replace

    def failing_replace(source, target) -> None:
        if Path(target) == out and Path(source).name.startswith(".imdb.new-"):  # the new folder's swap
            raise OSError(errno.ENOSPC, "No space left on device")
        replace(source, target)

    monkeypatch.setattr(web_export, "write_atomically", failing_write)
    if fault == "full disk in the swap":
        monkeypatch.setattr(web_export.os, "replace", failing_replace)
    with pytest.raises(KeyboardInterrupt if "Ctrl-C" in fault else OSError):
        web_export.export_web(run, out)
    assert tree(tmp_path / "site") == before, "the old export as it was, and no new or old folder beside it"


def test_a_failed_first_export_leaves_no_folder(runs: dict[str, Path], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(path: Path, write) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(web_export, "write_atomically", full_disk)
    with pytest.raises(OSError):
        web_export.export_web(runs["tuned"], tmp_path / "new" / "models" / "imdb")
    assert os.listdir(tmp_path) == []


def test_an_export_into_a_folder_holding_other_files_is_refused(runs: dict[str, Path], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["export-web", "--checkpoint", str(runs["tuned"]), "--out", str(tmp_path)]) == 1
    assert "holds files that are not an export (notes.txt)" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_the_manifest_of_last_pt_carries_no_score_of_best_pt(runs: dict[str, Path], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    tuned = runs["tuned"]
    results = json.loads((tuned / "results.json").read_text())
    assert main(["export-web", "--checkpoint", str(tuned / "last.pt"), "--out", str(tmp_path / "last")]) == 0
    manifest = json.loads((tmp_path / "last" / "manifest.json").read_text())
    assert manifest["checkpoint"]["file"] == "last.pt" and manifest["test_accuracy"] is None
    assert results["scored_checkpoint"]["file"] == "best.pt"
    said = f"{tuned / 'results.json'} scores best.pt, not {tuned / 'last.pt'}: the manifest carries no test accuracy"
    assert manifest["unscored"] == said and f"note: {said}" in capsys.readouterr().out
    assert main(["export-web", "--checkpoint", str(tuned / "best.pt"), "--out", str(tmp_path / "best")]) == 0
    manifest = json.loads((tmp_path / "best" / "manifest.json").read_text())
    assert manifest["test_accuracy"] == results["test"]["accuracy"] and "unscored" not in manifest
    assert "note:" not in capsys.readouterr().out


def test_an_out_that_is_a_symbolic_link_is_refused_before_anything_is_written(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    site = tmp_path / "site"
    web_export.export_web(runs["tuned"], site / "v1")
    (site / "current").symlink_to("v1")
    before = tree(site)
    assert main(["export-web", "--checkpoint", str(runs["tuned"]), "--out", str(site / "current")]) == 1
    said = capsys.readouterr()
    assert f"--out {site / 'current'} is a symbolic link (to v1)" in said.err and said.err.count("\n") == 1
    assert "wrote" not in said.out
    assert tree(site) == before and (site / "current").is_symlink(), "the link, its folder and nothing beside"
