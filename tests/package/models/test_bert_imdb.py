"""Chapter 10's BERT classifier; chapter 11's training and checkpoints; the appendix "Running it
for real": IMDB loading and encoding, the command line, DDP.

Everything here runs on tiny reviews the tests write themselves; nothing needs IMDB or a network.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import scratchformer.data.framing as framing
import scratchformer.train.presets as presets
import scratchformer.runs.folders as runs
import scratchformer.train.engine as train
from scratchformer.cli.commands import main
from scratchformer.data.batches import ReviewLoader
from scratchformer.data.framing import (CLS_ID, PAD_ID, SEP_ID, VOCAB_SIZE, SpecialIds,
                                        clean_review, encode_review, frame_tokens)
from scratchformer.data.imdb import ReviewSplit, load_imdb
from scratchformer.data.review_cache import encode_reviews, review_tokens
from scratchformer.io.fingerprint import file_sha256
from scratchformer.measure.evaluation import classification_metrics, evaluate
from scratchformer.models.bert import BertConfig, BertForSequenceClassification
from scratchformer.nn.attention import padding_mask
from scratchformer.runs.checkpoint import (load_checkpoint, read_checkpoint,
                                           save_checkpoint)
from scratchformer.train.engine import TrainConfig
from scratchformer.train.loop import classify_texts

from support.runs import run_under_torchrun
from support.toy import tiny_config, toy_loaders, toy_reviews, write_jsonl

@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("toy-imdb")
    write_jsonl(folder / "train.jsonl", toy_reviews(64, seed=1))
    write_jsonl(folder / "test.jsonl", toy_reviews(32, seed=2))
    return folder


# --- special tokens and encoding -------------------------------------------------------------


def test_special_tokens_follow_gpt2_vocabulary() -> None:
    n_vocab = framing.review_encoding().n_vocab
    assert n_vocab == 50257
    assert (PAD_ID, CLS_ID, SEP_ID, VOCAB_SIZE) == (50257, 50258, 50259, 50260)


def test_frame_tokens_pads_short_reviews() -> None:
    assert frame_tokens([5, 6, 7], max_len=8) == [CLS_ID, 5, 6, 7, SEP_ID, PAD_ID, PAD_ID, PAD_ID]
    assert frame_tokens([], max_len=3) == [CLS_ID, SEP_ID, PAD_ID]
    assert frame_tokens([1, 2, 3, 4, 5, 6], max_len=8, truncation="head") == [CLS_ID, 1, 2, 3, 4, 5, 6, SEP_ID]


def test_truncation_head_and_head_plus_tail() -> None:
    tokens = list(range(100, 120))  # 20 tokens into a budget of 10
    assert frame_tokens(tokens, max_len=12, truncation="head") == [CLS_ID, *range(100, 110), SEP_ID]
    # head+tail: a quarter of the budget (2) from the front, the other 8 from the end
    assert frame_tokens(tokens, max_len=12, truncation="head+tail") == [CLS_ID, 100, 101, *range(112, 120), SEP_ID]


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.lists(st.integers(0, 50256), max_size=80),
    max_len=st.integers(3, 64),
    truncation=st.sampled_from(["head", "head+tail"]),
)
def test_frame_tokens_properties(tokens: list[int], max_len: int, truncation: str) -> None:
    framed = frame_tokens(tokens, max_len, truncation)
    assert len(framed) == max_len
    assert framed[0] == CLS_ID and framed.count(CLS_ID) == 1 and framed.count(SEP_ID) == 1
    body = framed[1 : framed.index(SEP_ID)]
    assert all(i == PAD_ID for i in framed[framed.index(SEP_ID) + 1 :])
    budget = max_len - 2
    if len(tokens) <= budget:
        assert body == tokens
    else:
        head = budget // 4 if truncation == "head+tail" else budget
        assert len(body) == budget and body[:head] == tokens[:head]
        if truncation == "head+tail":
            assert body[head:] == tokens[len(tokens) - (budget - head) :]


@pytest.mark.parametrize(("max_len", "truncation", "match"), [(2, "head", "at least 3"), (8, "tail", "truncation")])
def test_frame_tokens_rejects_bad_settings(max_len: int, truncation: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        frame_tokens([1, 2], max_len, truncation)


def test_encode_review_cleans_line_breaks_and_uses_gpt2() -> None:
    assert clean_review("Good.<br /><br />Bad.<BR>") == "Good.  Bad. "
    ids = encode_review("Hello world", max_len=6)
    assert ids == [CLS_ID, 15496, 995, SEP_ID, PAD_ID, PAD_ID]  # GPT-2: "Hello", " world"


def attention_mask(ids: torch.Tensor) -> torch.Tensor:
    """`(B, T)`: True at real tokens, from chapter 6's padding mask."""
    return padding_mask(ids, PAD_ID)[:, 0, 0]


