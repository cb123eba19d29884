"""The appendix "Running the models in the browser": the exported models
(`scratchformer.web.export`) compute what the package computes.

Small models, made here, are exported and run with ONNX Runtime: the classifier's
probabilities and per-token contributions within 1e-4 of the package's on 200 reviews, its
attention weights equal to chapter 4's; the GPT's greedy continuations of 20 prompts equal to
`generate`'s token for token, with the cache and without. Then the manifest, and the errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("onnx", reason="the web extra is not installed: pip install '.[web]'")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

from scratchformer.cli.commands import main as scratchformer_main  # noqa: E402
from scratchformer.data.framing import frame_tokens, review_token_lists  # noqa: E402
from scratchformer.data.windows import SPECIAL_TOKENS  # noqa: E402
from scratchformer.io.fingerprint import file_sha256  # noqa: E402
from scratchformer.measure.evaluation import token_contributions  # noqa: E402
from scratchformer.models.bert import (BertConfig, BertForSequenceClassification)  # noqa: E402
from scratchformer.models.gpt import GPTConfig, GPTModel, generate  # noqa: E402
from scratchformer.nn.attention import (padding_mask, scaled_dot_product_attention)  # noqa: E402
from scratchformer.runs.checkpoint import save_checkpoint  # noqa: E402
from scratchformer.tokenize.bpe import BPETokenizer  # noqa: E402
from scratchformer.train.gpt import save_gpt_checkpoint  # noqa: E402
from scratchformer.web.export import ClassifierForWeb, export_web  # noqa: E402
from support.web import reviews, session_of  # noqa: E402

pytestmark = pytest.mark.slow
MAX_LEN = 64
@pytest.fixture(scope="module")
def classifier_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A small mean-pooling classifier, a few training steps on toy reviews, exported."""
    torch.manual_seed(0)
    config = BertConfig(d_model=32, max_len=MAX_LEN, num_layers=2, num_heads=4,
                        d_hidden=64, pooling="mean", dropout=0.0)
    model = BertForSequenceClassification(config)
    texts = reviews(64, seed=1)
    labels = torch.tensor([int("great" in t or "loved" in t) for t in texts])
    ids = torch.tensor([frame_tokens(t, MAX_LEN) for t in review_token_lists(texts)])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(20):
        loss = torch.nn.functional.cross_entropy(model(ids), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    run = tmp_path_factory.mktemp("classifier_run")
    save_checkpoint(run / "best.pt", model.eval(), config)
    results = {"command": "scratchformer train-imdb --data $IMDB_DIR --out runs/tiny",
               "test": {"accuracy": 0.5}}
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    out = run / "web"
    manifest = export_web(run, out)
    return run, manifest


@pytest.fixture(scope="module")
def gpt_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GPTModel, BPETokenizer]:
    torch.manual_seed(0)
    tokenizer = BPETokenizer.train(" ".join(reviews(300, seed=2)), 400,
                                   special_tokens=SPECIAL_TOKENS)
    model = GPTModel(GPTConfig(vocab_size=tokenizer.n_vocab, context_length=64,
                               d_model=32, num_layers=2, num_heads=4)).eval()
    run = tmp_path_factory.mktemp("gpt_run")
    save_gpt_checkpoint(run / "best.pt", model)
    tokenizer.save(run / "tokenizer.json")
    export_web(run / "best.pt", run / "web")
    return run, model, tokenizer


def test_classifier_probabilities_and_contributions_match_on_200_reviews(
        classifier_run: tuple[Path, dict]) -> None:
    from scratchformer.runs.checkpoint import load_checkpoint

    run, _ = classifier_run
    model = load_checkpoint(run)
    texts = reviews(200, seed=3)
    ids = torch.tensor([frame_tokens(t, MAX_LEN) for t in review_token_lists(texts)])
    session = session_of(run / "web" / "model.onnx")
    probabilities, contributions, attention = session.run(None, {"ids": ids.numpy()})
    with torch.no_grad():
        expected = model(ids).softmax(-1).numpy()
    shares = token_contributions(model, ids).numpy()
    assert probabilities.shape == (200, 2) and attention.shape == (200, 2, 4, MAX_LEN,
                                                                      MAX_LEN)
    assert np.abs(probabilities - expected).max() < 1e-4
    assert np.abs(contributions - shares).max() < 1e-4
    assert expected[:, 1].std() > 0.01  # the reviews do not all get one answer
    one = session.run(None, {"ids": ids[:1].numpy()})[0]  # a batch of one, as on the page
    assert np.abs(one - expected[:1]).max() < 1e-4


