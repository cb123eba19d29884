"""The tools that write chapters 11, 12 and 13's records from runs: each on a tiny run."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from scratchformer.cli.commands import main
from scratchformer.data.framing import clean_review
from scratchformer.data.imdb import load_imdb
from scratchformer.data.windows import END_OF_TEXT, SENTIMENT_TOKENS, special_ids
from scratchformer.io.fingerprint import file_sha256
from scratchformer.runs.folders import command_record
from scratchformer.tokenize.bpe import BPETokenizer
from scratchformer.train.gpt import load_gpt
from scratchformer.web.export import export_web

from support import ROOT
from support.runs import pretrain_arguments, tiny, tiny_run_arguments

TOOLS = ROOT / "tools" / "records"


def test_electra_losses_split_the_loss_at_every_snapshot(tmp_path: Path, toy_dir: Path) -> None:
    run = tmp_path / "electra"
    assert main([*pretrain_arguments(toy_dir, run), "--objective", "electra",
                 "--set", "steps=8"]) == 0
    record = tmp_path / "electra.json"
    subprocess.run([sys.executable, str(TOOLS / "ch13_electra_losses.py"), "--run", str(run),
                    "--record", str(record)], check=True, capture_output=True)
    recorded = json.loads(record.read_text())
    assert recorded["command"].startswith("python tools/records/ch13_electra_losses.py")
    assert set(recorded["snapshots"]) == set(recorded["snapshot_seconds"]) >= {"0", "8"}
    vocab = recorded["run"]["model_config"]["vocab_size"]
    untrained = recorded["snapshots"]["0"]
    assert abs(untrained["generator"] - math.log(vocab)) < 0.5  # a uniform guess
    for losses in recorded["snapshots"].values():
        share = losses["replaced_share"]
        assert 0 < share <= 0.15  # never more than the chosen positions
        entropy = -(share * math.log(share) + (1 - share) * math.log(1 - share))
        assert losses["always_the_share"] == pytest.approx(entropy, abs=1e-12)
        assert math.isfinite(losses["replaced_token"])
    assert 0 < recorded["frequencies_at_chosen"] < math.log(vocab) + 1


def test_electra_losses_refuses_a_masked_lm_run(tmp_path: Path, toy_dir: Path) -> None:
    run = tmp_path / "mlm"
    assert main([*pretrain_arguments(toy_dir, run), "--set", "steps=2"]) == 0
    done = subprocess.run([sys.executable, str(TOOLS / "ch13_electra_losses.py"), "--run", str(run),
                           "--record", str(tmp_path / "out.json")], capture_output=True,
                          text=True)
    assert done.returncode != 0 and "mlm run, not an ELECTRA run" in done.stderr
    assert not (tmp_path / "out.json").exists()


@pytest.mark.slow  # a tiny GPT's training and web export
def test_sentiment_token_scores_the_web_export_as_training_framed_reviews(tmp_path: Path,
                                                                          toy_dir: Path) -> None:
    """The served export scored step by step in ONNX Runtime gives the gap that the PyTorch
    model gives on the whole framed review: `<|endoftext|>`, the sentiment token, the text."""
    run, web = tmp_path / "gpt", tmp_path / "web"
    assert main(tiny_run_arguments(toy_dir, run, tmp_path / "cache")) == 0
    export_web(run, web)
    record = tmp_path / "pairs.json"
    subprocess.run([sys.executable, str(TOOLS / "ch12_sentiment_token.py"), "--data", str(toy_dir),
                    "--model", str(web), "--reviews", "6", "--record", str(record)],
                   check=True, capture_output=True)
    recorded = json.loads(record.read_text())
    assert recorded["checkpoint_sha256"] == file_sha256(run / "best.pt")
    assert recorded["model_onnx_sha256"] == file_sha256(web / "model.onnx")
    gaps = recorded["flipped_minus_true_nats_per_token"]
    assert recorded["reviews"] == len(gaps) == len(recorded["text_tokens"]) == 6
    assert len(set(recorded["review_indices"])) == 6 and np.isfinite(gaps).all()
    assert any(gap != 0 for gap in gaps), "the two tokens lead to different scores"
    model, tokenizer = load_gpt(run), BPETokenizer.load(run / "tokenizer.json")
    context = model.config.context_length
    assert max(recorded["text_tokens"]) <= context - 2
    ids = special_ids(tokenizer)
    test = load_imdb(toy_dir)["test"]
    for number, index in enumerate(recorded["review_indices"][:2]):  # by hand, in PyTorch
        text_ids = tokenizer.encode(clean_review(test.texts[index]))[: context - 2]
        assert recorded["text_tokens"][number] == len(text_ids)
        mean_loss = {}
        for label in (0, 1):
            framed = torch.tensor([[ids[END_OF_TEXT], ids[SENTIMENT_TOKENS[label]], *text_ids]])
            with torch.no_grad():
                log_probs = model.eval()(framed[:, :-1]).log_softmax(-1)  # (1, T - 1, V)
            text_log_probs = log_probs[0, 1:].gather(-1, framed[0, 2:, None])  # the text's
            mean_loss[label] = -text_log_probs.mean().item()
        true = test.labels[index]
        assert gaps[number] == pytest.approx(mean_loss[1 - true] - mean_loss[true], abs=1e-5)
    too_many = subprocess.run([sys.executable, str(TOOLS / "ch12_sentiment_token.py"), "--data",
                               str(toy_dir), "--model", str(web), "--reviews", "41", "--record",
                               str(tmp_path / "more.json")], capture_output=True, text=True)
    assert too_many.returncode == 2 and not (tmp_path / "more.json").exists()
    assert too_many.stderr.splitlines() == [  # not silently fewer reviews than asked for
        "ch12_sentiment_token.py: error: argument --reviews: 41 is more than the 40 test reviews"]


def test_record_predictions_names_its_run_and_records_only_real_errors(tmp_path: Path,
                                                                       toy_dir: Path) -> None:
    """More errors asked for than the model makes: every one recorded is wrong, none made up
    from right answers; the record names the command that ran and the run it read."""
    run = tmp_path / "imdb"
    assert main(tiny(toy_dir, run, tmp_path / "cache", "--limit", "60")) == 0
    record = tmp_path / "predictions.json"
    argv = ["--checkpoint", str(run), "--data", str(toy_dir), "--record", str(record),
            "--errors", "1000"]
    subprocess.run([sys.executable, str(TOOLS / "ch11_record_predictions.py"), *argv],
                   check=True, capture_output=True)
    recorded = json.loads(record.read_text())
    errors = recorded["largest_errors"]
    assert len(errors) < 40  # the toy test split has 40 reviews; the model gets some right
    assert all(error["label"] != error["true_label"] for error in errors)
    assert [e["loss"] for e in errors] == sorted((e["loss"] for e in errors), reverse=True)
    assert recorded["run_command"] == json.loads((run / "results.json").read_text())["command"]
    assert "run" not in recorded  # it used to name one fixed record, whatever ran
    assert recorded["command"] == ("python tools/records/ch11_record_predictions.py --checkpoint "
                                   f"runs/imdb --data $IMDB_DIR --record {record} --errors 1000")
    assert recorded["command_as_run"] == command_record(
        ["python", "tools/records/ch11_record_predictions.py", *argv])["command_as_run"]
    assert recorded["checkpoint_sha256"] == file_sha256(run / "best.pt")


def test_mlm_sweep_records_the_command_that_ran_and_only_masked_lm_runs(tmp_path: Path,
                                                                         toy_dir: Path) -> None:
    sweep = tmp_path / "sweep"
    assert main([*pretrain_arguments(toy_dir, sweep / "lr_a"), "--set", "steps=2"]) == 0
    (sweep / "notes").mkdir()  # not a run: passed over
    record = tmp_path / "sweep.json"
    argv = ["--runs", str(sweep), "--record", str(record)]
    subprocess.run([sys.executable, str(TOOLS / "ch13_mlm_sweep.py"), *argv], check=True,
                   capture_output=True)
    recorded = json.loads(record.read_text())
    assert list(recorded["runs"]) == ["lr_a"]
    assert recorded["command"] == f"python tools/records/ch13_mlm_sweep.py --runs runs/sweep --record {record}"
    assert recorded["command_as_run"] == command_record(
        ["python", "tools/records/ch13_mlm_sweep.py", *argv])["command_as_run"]


def test_web_precision_records_the_command_that_ran_and_the_run_it_read(tmp_path: Path,
                                                                         toy_dir: Path) -> None:
    run = tmp_path / "imdb"
    assert main(tiny(toy_dir, run, tmp_path / "cache", "--limit", "60")) == 0
    record = tmp_path / "precision.json"
    argv = ["--run", str(run), "--data", str(toy_dir), "--record", str(record)]
    done = subprocess.run([sys.executable, str(TOOLS / "appendix_web_precision.py"), *argv],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    recorded = json.loads(record.read_text())
    assert recorded["command"] == ("python tools/records/appendix_web_precision.py --run runs/imdb "
                                   f"--data $IMDB_DIR --record {record}")
    assert recorded["command_as_run"] == command_record(
        ["python", "tools/records/appendix_web_precision.py", *argv])["command_as_run"]
    assert recorded["run_command"] == json.loads((run / "results.json").read_text())["command"]
    assert recorded["test_reviews"] == 40  # the toy folder's test split
