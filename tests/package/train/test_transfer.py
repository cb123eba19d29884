"""Chapter 13's causal route: chapter 12's GPT as a classifier (scratchformer.train.transfer)."""

from __future__ import annotations

import pytest
import torch

from scratchformer.data.windows import special_ids, train_review_tokenizer
from scratchformer.models.gpt import GPTConfig, GPTModel
from scratchformer.tokenize.gpt2_files import END_OF_TEXT
from scratchformer.train.transfer import (GPTClassifier, classification_accuracy,
                                          encode_for_gpt, fine_tune)

from support.runs import tiny_run_arguments
from support.toy import toy_texts


def toy_classifier(vocab_size: int, seed: int = 0) -> GPTClassifier:
    torch.manual_seed(seed)
    return GPTClassifier(GPTConfig(vocab_size=vocab_size, context_length=64, d_model=16,
                                   num_layers=2, num_heads=2))


def test_a_review_is_framed_as_it_sat_in_the_pretraining_stream() -> None:
    texts, _ = toy_texts(40, 0)
    tokenizer = train_review_tokenizer(texts, vocab_size=300)
    end = special_ids(tokenizer)[END_OF_TEXT]
    ids, lengths = encode_for_gpt(tokenizer, ["A fine film.", "x " * 200], max_len=16)
    body = tokenizer.encode("A fine film.")
    assert ids.shape == (2, 16) and ids.dtype == torch.int64
    assert lengths.tolist() == [len(body) + 2, 16]
    assert ids[0, : len(body) + 2].tolist() == [end, *body, end]
    assert (ids[0, len(body) + 2 :] == end).all(), "padded with <|endoftext|>"
    assert ids[1, 0] == end and ids[1, -1] == end, "a long review is cut, then closed"


def test_padding_changes_no_logit_and_the_body_is_chapter_12s_gpt() -> None:
    model = toy_classifier(300).eval()
    ids = torch.randint(300, (3, 20), generator=torch.Generator().manual_seed(1))
    lengths = torch.tensor([20, 7, 12])
    with torch.no_grad():
        batch = model(ids, lengths)  # (3, 2)
        for row, length in enumerate(lengths.tolist()):
            alone = model(ids[row : row + 1, :length], lengths[row : row + 1])
            torch.testing.assert_close(batch[row : row + 1], alone, atol=1e-5, rtol=0)
            garbage = ids[row : row + 1].clone()
            garbage[0, length:] = 5  # other padding: the same logits
            torch.testing.assert_close(model(garbage, lengths[row : row + 1]), alone,
                                       atol=1e-5, rtol=0)
    gpt = GPTModel(model.gpt.config)
    assert set(gpt.state_dict()) == set(model.gpt.state_dict()), "a GPT checkpoint loads"


def test_mean_pooling_by_hand() -> None:
    model = toy_classifier(50).eval()
    ids, lengths = torch.tensor([[1, 2, 3, 4]]), torch.tensor([3])
    with torch.no_grad():
        x = model.gpt.token(ids[:, :3]) + model.gpt.position(3)
        for block in model.gpt.blocks:
            x = block(x)
        expected = model.head(model.gpt.final_norm(x).mean(1))
        torch.testing.assert_close(model(ids, lengths), expected, atol=1e-6, rtol=0)


def test_fine_tuning_learns_a_separable_toy_and_keeps_the_best_weights() -> None:
    texts, labels = toy_texts(160, 3)
    tokenizer = train_review_tokenizer(texts, vocab_size=300)
    ids, lengths = encode_for_gpt(tokenizer, texts, max_len=48)
    labels = torch.tensor(labels)
    model = toy_classifier(tokenizer.n_vocab, seed=2)
    fit, val = torch.arange(120), torch.arange(120, 160)
    before = classification_accuracy(model, ids[val], lengths[val], labels[val])
    history = fine_tune(model, ids, lengths, labels, fit, val, lr=1e-2, epochs=12,
                        batch_size=16, seed=0)
    best = max(record["val_accuracy"] for record in history)
    after = classification_accuracy(model, ids[val], lengths[val], labels[val])
    assert len(history) == 12 and [r["step"] for r in history][:2] == [8, 16]
    assert after == best, "the model ends with its best validation weights"
    assert best >= 0.9 > before + 0.2, (before, best)


