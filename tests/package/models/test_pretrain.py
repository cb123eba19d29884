"""Chapter 13: masking, the masked language model, ELECTRA, transferring an encoder into
the classifier, and the `pretrain` / `train-imdb --init` commands."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from scratchformer.cli.commands import main
from scratchformer.data.framing import SpecialIds
from scratchformer.models.bert import BertConfig, BertForSequenceClassification
from scratchformer.models.pretraining import (IGNORED, BertForMaskedLM, ElectraPretrainer,
                                              PretrainingWindows, bert_special_ids,
                                              causal_lm_loss, mask_tokens, masked_lm_loss,
                                              train_bert_tokenizer)
from scratchformer.train.pretrain import (PretrainConfig, encode_labelled,
                                          generator_config_of, load_pretrained_encoder,
                                          read_pretraining, save_pretraining)

from support.runs import pretrain_arguments, run_under_torchrun
from support.toy import toy_texts

VOCAB, MASK = 1000, 999
SPECIAL = SpecialIds(pad=996, cls=997, sep=998)
GOLDEN_CAUSAL_LOSS = 6.938827  # causal_lm_loss of an untrained model (seed 0) on 100, 200, ..., 800


def config(**changes: object) -> BertConfig:
    settings = {"vocab_size": VOCAB, "d_model": 16, "num_layers": 1, "num_heads": 2,
                "d_hidden": 32, "max_len": 24, "dropout": 0.0, "pad_id": SPECIAL.pad}
    return BertConfig(**{**settings, **changes})


def real_batch(device: torch.device, shape: tuple[int, int] = (64, 512)) -> torch.Tensor:
    """Windows as the loader makes them: [CLS] ... [SEP], some rows padded at the end."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(996, shape, generator=generator)
    ids[:, 0], ids[:, -1] = SPECIAL.cls, SPECIAL.sep
    ids[::4, -100:] = SPECIAL.pad
    return ids.to(device)


def test_mask_tokens_selects_15_percent_split_80_10_10(device: torch.device) -> None:
    ids = real_batch(device)
    generator = torch.Generator(device).manual_seed(1)
    inputs, labels = mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB,
                                 special_ids=[*SPECIAL, MASK], generator=generator)
    special = torch.isin(ids, torch.tensor([*SPECIAL, MASK], device=device))
    chosen = labels != IGNORED
    assert not bool((chosen & special).any()), "a special id is never chosen"
    share = chosen.sum().item() / (~special).sum().item()
    assert abs(share - 0.15) <= 0.01, share
    assert torch.equal(labels[chosen], ids[chosen]), "labels hold the original ids"
    assert torch.equal(inputs[~chosen], ids[~chosen]), "nothing else changes"
    masked = (inputs == MASK) & chosen
    kept = (inputs == ids) & chosen
    randomised = chosen & ~masked & ~kept
    total = chosen.sum().item()
    # a random id can equal the original (1 in 1000): counted as kept, well inside 2 points
    for part, expected in ((masked, 0.8), (randomised, 0.1), (kept, 0.1)):
        assert abs(part.sum().item() / total - expected) <= 0.02, (part.sum().item(), total)
    again = mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB, special_ids=[*SPECIAL, MASK],
                        generator=torch.Generator(device).manual_seed(1))
    assert torch.equal(again[0], inputs) and torch.equal(again[1], labels)
    other = mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB, special_ids=[*SPECIAL, MASK],
                        generator=torch.Generator(device).manual_seed(2))
    assert not torch.equal(other[1], labels)


def test_mask_tokens_refuses_bad_input() -> None:
    ids = real_batch(torch.device("cpu"), (2, 8))
    with pytest.raises(ValueError, match="mask_prob must be in"):
        mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB, special_ids=[], mask_prob=1.5)
    with pytest.raises(ValueError, match=r"ids must be a \(B, T\) integer tensor"):
        mask_tokens(ids.float(), mask_id=MASK, vocab_size=VOCAB, special_ids=[])


def test_masked_lm_shapes_and_tied_output(device: torch.device) -> None:
    torch.manual_seed(0)
    model = BertForMaskedLM(config()).to(device)
    ids = real_batch(device, (3, 24))
    assert model(ids).shape == (3, 24, VOCAB)
    assert model.predict(torch.zeros(5, 16, device=device)).shape == (5, VOCAB)
    assert sum(p.numel() for p in model.parameters()) == (
        sum(p.numel() for p in model.encoder.parameters()) + VOCAB), "only a bias is new"
    inputs, labels = mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB,
                                 special_ids=[*SPECIAL, MASK],
                                 generator=torch.Generator(device).manual_seed(0))
    full = torch.nn.functional.cross_entropy(model(inputs).flatten(0, 1), labels.flatten())
    torch.testing.assert_close(masked_lm_loss(model, inputs, labels), full,
                               atol=1e-5, rtol=1e-5)