def test_frame_tokens_takes_any_special_ids() -> None:
    special = SpecialIds(pad=0, cls=1, sep=2)
    assert frame_tokens([7, 8], max_len=6, special=special) == [1, 7, 8, 2, 0, 0]
    assert frame_tokens([7, 8, 9, 10, 11], max_len=5, truncation="head", special=special) == [1, 7, 8, 9, 2]


def test_model_builds_its_mask_from_pad_id() -> None:
    config = tiny_config(vocab_size=20, pad_id=0)
    model = BertForSequenceClassification(config).eval()
    ids = torch.tensor([[1, 5, 6, 2, 0, 0]])
    with torch.no_grad():
        assert torch.equal(model(ids), model(ids, ids != 0))
        noisy = ids.clone()
        noisy[0, 4:] = 7
        assert torch.allclose(model(noisy, ids != 0), model(ids), atol=1e-6)


def test_attention_mask_marks_real_tokens() -> None:
    ids = torch.tensor([encode_review("Hello world", max_len=6)])
    assert attention_mask(ids).tolist() == [[True, True, True, True, False, False]]


def test_encode_reviews_matches_encode_review_and_uses_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    split = toy_reviews(12, seed=3)
    ids, labels = encode_reviews(split, max_len=16, truncation="head+tail", cache_dir=tmp_path)
    assert ids.shape == (12, 16) and labels.tolist() == split.labels
    for row, text in zip(ids.tolist(), split.texts):
        assert row == encode_review(text, max_len=16, truncation="head+tail")
    (cache_file,) = tmp_path.glob("imdb-tokens-*.npz")
    assert not list(tmp_path.glob("*.tmp")), "the cache is written atomically"

    def no_tokenizer() -> None:
        raise AssertionError("tokenized again although the cache holds these reviews")

    monkeypatch.setattr(framing, "review_encoding", no_tokenizer)
    again, _ = encode_reviews(split, max_len=16, cache_dir=tmp_path)
    assert torch.equal(again, ids)
    head_only, _ = encode_reviews(split, max_len=8, truncation="head", cache_dir=tmp_path)
    assert head_only.shape == (12, 8), "a different framing reuses the cached tokens"


def test_cache_key_follows_the_data_and_a_damaged_cache_is_rebuilt(tmp_path: Path) -> None:
    split = toy_reviews(6, seed=4)
    first = review_tokens(split, tmp_path)
    changed = ReviewSplit([split.texts[0] + " more"] + split.texts[1:], split.labels)
    review_tokens(changed, tmp_path)
    assert len(list(tmp_path.glob("imdb-tokens-*.npz"))) == 2
    for path in tmp_path.glob("imdb-tokens-*.npz"):
        path.write_bytes(b"not a zip file")
    rebuilt = review_tokens(split, tmp_path)
    assert [t.tolist() for t in rebuilt] == [t.tolist() for t in first]


def test_fingerprint_depends_on_texts_and_labels_only() -> None:
    split = toy_reviews(4, seed=5)
    same = ReviewSplit(list(split.texts), list(split.labels), "elsewhere")
    flipped = ReviewSplit(list(split.texts), [1 - label for label in split.labels])
    assert split.fingerprint() == same.fingerprint() != flipped.fingerprint()


# --- loading ---------------------------------------------------------------------------------


