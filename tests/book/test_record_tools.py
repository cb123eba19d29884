"""The tools that write chapters 12 and 13's records from runs: each on a tiny run."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scratchformer.cli.commands import main
from scratchformer.io.fingerprint import file_sha256

from conftest import ROOT
from test_gpt import tiny_run_arguments
from test_pretrain import pretrain_arguments

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


def test_sentiment_token_pairs_each_review_with_its_flipped_token(tmp_path: Path,
                                                                  toy_dir: Path) -> None:
    run = tmp_path / "gpt"
    assert main(tiny_run_arguments(toy_dir, run, tmp_path / "cache")) == 0
    record = tmp_path / "pairs.json"
    subprocess.run([sys.executable, str(TOOLS / "ch12_sentiment_token.py"), "--data", str(toy_dir),
                    "--run", str(run), "--reviews", "6", "--record", str(record)],
                   check=True, capture_output=True)
    recorded = json.loads(record.read_text())
    assert recorded["checkpoint_sha256"] == file_sha256(run / "best.pt")
    gaps = recorded["flipped_minus_true_nats_per_token"]
    assert recorded["reviews"] == len(gaps) == len(recorded["text_tokens"]) == 6
    assert len(set(recorded["review_indices"])) == 6 and np.isfinite(gaps).all()
    assert any(gap != 0 for gap in gaps), "the two tokens lead to different scores"
    context = json.loads((run / "results.json").read_text())["model_config"]["context_length"]
    assert max(recorded["text_tokens"]) <= context - 1