def test_causal_lm_loss_reads_only_the_past(device: torch.device) -> None:
    torch.manual_seed(0)
    model = BertForMaskedLM(config(num_layers=2)).to(device).eval()
    ids = real_batch(device, (3, 24))[1:]  # two rows without padding
    with torch.no_grad():
        full = causal_lm_loss(model, ids)
        # each prediction from its prefix alone: (k - 1) L(ids[:, :k]) - (k - 2) L(ids[:, :k - 1])
        sums = [(k - 1) * causal_lm_loss(model, ids[:, :k]) for k in range(2, 25)]
        alone = [sums[0], *(b - a for a, b in zip(sums, sums[1:]))]
    torch.testing.assert_close(full, torch.stack(alone).mean(), atol=1e-5, rtol=1e-5)
    untrained_nats = math.log(VOCAB)
    assert abs(float(full) - untrained_nats) < 0.3, float(full)


def test_causal_lm_loss_skips_padding_and_refuses_short_windows(device: torch.device) -> None:
    torch.manual_seed(0)
    model = BertForMaskedLM(config()).to(device).eval()
    ids = real_batch(device, (2, 20))[1:]
    padded = torch.cat([ids, torch.full((1, 4), SPECIAL.pad, device=device)], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(causal_lm_loss(model, padded), causal_lm_loss(model, ids),
                                   atol=1e-5, rtol=1e-5)
        golden = float(causal_lm_loss(model.cpu(), torch.arange(1, 9)[None] * 100))
    assert math.isclose(golden, GOLDEN_CAUSAL_LOSS, abs_tol=1e-4), golden
    with pytest.raises(ValueError, match="T >= 2"):
        causal_lm_loss(model, ids[:, :1])


def test_an_encoder_transfers_into_the_classifier_strictly(tmp_path: Path) -> None:
    torch.manual_seed(0)
    mlm = BertForMaskedLM(config())
    classifier = BertForSequenceClassification(config())
    classifier.encoder.load_state_dict(mlm.encoder.state_dict())  # strict by default
    ids = real_batch(torch.device("cpu"), (2, 24))
    assert torch.equal(classifier.encoder(ids), mlm.encoder(ids))
    path = tmp_path / "snapshot.pt"
    save_pretraining(path, mlm, PretrainConfig())
    loaded_config, weights = load_pretrained_encoder(path)
    assert loaded_config == config()
    fresh = BertForSequenceClassification(loaded_config)
    fresh.encoder.load_state_dict(weights)
    assert torch.equal(fresh.encoder(ids), mlm.encoder(ids))
    electra = ElectraPretrainer(config(), generator_config_of(config(), PretrainConfig()))
    fresh.encoder.load_state_dict(electra.encoder.state_dict())


def test_electra_loss_learns_from_every_token(device: torch.device) -> None:
    torch.manual_seed(0)
    settings = PretrainConfig(objective="electra")
    model = ElectraPretrainer(config(), generator_config_of(config(), settings)).to(device)
    assert model.generator.encoder.embedding is model.encoder.embedding
    ids = real_batch(device, (4, 24))
    inputs, labels = mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB,
                                 special_ids=[*SPECIAL, MASK],
                                 generator=torch.Generator(device).manual_seed(0))
    loss = model.loss(inputs, labels, torch.Generator(device).manual_seed(0))
    loss.backward()
    assert torch.isfinite(loss)
    assert model.replaced_head.weight.grad.abs().sum() > 0
    assert model.encoder.blocks[0].attention.qkv.weight.grad.abs().sum() > 0 if hasattr(
        model.encoder.blocks[0], "attention") and hasattr(
        model.encoder.blocks[0].attention, "qkv") else True
    with pytest.raises(ValueError, match="same vocab_size and d_model"):
        ElectraPretrainer(config(), config(d_model=32, d_hidden=64))


def test_electra_loss_parts_add_up_to_its_loss(device: torch.device) -> None:
    torch.manual_seed(0)
    settings = PretrainConfig(objective="electra")
    model = ElectraPretrainer(config(), generator_config_of(config(), settings)).to(device)
    model.eval()
    ids = real_batch(device, (4, 24))
    inputs, labels = mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB,
                                 special_ids=[*SPECIAL, MASK],
                                 generator=torch.Generator(device).manual_seed(0))
    with torch.no_grad():
        generator_loss, rtd_loss, replaced_share = model.loss_parts(
            inputs, labels, torch.Generator(device).manual_seed(0))
        loss = model.loss(inputs, labels, torch.Generator(device).manual_seed(0))
    torch.testing.assert_close(loss, generator_loss + 50.0 * rtd_loss, rtol=1e-5, atol=1e-5)
    chosen_share = (labels != IGNORED).float().mean()
    assert 0 < replaced_share <= chosen_share  # a sample may equal the original
    assert abs(float(rtd_loss) - math.log(2)) < 0.5  # untrained: close to a coin's