def test_load_jsonl_and_gzip(tmp_path: Path, toy_dir: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl.gz", toy_reviews(10, seed=1))
    write_jsonl(tmp_path / "test.jsonl", toy_reviews(6, seed=2))
    data = load_imdb(tmp_path)
    assert len(data["train"]) == 10 and len(data["test"]) == 6
    assert data["train"].texts == toy_reviews(10, seed=1).texts
    assert load_imdb(toy_dir)["test"].labels == toy_reviews(32, seed=2).labels


def test_load_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    for split, seed in (("train", 1), ("test", 2)):
        reviews = toy_reviews(5, seed)
        pq.write_table(pa.table({"text": reviews.texts, "label": reviews.labels}), tmp_path / f"{split}-00000-of-00001.parquet")
    data = load_imdb(tmp_path)
    assert data["test"].texts == toy_reviews(5, seed=2).texts


def test_load_official_aclimdb_layout(tmp_path: Path) -> None:
    for split in ("train", "test"):
        for label, name in enumerate(("neg", "pos")):
            folder = tmp_path / "aclImdb" / split / name
            folder.mkdir(parents=True)
            for i in range(3):
                (folder / f"{i}_{7 if label else 2}.txt").write_text(f"{name} review {i}", encoding="utf-8")
    data = load_imdb(tmp_path)
    assert data["train"].labels == [0, 0, 0, 1, 1, 1]
    assert data["test"].texts[3] == "pos review 0"
    assert load_imdb(tmp_path / "aclImdb")["train"].texts == data["train"].texts


def test_imdb_dir_environment_variable(monkeypatch: pytest.MonkeyPatch, toy_dir: Path) -> None:
    monkeypatch.setenv("IMDB_DIR", str(toy_dir))
    assert len(load_imdb()["train"]) == 64


def test_offline_without_files_says_how_to_point_at_them(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(name: str) -> None:
        raise ConnectionError(f"cannot reach the hub for {name}")

    monkeypatch.delenv("IMDB_DIR", raising=False)
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=offline))
    with pytest.raises(RuntimeError, match=r"ConnectionError.*IMDB_DIR=/path/to/imdb.*aclImdb"):
        load_imdb()


def test_loading_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a folder"):
        load_imdb(tmp_path / "missing")
    write_jsonl(tmp_path / "train.jsonl", toy_reviews(4, seed=1))
    with pytest.raises(FileNotFoundError, match="no test split"):
        load_imdb(tmp_path)
    for row, said in [('{"text": "fine", "label": 3}', "'label' must be 0 (negative) or 1 (positive), found 3"),
                      ('{"text": "fine", "label": [1]}', "'label' must be 0 (negative) or 1 (positive), found [1]"),
                      ('{"text": "fine", "label": {"x": 1}}', "'label' must be 0 (negative) or 1 (positive), "
                                                              'found {"x": 1}'),
                      ('{"text": "fine", "label": true}', "'label' must be 0 (negative) or 1 (positive), found true"),
                      ('{"text": ["fine"], "label": 1}', "'text' must be a string, found [\"fine\"]"),
                      ("[" * 100_000 + "]" * 100_000, "not a line of JSON (nested too deeply)")]:
        (tmp_path / "test.jsonl").write_text('{"text": "good", "label": 1}\n' + row + "\n")
        with pytest.raises(ValueError) as refused:
            load_imdb(tmp_path)
        assert str(refused.value) == f"{tmp_path / 'test.jsonl'}:2: {said}"
    with pytest.raises(ValueError, match=r"labels must be 0 .* or 1 .*found \['3', '\[1\]'\]"):
        ReviewSplit(["a", "b"], [[1], 3], "made in memory")
    (tmp_path / "test.jsonl").write_text('{"text": "fine", "label": 1}\n{"review": "no text key"}\n')
    with pytest.raises(ValueError, match=r"test\.jsonl:2: expected a JSON object with 'text' and 'label'"):
        load_imdb(tmp_path)