def test_a_float16_token_table_halves_the_file_and_keeps_the_numbers(
        classifier_run: tuple[Path, dict], capsys: pytest.CaptureFixture) -> None:
    from scratchformer.runs.checkpoint import load_checkpoint

    run, full = classifier_run
    assert scratchformer_main(["export-web", "--checkpoint", str(run), "--out", str(run / "half"),
                               "--float16-tokens"]) == 0
    half = json.loads((run / "half" / "manifest.json").read_text())
    assert (full["token_table"], half["token_table"]) == ("float32", "float16")
    table_bytes = 50260 * 32 * 4  # GPT-2's ids and three specials, 32 wide, float32
    saved = full["files"]["model.onnx"]["bytes"] - half["files"]["model.onnx"]["bytes"]
    assert abs(saved - table_bytes / 2) < 0.01 * table_bytes, "half of the table is saved"
    model = load_checkpoint(run)
    ids = torch.tensor([frame_tokens(t, MAX_LEN) for t in review_token_lists(reviews(50, 4))])
    probabilities = session_of(run / "half" / "model.onnx").run(None, {"ids": ids.numpy()})[0]
    with torch.no_grad():
        expected = model(ids).softmax(-1).numpy()
    assert 0 < np.abs(probabilities - expected).max() < 1e-3, "float16's rounding, and no more"


def test_classifier_attention_weights_are_chapter_4s(
        classifier_run: tuple[Path, dict]) -> None:
    from scratchformer.runs.checkpoint import load_checkpoint

    run, _ = classifier_run
    model = load_checkpoint(run)
    ids = torch.tensor([frame_tokens(t, MAX_LEN)
                        for t in review_token_lists(reviews(20, seed=4))])
    session = session_of(run / "web" / "model.onnx")
    attention = session.run(None, {"ids": ids.numpy()})[2]  # (B, L, H, T, T)
    mask = padding_mask(ids, model.config.pad_id)  # (B, 1, 1, T)
    with torch.no_grad():
        x = model.encoder.embedding(ids)
        for layer, block in enumerate(model.encoder.blocks):
            attn, h = block.attn, block.ln1(x)
            _, weights = scaled_dot_product_attention(
                attn.split_heads(attn.W_query(h)), attn.split_heads(attn.W_key(h)),
                attn.split_heads(attn.W_value(h)), mask)
            assert np.abs(attention[:, layer] - weights.numpy()).max() < 1e-5
            x = block(x, mask)
    assert np.allclose(attention.sum(-1), 1.0, atol=1e-5)
    padded = ~mask[:, 0, 0].numpy()  # (B, T)
    assert (attention.transpose(0, 3, 1, 2, 4)[..., :][:, :, :, :, :] >= 0).all()
    assert all((attention[b, ..., padded[b]] == 0).all() for b in range(len(ids)))