def test_patience_stops_after_that_many_validations_without_a_gain() -> None:
    texts, labels = toy_texts(64, 4)
    tokenizer = train_review_tokenizer(texts, vocab_size=280)
    ids, lengths = encode_for_gpt(tokenizer, texts, max_len=32)
    model = toy_classifier(tokenizer.n_vocab)
    history = fine_tune(model, ids, lengths, torch.tensor(labels), torch.arange(48),
                        torch.arange(48, 64), lr=0.0, epochs=10, batch_size=16,
                        patience=2)
    assert len(history) == 3, "lr 0 never gains: the first validation, then two more"


@pytest.mark.slow
def test_the_recorded_comparison_runs_end_to_end(tmp_path, toy_dir) -> None:
    """train-gpt --no-labels, then tools/records/ch13_gpt_transfer.py: runs, and the record's keys.
    The fine-tuning runs call the script's `main` in this process (each would otherwise spend
    seconds importing torch); the record is made by the script as a contributor runs it."""
    import json
    import subprocess
    import sys

    from scratchformer.cli.commands import main
    from support import ROOT, record_script

    transfer = record_script("ch13_gpt_transfer")

    def fine_tune_run(*arguments: str) -> None:
        words = ["run", *arguments, "--labels", "40", "--val-reviews", "30", "--data", str(toy_dir),
                 "--cache", str(tmp_path / "cache")]
        assert transfer.main(transfer.parse(words), words) == 0

    gpt = tmp_path / "gpt"
    assert main([*tiny_run_arguments(toy_dir, gpt, tmp_path / "cache"), "--no-labels"]) == 0
    assert json.loads((gpt / "results.json").read_text())["data"]["source"]
    for seed in (0, 1):
        for start in ([], ["--scratch"]):
            out = tmp_path / "runs" / f"{'scratch' if start else 'pretrained'}_{seed}.json"
            fine_tune_run("--gpt", str(gpt), *start, "--seed", str(seed), "--epochs", "2",
                          "--out", str(out))
    choice = tmp_path / "select" / "scratch_lr.json"
    fine_tune_run("--gpt", str(gpt), "--scratch", "--no-test", "--out", str(choice))
    assert json.loads(choice.read_text())["test_accuracy"] is None, "the test split unread"
    snapshot = tmp_path / "gpt_snapshot"  # a folder holding a checkpoint as best.pt
    snapshot.mkdir()
    for name in ("best.pt", "tokenizer.json"):
        (snapshot / name).write_bytes((gpt / name).read_bytes())
    for seed in (0, 1):
        fine_tune_run("--gpt", str(snapshot), "--lr", "3e-3", "--seed", str(seed), "--epochs", "1",
                      "--out", str(tmp_path / "partial" / f"snapshot_{seed}.json"))
    record = tmp_path / "transfer.json"
    tool = [sys.executable, str(ROOT / "tools" / "records" / "ch13_gpt_transfer.py")]
    subprocess.run([*tool, "record", "--runs", str(tmp_path / "runs"), "--gpt", str(gpt),
                    "--record", str(record), "--data", str(toy_dir),
                    "--selection", str(choice.parent), "--partial", str(tmp_path / "partial")],
                   check=True, capture_output=True)
    recorded = json.loads(record.read_text())
    runs = recorded["fine_tuning"]
    assert len(runs) == 4 and {r["labels"] for r in runs} == {40}
    gain = recorded["comparisons"]["40"]
    by = {(r["init"], r["seed"]): 100 * r["test_accuracy"] for r in runs}
    differences = [by["pretrained", s] - by["scratch", s] for s in (0, 1)]
    assert abs(gain["pretrained_gain_points"] - sum(differences) / 2) < 1e-9
    assert abs(gain["pretrained_gain_se"] - abs(differences[0] - differences[1]) / 2) < 1e-9
    assert all(r["command"].startswith("python tools/records/ch13_gpt_transfer.py run") for r in runs)
    assert [r["init"] for r in recorded["selection"]] == ["scratch"]
    snapshot_runs = recorded["snapshot_fine_tuning"]
    (step, at_step), = recorded["snapshot_comparisons"].items()
    assert int(step) == snapshot_runs[0]["gpt"]["step"] and at_step["seeds"] == 2
    snapshot_gain = [100 * r["test_accuracy"] - by["scratch", r["seed"]] for r in snapshot_runs]
    assert abs(at_step["gain_points"] - sum(snapshot_gain) / 2) < 1e-9
    history = recorded["pretraining"]["gpt"]["history"]
    assert abs(at_step["pretraining_seconds"] - sum(h["seconds"] for h in history)) < 1e-9
    by_context = recorded["pretraining"]["gpt"]["loss_by_context"]
    assert list(by_context) == ["1", "2", "4", "16"], "contexts up to the GPT's 32"