# --- the model ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"d_model": 256, "num_heads": 6}, r"d_model \(256\) must be divisible by num_heads \(6\)"),
        ({"num_layers": -1}, "num_layers must be an integer of at least 0"),
        ({"d_model": 2.5}, "d_model must be an integer of at least 1"),
        ({"dropout": 1.0}, r"dropout must be in \[0, 1\)"),
        ({"pad_id": 50260}, "pad_id"),
        ({"pooling": "max"}, "pooling must be one of"),
        ({"impl": "flash"}, r"impl must be one of \('explicit', 'sdpa'\)"),
    ],
)
def test_bert_config_refuses_invalid_combinations(changes: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        BertConfig(**changes)


def test_bert_config_defaults_are_the_corrected_source_model() -> None:
    config = BertConfig()
    assert (config.vocab_size, config.d_model, config.num_layers, config.num_heads, config.d_hidden) == (
        VOCAB_SIZE, 256, 4, 4, 1024)
    model = BertForSequenceClassification(config)
    assert len(model.encoder.blocks) == config.num_layers == 4


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_model_shapes(device: torch.device, pooling: str) -> None:
    torch.manual_seed(0)
    model = BertForSequenceClassification(tiny_config(pooling=pooling), num_classes=3).to(device).eval()
    ids = torch.randint(0, 50257, (4, 10), device=device)
    mask = torch.ones_like(ids, dtype=torch.bool)
    assert model.encoder(ids, mask).shape == (4, 10, 16)
    assert model(ids, mask).shape == (4, 3)
    assert model(ids, mask.long()).shape == (4, 3), "a 0/1 integer mask works too"


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_padded_positions_change_no_logit(device: torch.device, pooling: str) -> None:
    torch.manual_seed(0)
    model = BertForSequenceClassification(tiny_config(pooling=pooling)).to(device).eval()
    ids = torch.tensor([frame_tokens([10, 20, 30], 12), frame_tokens([40, 50, 60, 70, 80, 90], 12)], device=device)
    mask = attention_mask(ids)
    noisy = ids.clone()
    noisy[~mask] = torch.randint(0, 50257, (int((~mask).sum()),), device=device)
    with torch.no_grad():
        torch.testing.assert_close(model(noisy, mask), model(ids, mask), atol=1e-5, rtol=1e-5)
        cut = model(ids[:1, :5], mask[:1, :5])
    torch.testing.assert_close(cut, model(ids, mask)[:1], atol=1e-5, rtol=1e-5, msg="padding can also be cut off")


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_sdpa_and_explicit_attention_give_the_same_logits(device: torch.device, pooling: str) -> None:
    explicit = BertForSequenceClassification(tiny_config(pooling=pooling)).to(device).eval()
    fused = BertForSequenceClassification(tiny_config(pooling=pooling, impl="sdpa")).to(device).eval()
    fused.load_state_dict(explicit.state_dict())
    assert all(block.attn.impl == "sdpa" for block in fused.encoder.blocks)
    ids = torch.tensor([frame_tokens([10, 20, 30], 12), frame_tokens(list(range(40, 52)), 12)], device=device)
    mask = attention_mask(ids)
    with torch.no_grad():
        torch.testing.assert_close(fused(ids, mask), explicit(ids, mask), atol=1e-5, rtol=1e-5)


def test_gpu_preset_trains_with_the_fused_attention() -> None:
    assert presets.preset("gpu")[0].impl == "sdpa"


def test_model_input_errors(device: torch.device) -> None:
    model = BertForSequenceClassification(tiny_config()).to(device)
    ids = torch.zeros(2, 40, dtype=torch.long, device=device)
    with pytest.raises(ValueError, match=r"max_len=32"):
        model(ids, torch.ones_like(ids))
    with pytest.raises(ValueError, match="attention_mask"):
        model(ids[:, :8], torch.ones(2, 7, device=device))
    with pytest.raises(ValueError, match=r"must lie in \[0, 50260\)"):
        model(torch.full((1, 4), 50260, device=device), torch.ones(1, 4, device=device))


# --- measuring ----------------------------------------------------------------------------------


def test_classification_metrics_golden() -> None:
    # 10 negatives: 8 right; 10 positives: 9 right.
    metrics = classification_metrics(torch.tensor([[8, 2], [1, 9]]), loss_sum=5.0)
    assert metrics["accuracy"] == pytest.approx(17 / 20, abs=1e-12)
    assert metrics["loss"] == pytest.approx(0.25, abs=1e-12)
    negative, positive = metrics["per_class"]["negative"], metrics["per_class"]["positive"]
    assert negative["precision"] == pytest.approx(8 / 9, abs=1e-12) and negative["recall"] == pytest.approx(0.8, abs=1e-12)
    assert positive["precision"] == pytest.approx(9 / 11, abs=1e-12) and positive["recall"] == pytest.approx(0.9, abs=1e-12)
    assert positive["f1"] == pytest.approx(2 * (9 / 11) * 0.9 / (9 / 11 + 0.9), abs=1e-12)
    assert metrics["confusion_matrix"] == [[8, 2], [1, 9]] and negative["support"] == 10


def test_review_loader_batches(tmp_path: Path) -> None:
    ids, labels = encode_reviews(toy_reviews(21, seed=6), max_len=32, cache_dir=tmp_path)
    plain = list(ReviewLoader(ids, labels, batch_size=4, length_multiple=1))
    assert len(plain) == 6 and torch.cat([b[2] for b in plain]).tolist() == labels.tolist()
    for batch_ids, mask, _ in plain:
        assert batch_ids.shape[1] == int(mask.sum(1).max()), "each batch is cut to its longest review"
    for batch_ids, mask, _ in ReviewLoader(ids, labels, batch_size=4, length_multiple=8):
        longest = int(mask.sum(1).max())
        assert batch_ids.shape[1] == min(32, -(-longest // 8) * 8), "... rounded up to a multiple"
        assert torch.equal(batch_ids[:, longest:], torch.full_like(batch_ids[:, longest:], PAD_ID))
    loader = ReviewLoader(ids, labels, batch_size=4, shuffle=True, seed=3, length_groups=2)
    first = [b.tolist() for b in loader.batch_indices()]
    loader.set_epoch(1)
    second = [b.tolist() for b in loader.batch_indices()]
    loader.set_epoch(0)
    assert [b.tolist() for b in loader.batch_indices()] == first != second
    assert sorted(sum(first, [])) == list(range(21))
    shards = [ReviewLoader(ids, labels, 4, shuffle=True, seed=3, rank=r, world_size=2) for r in range(2)]
    parts = [sum((b.tolist() for b in s.batch_indices()), []) for s in shards]
    assert len(shards[0]) == len(shards[1]) == 3 and not set(parts[0]) & set(parts[1])
    evals = [ReviewLoader(ids, labels, 4, length_groups=1, rank=r, world_size=2) for r in range(2)]
    assert sorted(sum((b.tolist() for s in evals for b in s.batch_indices()), [])) == list(range(21))


# --- training, checkpoints, resuming ------------------------------------------------------------


def test_training_lowers_the_loss(tmp_path: Path, device: torch.device) -> None:
    torch.manual_seed(0)
    model = BertForSequenceClassification(tiny_config(pooling="mean")).to(device)
    fit, val = toy_loaders(tmp_path)
    before = evaluate(model, fit)["loss"]
    history = train.train(model, fit, val, TrainConfig(epochs=8, batch_size=16, lr=1e-2, val_size=16), progress=False,
                          log=lambda message: None)
    after = evaluate(model, fit)["loss"]
    assert len(history) == 8 and history[-1]["step"] == 8 * len(fit)
    assert after < 0.5 * before, (before, after)
    assert history[-1]["train_accuracy"] > 0.9


def test_checkpoint_round_trip_gives_identical_logits(tmp_path: Path, device: torch.device) -> None:
    torch.manual_seed(0)
    config = tiny_config(pooling="cls")
    model = BertForSequenceClassification(config).to(device).eval()
    save_checkpoint(tmp_path / "model.pt", model, config, truncation="head")
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"], "no temporary file is left behind"
    loaded = load_checkpoint(tmp_path / "model.pt", device)
    assert loaded.config == config and not loaded.training
    ids = torch.tensor([frame_tokens([1, 2, 3], 10), frame_tokens(list(range(50)), 10)], device=device)
    with torch.no_grad():
        assert torch.equal(loaded(ids, attention_mask(ids)), model(ids, attention_mask(ids)))
    assert read_checkpoint(tmp_path / "model.pt")["truncation"] == "head"


def test_bad_checkpoints_give_clear_errors(tmp_path: Path) -> None:
    config = tiny_config()
    save_checkpoint(tmp_path / "good.pt", BertForSequenceClassification(config), config)
    data = (tmp_path / "good.pt").read_bytes()
    (tmp_path / "truncated.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated.pt is not a readable checkpoint: truncated, damaged"):
        load_checkpoint(tmp_path / "truncated.pt")
    torch.save({"weights": torch.zeros(3)}, tmp_path / "foreign.pt")
    with pytest.raises(ValueError, match="not a scratchformer classifier checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")
    (tmp_path / "text.pt").write_text("hello")
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_checkpoint(tmp_path / "text.pt")
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_checkpoint(tmp_path / "nothing-here")


class CrashOnSecondPass:
    """A validation loader that fails the second time it is read: a run killed in epoch 2."""

    def __init__(self, loader: ReviewLoader) -> None:
        self.loader, self.passes = loader, 0

    def __iter__(self):
        self.passes += 1
        if self.passes == 2:
            raise KeyboardInterrupt("stopped during epoch 2")
        return iter(self.loader)


def test_resume_continues_from_the_saved_step(tmp_path: Path, device: torch.device) -> None:
    config = TrainConfig(epochs=2, batch_size=16, lr=1e-2, val_size=16)
    quiet = {"progress": False, "log": lambda message: None}

    def fresh() -> BertForSequenceClassification:
        torch.manual_seed(0)
        return BertForSequenceClassification(tiny_config(dropout=0.1, pooling="mean")).to(device)

    fit, val = toy_loaders(tmp_path / "cache")
    torch.manual_seed(1)
    straight = fresh()
    full = train.train(straight, fit, val, config, tmp_path / "straight", **quiet)

    torch.manual_seed(1)
    with pytest.raises(KeyboardInterrupt):
        train.train(fresh(), fit, CrashOnSecondPass(val), config, tmp_path / "resumed", **quiet)
    saved = read_checkpoint(tmp_path / "resumed" / "last.pt")["training"]
    assert saved["epoch"] == 1 and saved["step"] == len(fit)
    resumed = fresh()
    history = train.train(resumed, fit, val, config, tmp_path / "resumed", resume=True, **quiet)
    assert [r["step"] for r in history] == [len(fit), 2 * len(fit)]
    for a, b in zip(resumed.state_dict().values(), straight.state_dict().values()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    assert [r["val_accuracy"] for r in history] == [r["val_accuracy"] for r in full]
    with pytest.raises(ValueError, match="cannot resume"):
        train.train(fresh(), fit, val, TrainConfig(epochs=3, batch_size=16, lr=1e-2, val_size=16),
                    tmp_path / "resumed", resume=True, **quiet)


# --- the command line, alone and under torchrun -------------------------------------------------


def test_cli_trains_tests_saves_and_classifies(tmp_path: Path, toy_dir: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    args = ["train-imdb", "--data", str(toy_dir), "--out", str(out), "--config", "tiny", "--epochs", "3",
            "--device", "cpu", "--cache", str(tmp_path / "cache"), "--no-progress"]
    assert main(args) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["command"].startswith("scratchformer train-imdb --data")
    assert results["data"]["splits"]["train"]["reviews"] == 64
    assert results["data"]["splits"]["test"]["file_sha256"] == file_sha256(toy_dir / "test.jsonl")
    assert len(results["history"]) == 3 and results["test"]["examples"] == 32
    assert sum(map(sum, results["test"]["confusion_matrix"])) == 32
    assert set(results["seconds"]) == {"prepare_data", "train", "test", "total"}
    capsys.readouterr()
    assert main(["classify", "--checkpoint", str(out), "--json", "a great wonderful film", "boring and awful"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [row["label"] in ("negative", "positive") for row in printed] == [True, True]
    assert sum(printed[0]["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)
    model = load_checkpoint(out)
    assert classify_texts(model, ["a great wonderful film"])[0]["label"] == printed[0]["label"]


def test_console_script_is_installed(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("scratchformer")
    if not script.exists():
        pytest.skip("the scratchformer console script is not installed in this environment (pip install -e .)")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "train-imdb" in result.stdout and "classify" in result.stdout


def test_two_process_ddp_run_on_cpu(tmp_path: Path, toy_dir: Path) -> None:
    out = tmp_path / "ddp"
    result = run_under_torchrun(tmp_path, [
        "train-imdb", "--data", str(toy_dir), "--out", str(out), "--config", "tiny",
        "--device", "cpu", "--cache", str(tmp_path / "cache"), "--threads", "1", "--no-progress"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["world_size"] == 2
    assert results["test"]["examples"] == 32, "the two processes' test shards add up to the whole split"
    assert results["history"][-1]["step"] == 2 * 3  # 56 reviews in batches of 8: 6 per epoch for 2 processes
    assert result.stdout.count("test accuracy") == 1, "only rank 0 reports"
    model = load_checkpoint(out)
    assert isinstance(model, BertForSequenceClassification)


def test_cli_overrides_and_errors(tmp_path: Path, toy_dir: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    base = ["train-imdb", "--data", str(toy_dir), "--out", str(out), "--config", "tiny", "--device", "cpu",
            "--cache", str(tmp_path / "cache"), "--no-progress"]
    assert main([*base, "--set", "d_model=8", "--set", "lr=0.02", "--epochs", "1", "--no-test"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["model_config"]["d_model"] == 8 and results["train_config"]["lr"] == 0.02
    assert results["test"] is None, "--no-test never evaluates the test split"
    capsys.readouterr()
    assert main([*base, "--set", "colour=blue"]) == 2
    assert "KEY a field of BertConfig or TrainConfig" in capsys.readouterr().err
    assert main([*base, "--set", "num_heads=3"]) == 2
    assert "must be divisible by num_heads (3)" in capsys.readouterr().err
    assert main(["classify", "--checkpoint", str(tmp_path / "missing"), "text"]) == 2
    assert "no checkpoint at" in capsys.readouterr().err