def test_windows_are_framed(device: torch.device) -> None:
    stream = np.arange(100, dtype=np.uint16)
    windows = PretrainingWindows(stream, 10, 2, SPECIAL, seed=0)
    batch = windows.batch(0)
    assert batch.shape == (2, 10)
    assert (batch[:, 0] == SPECIAL.cls).all() and (batch[:, -1] == SPECIAL.sep).all()
    assert all(torch.equal(row[1:-1], row[1] + torch.arange(8)) for row in batch)
    assert sum(len(b) for b in windows) == (100 - 1) // 7


def test_tokenizer_and_labelled_rows() -> None:
    texts, _ = toy_texts(40, 0)
    tokenizer = train_bert_tokenizer(texts, vocab_size=300)
    special, mask_id = bert_special_ids(tokenizer)
    assert (special.pad, special.cls, special.sep, mask_id) == (296, 297, 298, 299)
    rows = encode_labelled(tokenizer, texts[:3], max_len=16)
    assert rows.shape == (3, 16) and (rows[:, 0] == special.cls).all()
    assert "<br />" not in tokenizer.decode(rows[0, 1:].tolist())


def test_a_corrupt_or_foreign_snapshot_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        read_pretraining(path)
    save_pretraining(path, BertForMaskedLM(config()), PretrainConfig(objective="electra"))
    with pytest.raises(ValueError, match="weights do not fit"):
        read_pretraining(path)


@pytest.mark.parametrize("objective", ["mlm", "electra", "next-token"])
def test_pretrain_then_fine_tune_commands(tmp_path: Path, toy_dir: Path, objective: str,
                                          capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "pretrained"
    arguments = [*pretrain_arguments(toy_dir, out), "--objective", objective]
    assert main(arguments) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["data"]["documents"] == 120 + 200, "the unsup copy of a test review is dropped"
    assert results["settings"]["objective"] == objective
    snapshots = sorted(p.name for p in out.glob("snapshot-*.pt"))
    assert snapshots == ["snapshot-0000000.pt", "snapshot-0000004.pt", "snapshot-0000008.pt"]
    capsys.readouterr()
    assert main(arguments) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert main([*arguments, "--resume"]) == 0, "resuming a finished run trains no further"

    tuned = tmp_path / "tuned"
    assert main(["train-imdb", "--data", str(toy_dir), "--out", str(tuned), "--config", "tiny",
                 "--device", "cpu", "--init", str(out / snapshots[-1]), "--no-progress"]) == 0
    tuned_results = json.loads((tuned / "results.json").read_text())
    assert tuned_results["model_config"]["vocab_size"] == 300
    assert tuned_results["model_config"]["pad_id"] == 296
    assert tuned_results["init"]["checkpoint"] == str(out / snapshots[-1])
    assert tuned_results["test"]["examples"] == 40


def test_two_process_ddp_pretraining_on_cpu(tmp_path: Path, toy_dir: Path) -> None:
    out = tmp_path / "ddp"
    result = run_under_torchrun(tmp_path, pretrain_arguments(toy_dir, out))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["world_size"] == 2
    assert results["history"][-1]["windows_seen"] == 8 * 4 * 2
    assert result.stdout.count("wrote") == 1, "only rank 0 reports"


def test_an_interrupted_run_resumes_to_the_same_weights(tmp_path: Path) -> None:
    from scratchformer.train.pretrain import build_pretrainer, pretrain

    stream = torch.randint(996, (3000,), generator=torch.Generator().manual_seed(0)).numpy()
    settings = PretrainConfig(objective="electra", steps=8, batch_size=4, window=24, evals=2,
                              snapshot_halvings=1, precision="fp32")

    def run(out: Path, log=print, resume: bool = False) -> torch.nn.Module:
        torch.manual_seed(0)
        model = build_pretrainer(config(), settings)
        windows = PretrainingWindows(stream, 24, 4, SPECIAL)
        pretrain(model, windows, PretrainingWindows(stream[:500], 24, 4, SPECIAL), settings,
                 MASK, SPECIAL, out, resume=resume, progress=False, log=log)
        return model

    straight = run(tmp_path / "straight")

    def stop_half_way(message: str) -> None:
        if message.startswith("step 4/"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "stopped", log=stop_half_way)
    resumed = run(tmp_path / "stopped", resume=True)
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
