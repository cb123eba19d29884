"""Chapter 11, "Reading the whole review": a review cut into windows, each read alone, and
the windows' logits weighted by their real tokens; the loader's `(B, K, T)` batches, training,
checkpoints, `classify` and the command line with `truncation="windows"`.

Everything here runs on reviews the tests make themselves; nothing needs IMDB or a network.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
import torch
from torch import Tensor

from scratchformer.cli.commands import main
from scratchformer.data.batches import ReviewLoader, WindowedReviews
from scratchformer.data.framing import CLS_ID, PAD_ID, SEP_ID, frame_tokens, review_token_lists
from scratchformer.data.imdb import ReviewSplit
from scratchformer.data.review_cache import encode_reviews, review_tokens
from scratchformer.data.review_windows import READINGS, review_windows
from scratchformer.measure.evaluation import evaluate, logits_of, whole_review_logits
from scratchformer.models.bert import BertConfig, BertForSequenceClassification
from scratchformer.runs.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from scratchformer.runs.folders import loader_fingerprint
from scratchformer.train.classify import load_classifier
from scratchformer.train.engine import TrainConfig, train
from scratchformer.train.loop import classify_texts

WORDS = ["the", "movie", "plot", "was", "a", "and", "scene", "great", "awful", "boring", "superb"]


def tiny_model(max_len: int = 32, pooling: str = "mean") -> BertForSequenceClassification:
    torch.manual_seed(0)
    config = BertConfig(d_model=16, num_layers=2, num_heads=2, d_hidden=32, max_len=max_len,
                        dropout=0.0, pooling=pooling)
    return BertForSequenceClassification(config).eval()


def reviews(count: int, seed: int, longest: int = 120) -> ReviewSplit:
    """Reviews of 1 to `longest` words, labelled by whether "great" or "superb" occurs."""
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(1, longest))) for _ in range(count)]
    return ReviewSplit(texts, [int("great" in t or "superb" in t) for t in texts], "toy")


def batch_of(windows: list[list[list[int]]]) -> tuple[Tensor, Tensor]:
    """`(B, K, T)` ids and mask of reviews given as their windows, at full width."""
    ids = WindowedReviews.from_reviews(windows).batch(torch.arange(len(windows)), 10**6)
    return ids, ids != PAD_ID


# --- the windows of one review ------------------------------------------------------------------


def test_windows_of_a_600_token_review() -> None:
    tokens = list(range(1000, 1600))  # 600 tokens: 254 + 254 + 92
    windows = review_windows(tokens)
    assert len(windows) == 3 and all(len(w) == 256 for w in windows)
    assert windows[0][:2] == [CLS_ID, 1000] and windows[0][-2:] == [1253, SEP_ID]
    assert windows[1][:2] == [CLS_ID, 1254] and windows[1][-2:] == [1507, SEP_ID]
    assert windows[2][:2] == [CLS_ID, 1508] and windows[2][92:94] == [1599, SEP_ID]
    assert windows[2][94:] == [PAD_ID] * 162
    assert [i for w in windows for i in w if i not in (CLS_ID, SEP_ID, PAD_ID)] == tokens


def test_window_borders_short_and_empty_reviews() -> None:
    assert [len(review_windows(list(range(n)), max_len=8)) for n in (0, 1, 6, 7, 12, 13)] == \
        [1, 1, 1, 2, 2, 3]
    assert review_windows([], max_len=5) == [[CLS_ID, SEP_ID, PAD_ID, PAD_ID, PAD_ID]]
    short = list(range(100, 130))
    assert review_windows(short, max_len=32) == [frame_tokens(short, 32, "head+tail")]
    assert review_windows([7, 8, 9], max_len=3) == [[CLS_ID, i, SEP_ID] for i in (7, 8, 9)]
    with pytest.raises(ValueError, match="max_len must be at least 3"):
        review_windows([1, 2], max_len=2)


# --- the logits of a review read in windows -----------------------------------------------------


def test_whole_review_logits_are_mean_pooling_over_every_token(device: torch.device) -> None:
    model = tiny_model().to(device)
    lengths = [70, 20, 30, 0]  # 3, 1, 1 (exactly full) and 1 (empty) windows of 30 tokens
    rng = random.Random(0)
    token_lists = [[rng.randrange(50_257) for _ in range(n)] for n in lengths]
    ids, mask = batch_of([review_windows(t, 32) for t in token_lists])
    assert ids.shape == (4, 3, 32) and mask.sum(-1).tolist() == [[32, 32, 12], [22, 0, 0],
                                                                [32, 0, 0], [2, 0, 0]]
    with torch.no_grad():
        got = whole_review_logits(model, ids.to(device), mask.to(device))
        direct = []
        for review_ids, review_mask in zip(ids.to(device), mask.to(device)):
            vectors = torch.cat([model.encoder(w[None], m[None])[0][m]
                                 for w, m in zip(review_ids, review_mask) if m.any()])
            direct.append(model.classifier(vectors.mean(dim=0)))  # (classes,)
    assert got.shape == (4, 2)
    torch.testing.assert_close(got, torch.stack(direct), atol=1e-5, rtol=0)


def test_one_window_gives_exactly_the_head_plus_tail_logits(device: torch.device) -> None:
    model = tiny_model().to(device)
    tokens = list(range(500, 525))
    framed = torch.tensor([frame_tokens(tokens, 32)], device=device)  # (1, T)
    with torch.no_grad():
        windows = whole_review_logits(model, framed[:, None], framed[:, None] != PAD_ID)
        assert torch.equal(windows, model(framed).float())
        assert torch.equal(logits_of(model, framed), model(framed))


class FirstToken(torch.nn.Module):
    """Logits (0, first token after [CLS]) for each window it reads; counts the windows."""

    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def forward(self, ids: Tensor, mask: Tensor) -> Tensor:
        self.read += len(ids)
        return torch.stack([torch.zeros(len(ids)), ids[:, 1].float()], dim=1)


def test_window_weights_golden() -> None:
    stub = FirstToken()
    ids, mask = batch_of([review_windows(list(range(1, 71)), 32),  # windows of 32, 32, 12
                          review_windows([5], 32)])
    logits = whole_review_logits(stub, ids, mask)
    assert stub.read == 4, "the two all-padding windows of the second review are not read"
    expected = (32 * 1 + 32 * 31 + 12 * 61) / 76  # 23.105263...
    assert logits[0, 1].item() == pytest.approx(expected, abs=1e-5)
    assert logits[1].tolist() == [0.0, 5.0] and logits[0, 0].item() == 0.0


def test_wrong_shapes_are_refused() -> None:
    model = tiny_model()
    ids = torch.tensor([frame_tokens([1, 2, 3], 32)])  # (1, T)
    with pytest.raises(ValueError, match=r"need ids and attention_mask \(B, K, T\), got \(1, 32\)"):
        whole_review_logits(model, ids, ids != PAD_ID)
    with pytest.raises(ValueError, match=r"got \(1, 1, 32\) and \(1, 32\)"):
        whole_review_logits(model, ids[:, None], ids != PAD_ID)
    with pytest.raises(ValueError, match="need their attention_mask"):
        logits_of(model, ids[:, None])


# --- windows through the cache and the loader -----------------------------------------------------


def test_encode_reviews_stores_the_windows_flat(tmp_path: Path) -> None:
    split = reviews(30, seed=1)
    windowed, labels = encode_reviews(split, max_len=16, truncation="windows", cache_dir=tmp_path)
    assert isinstance(windowed, WindowedReviews) and len(windowed) == 30
    assert labels.tolist() == split.labels
    tokens = review_tokens(split, tmp_path)
    expected = [review_windows(t.tolist(), 16) for t in tokens]
    assert windowed.windows.shape == (sum(map(len, expected)), 16)
    assert windowed.windows.tolist() == [w for ws in expected for w in ws]
    assert windowed.lengths.tolist() == [len(t) + 2 * len(ws) for t, ws in zip(tokens, expected)]
    picked = windowed[torch.tensor([4, 0])]
    assert len(picked) == 2 and picked.windows.tolist() == expected[4] + expected[0]


def test_loader_gives_windowed_batches(tmp_path: Path) -> None:
    split = reviews(21, seed=2)
    windowed, labels = encode_reviews(split, max_len=16, truncation="windows", cache_dir=tmp_path)
    framed, _ = encode_reviews(split, max_len=16, cache_dir=tmp_path)
    counts = windowed.offsets.diff()
    plain = list(ReviewLoader(windowed, labels, batch_size=4, length_multiple=8))
    assert len(plain) == 6 and torch.cat([b[2] for b in plain]).tolist() == split.labels
    for number, (ids, mask, _) in enumerate(plain):
        index = torch.arange(4 * number, min(4 * number + 4, 21))
        assert ids.shape[:2] == (len(index), int(counts[index].max()))
        assert ids.shape[2] == min(16, -(-int(mask.sum(-1).max()) // 8) * 8)
        assert torch.equal(mask, ids != PAD_ID) and mask.dtype == torch.bool
        assert mask.sum((1, 2)).tolist() == windowed.lengths[index].tolist()
        empty = mask.sum(-1) == 0  # all-padding windows come after a review's own
        assert empty.tolist() == [[k >= int(counts[i]) for k in range(ids.shape[1])]
                                  for i in index.tolist()]
    for groups in (0, 2):
        loaders = [ReviewLoader(ids, labels, 4, shuffle=True, seed=3, length_groups=groups)
                   for ids in (windowed, framed)]
        for epoch in (0, 1):
            for loader in loaders:
                loader.set_epoch(epoch)
            batches = [[b.tolist() for b in loader.batch_indices()] for loader in loaders]
            if groups == 0:  # same seed, same epoch: the same batches
                assert batches[0] == batches[1]
            assert [sorted(sum(b, [])) for b in batches] == [list(range(21))] * 2
    shards = [ReviewLoader(windowed, labels, 4, shuffle=True, seed=3, rank=r, world_size=2)
              for r in range(2)]
    assert len(shards[0]) == len(shards[1]) == 3
    assert loader_fingerprint(shards[0]) != loader_fingerprint(
        ReviewLoader(windowed[torch.arange(20)], labels[:20], 4))
    with pytest.raises(ValueError, match="need labels"):
        ReviewLoader(windowed, labels[:5], 4)


def test_training_and_evaluating_on_windows(tmp_path: Path) -> None:
    split = reviews(48, seed=3, longest=60)
    windowed, labels = encode_reviews(split, max_len=16, truncation="windows", cache_dir=tmp_path)
    fit = ReviewLoader(windowed[torch.arange(40)], labels[:40], 8, shuffle=True, seed=0)
    val = ReviewLoader(windowed[torch.arange(40, 48)], labels[40:], 8)
    model = tiny_model(max_len=16)
    config = TrainConfig(epochs=2, batch_size=8, lr=1e-2, val_size=8, truncation="windows")
    history = train(model, fit, val, config, tmp_path / "run", progress=False,
                    log=lambda message: None)
    assert len(history) == 2 and history[-1]["step"] == 10
    assert read_checkpoint(tmp_path / "run" / "best.pt")["truncation"] == "windows"
    loaded = load_checkpoint(tmp_path / "run")
    best = max(history, key=lambda record: record["val_accuracy"])
    assert evaluate(loaded, val)["loss"] == pytest.approx(best["val_loss"], abs=1e-9)
    with pytest.raises(ValueError, match=r"truncation must be one of \('head', 'head\+tail', "
                                         r"'windows'\), got 'tail'"):
        TrainConfig(truncation="tail")
    assert READINGS == ("head", "head+tail", "windows")


# --- classifying, saved and loaded -------------------------------------------------------------------


def test_a_token_in_the_middle_counts_only_when_read_in_windows(tmp_path: Path) -> None:
    model = tiny_model()
    before = "the movie was a " * 87 + "superb"  # 349 tokens; the 350th differs; 350 more
    texts = [before + word + " scene" * 350 for word in (" awful", " great")]
    assert [len(t) for t in review_token_lists(texts)] == [700, 700]
    windows = [r["probabilities"]["positive"] for r in classify_texts(model, texts, "windows")]
    cut = [r["probabilities"]["positive"] for r in classify_texts(model, texts, "head+tail")]
    assert cut[0] == cut[1], "head+tail never reads token 350 of 700"
    assert abs(windows[0] - windows[1]) > 1e-6
    save_checkpoint(tmp_path / "best.pt", model, model.config, "windows")
    verdicts = load_classifier(tmp_path / "best.pt", torch.device("cpu"))(texts)
    assert [v["probabilities"]["positive"] for v in verdicts] == pytest.approx(windows, abs=1e-6)


# --- the command line ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("toy-imdb-windows")
    for name, split in (("train", reviews(64, seed=4)), ("test", reviews(32, seed=5))):
        with gzip.open(folder / f"{name}.jsonl.gz", "wt", encoding="utf-8") as handle:
            for text, label in zip(split.texts, split.labels):
                handle.write(json.dumps({"text": text, "label": label}) + "\n")
    return folder


def test_cli_trains_on_windows_and_classify_reads_them(
        tmp_path: Path, toy_dir: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    assert main(["train-imdb", "--data", str(toy_dir), "--out", str(out), "--config", "tiny",
                 "--set", "truncation=windows", "--epochs", "1", "--limit", "48", "--device",
                 "cpu", "--cache", str(tmp_path / "cache"), "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["train_config"]["truncation"] == "windows"
    assert results["data"]["splits"]["train"]["reviews"] == 48
    assert results["test"]["examples"] == 32
    assert read_checkpoint(out / "best.pt")["truncation"] == "windows"
    capsys.readouterr()
    long_text = "the movie was a superb scene " * 40
    assert main(["classify", "--checkpoint", str(out), "--json", long_text, "awful"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = classify_texts(load_checkpoint(out), [long_text, "awful"], "windows")
    assert [row["label"] for row in printed] == [row["label"] for row in expected]
    assert printed[0]["probabilities"]["positive"] == pytest.approx(
        expected[0]["probabilities"]["positive"], abs=1e-6)


def test_web_export_carries_the_windows_framing(tmp_path: Path) -> None:
    pytest.importorskip("onnx", reason="the web extra is not installed: pip install '.[web]'")
    from scratchformer.web.export import export_classifier

    model = tiny_model()
    save_checkpoint(tmp_path / "best.pt", model, model.config, "windows")
    _, record, _ = export_classifier(tmp_path / "best.pt")
    assert record["framing"]["truncation"] == "windows" and record["framing"]["max_len"] == 32