def test_gpt_greedy_continuations_match_generate_with_and_without_the_cache(
        gpt_run: tuple[Path, GPTModel, BPETokenizer]) -> None:
    run, model, tokenizer = gpt_run
    session = session_of(run / "web" / "model.onnx")
    layers, heads = model.config.num_layers, model.config.num_heads
    empty = np.zeros((layers, 1, heads, 0, model.config.d_model // heads), np.float32)
    start = tokenizer.special_ids["<|endoftext|>"]
    for prompt_text in reviews(20, seed=5):
        prompt = [start] + tokenizer.encode(prompt_text)[:20]
        for use_cache in (True, False):
            expected = generate(model, torch.tensor([prompt]), 20, temperature=0,
                                use_cache=use_cache)[0].tolist()
            sequence, unread, keys, values = list(prompt), list(prompt), empty, empty
            for _ in range(20):
                if use_cache:
                    logits, keys, values = session.run(None, {
                        "ids": np.array([unread]), "past_keys": keys, "past_values": values})
                else:
                    logits, keys, _ = session.run(None, {
                        "ids": np.array([sequence]), "past_keys": empty,
                        "past_values": empty})
                unread = [int(logits[0].argmax())]
                sequence += unread
            assert keys.shape[3] == len(sequence) - 1
            assert sequence == expected, (prompt_text, use_cache)


def test_the_manifest_records_the_checkpoint_its_run_and_the_files(
        classifier_run: tuple[Path, dict], gpt_run: tuple) -> None:
    run, manifest = classifier_run
    assert manifest["kind"] == "classifier"
    assert manifest["checkpoint"]["sha256"] == file_sha256(run / "best.pt")
    assert manifest["command"].startswith("scratchformer train-imdb")
    assert manifest["test_accuracy"] == 0.5
    assert json.loads((run / "web" / "manifest.json").read_text()) == manifest
    for name, entry in manifest["files"].items():
        assert entry["bytes"] == (run / "web" / name).stat().st_size
        assert entry["sha256"] == file_sha256(run / "web" / name)
    record = json.loads((run / "web" / "tokenizer.json").read_text())
    assert record["framing"]["max_len"] == MAX_LEN and len(record["tokens"]) == 50256
    gpt_manifest = json.loads((gpt_run[0] / "web" / "manifest.json").read_text())
    assert gpt_manifest["kind"] == "gpt" and "command" not in gpt_manifest
    print({name: e["bytes"] for name, e in manifest["files"].items()},
          {name: e["bytes"] for name, e in gpt_manifest["files"].items()})


def test_the_command_refuses_what_it_cannot_export(
        tmp_path: Path, gpt_run: tuple, capsys: pytest.CaptureFixture) -> None:
    assert scratchformer_main(["export-web", "--checkpoint", str(tmp_path / "missing"), "--out",
                            str(tmp_path / "out")]) == 1
    assert "no checkpoint at" in capsys.readouterr().err
    torch.save({"format": "something else"}, tmp_path / "other.pt")
    assert scratchformer_main(["export-web", "--checkpoint", str(tmp_path / "other.pt"), "--out",
                            str(tmp_path / "out")]) == 1
    assert "neither a classifier checkpoint" in capsys.readouterr().err
    (tmp_path / "damaged.pt").write_bytes(b"not a torch file")
    assert scratchformer_main(["export-web", "--checkpoint", str(tmp_path / "damaged.pt"), "--out",
                            str(tmp_path / "out")]) == 1
    assert "not a readable checkpoint" in capsys.readouterr().err
    (tmp_path / "a_file").write_text("")
    assert scratchformer_main(["export-web", "--checkpoint", str(gpt_run[0]), "--out",
                            str(tmp_path / "a_file")]) == 1
    assert "is a file, not a folder" in capsys.readouterr().err
    assert scratchformer_main(["export-web", "--checkpoint", str(gpt_run[0]), "--out",
                            str(tmp_path / "a_file" / "below")]) == 1
    assert "cannot create the folder" in capsys.readouterr().err
    assert scratchformer_main(["export-web", "--checkpoint", str(gpt_run[0] / "best.pt"), "--out",
                            str(tmp_path / "out"), "--tokenizer",
                            str(tmp_path / "none.json")]) == 1
    assert "no tokenizer at" in capsys.readouterr().err
    assert scratchformer_main(["export-web", "--checkpoint", str(gpt_run[0]), "--out",
                            str(tmp_path / "out"), "--float16-tokens"]) == 1
    assert "a GPT's table is also its output layer" in capsys.readouterr().err


def test_a_classifier_without_exact_contributions_is_refused() -> None:
    model = BertForSequenceClassification(BertConfig(d_model=16, max_len=8, num_layers=1,
                                                     num_heads=2, pooling="cls"))
    with pytest.raises(ValueError, match="mean pooling"):
        ClassifierForWeb(model)
