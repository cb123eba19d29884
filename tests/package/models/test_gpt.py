"""Chapter 12: the GPT, its data, the counting baselines, sampling, the key/value cache, the
training loop and the `train-gpt` / `generate` commands."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from scratchformer.cli.commands import main
from scratchformer.data.imdb import ReviewSplit, load_unlabeled
from scratchformer.data.token_windows import TokenWindows
from scratchformer.data.windows import (SPECIAL_TOKENS, Document,
                                        encode_document, language_model_documents,
                                        special_ids, token_stream, train_review_tokenizer)
from scratchformer.measure.ngram import (BigramCounts, KneserNey, add_k_bigram_log_prob,
                                         bits_per_byte, document_histories,
                                         document_pairs, kneser_ney_bigram_log_prob,
                                         kneser_ney_discount, unigram_log_prob)
from scratchformer.models.gpt import (GPTConfig, GPTModel, KVCache, block_with_cache,
                                      document_nll, generate, next_token_probabilities)
from scratchformer.runs.checkpoint import read_checkpoint
from scratchformer.tokenize.gpt2_files import END_OF_TEXT
from scratchformer.train.gpt import (GPTTrainConfig, gpt_preset, load_gpt,
                                     save_gpt_checkpoint, train_gpt)

from support.runs import run_under_torchrun, tiny_run_arguments
from support.toy import toy_texts

def tiny_model(device: torch.device | str = "cpu", **changes: object) -> GPTModel:
    settings = {"vocab_size": 40, "context_length": 24, "d_model": 16, "num_layers": 2,
                "num_heads": 2, "dropout": 0.0}
    torch.manual_seed(0)
    return GPTModel(GPTConfig(**{**settings, **changes})).to(device).eval()


# --- data and tokens -------------------------------------------------------------------------


def test_load_unlabeled_reads_jsonl_parquet_and_the_official_layout(tmp_path: Path, toy_dir: Path) -> None:
    texts = load_unlabeled(toy_dir)
    assert len(texts) == 201 and all(isinstance(t, str) for t in texts)
    official = tmp_path / "aclImdb" / "train" / "unsup"
    official.mkdir(parents=True)
    for i, text in enumerate(["first review", "second review"]):
        (official / f"{i}_0.txt").write_text(text, encoding="utf-8")
    assert load_unlabeled(tmp_path) == ["first review", "second review"]
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    parquet_dir = tmp_path / "parquet"
    parquet_dir.mkdir()
    pq.write_table(pa.table({"text": ["a", "b", "c"]}), parquet_dir / "unsup-00000.parquet")
    assert load_unlabeled(parquet_dir) == ["a", "b", "c"]
    with pytest.raises(FileNotFoundError, match="has no unlabelled reviews"):
        load_unlabeled(tmp_path / "parquet" / ".." / "aclImdb" / "train")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "unsup.jsonl").write_text('{"label": 1}\n')
    with pytest.raises(ValueError, match="unsup.jsonl:1: expected a JSON object with 'text'"):
        load_unlabeled(bad)


def test_documents_drop_test_texts_and_repeats() -> None:
    train = ReviewSplit(["a", "b", "shared with test", "a"], [0, 1, 1, 0])
    documents = language_model_documents(train, ["c", "b", "shared with test", "c", "d"],
                                         ["shared with test", "x"])
    assert documents == [Document("a", 0), Document("b", 1), Document("c"), Document("d")]


def test_tokenizer_puts_special_tokens_last_and_round_trips() -> None:
    texts, _ = toy_texts(50, 4)
    tokenizer = train_review_tokenizer(texts, vocab_size=300)
    ids = special_ids(tokenizer)
    assert tokenizer.n_vocab == 300
    assert [ids[token] for token in SPECIAL_TOKENS] == [297, 298, 299]
    assert tokenizer.decode(tokenizer.encode("the plot was superb")) == "the plot was superb"
    encoded = encode_document(tokenizer, Document("the end<br />now", 1))
    assert encoded[:2] == [297, 299] and tokenizer.decode(encoded[2:]) == "the end now"
    assert encode_document(tokenizer, Document("x"))[:1] == [297]
    stream = token_stream(tokenizer, [Document("a", 0), Document("b")])
    assert stream.dtype == np.uint16 and stream.tolist()[-1] == 297
    with pytest.raises(ValueError, match="at least 259"):
        train_review_tokenizer(texts, vocab_size=258)


def test_windows_shift_targets_and_cover_the_stream_once_per_epoch() -> None:
    stream = torch.arange(1, 102)  # 101 tokens: 10 windows of 10 + 1
    windows = TokenWindows(stream, context_length=10, batch_size=2, seed=3)
    inputs, targets = windows.batch(0)
    assert inputs.shape == targets.shape == (2, 10)
    assert torch.equal(targets, inputs + 1), "targets are the inputs shifted by one token"
    epoch = torch.cat([windows.batch(step)[1] for step in range(windows.batches_per_epoch())])
    assert sorted(epoch.flatten().tolist()) == list(range(2, 102)), "every target exactly once"
    assert torch.equal(windows.batch(7)[0], TokenWindows(stream, 10, 2, seed=3).batch(7)[0])
    assert not torch.equal(windows.batch(0)[0], windows.batch(5)[0])
    shards = [TokenWindows(stream, 10, 2, seed=3, rank=r, world_size=2) for r in range(2)]
    firsts = [shard.batch(0)[0][:, 0].tolist() for shard in shards]
    assert not set(firsts[0]) & set(firsts[1]), "two processes never get the same window"
    assert sum(len(i) for i, _ in TokenWindows(stream, 10, 3)) == 10
    with pytest.raises(ValueError, match="holds no window"):
        TokenWindows(torch.arange(5), context_length=10, batch_size=1)


# --- the model -------------------------------------------------------------------------------


def test_config_refuses_what_cannot_be_built() -> None:
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by num_heads \(4\)"):
        GPTConfig(d_model=10, num_heads=4)
    with pytest.raises(ValueError, match="context_length must be a positive integer"):
        GPTConfig(context_length=0)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        GPTConfig(dropout=1.0)
    with pytest.raises(ValueError, match="impl must be"):
        GPTConfig(impl="flash")


def test_output_layer_is_the_token_table(device: torch.device) -> None:
    model = tiny_model(device)
    ids = torch.randint(0, 40, (3, 9), device=device)
    with torch.no_grad():
        logits = model(ids)
        hidden = model.token(ids) + model.position(9)
        for block in model.blocks:
            hidden = block(hidden)
        expected = model.final_norm(hidden) @ model.token.weight.T
    assert logits.shape == (3, 9, 40)
    torch.testing.assert_close(logits, expected)
    assert all(p is not model.token.weight for name, p in model.named_parameters()
               if name != "token.lookup.weight")


@pytest.mark.parametrize("impl", ["explicit", "sdpa"])
def test_causality_later_tokens_change_no_earlier_logit(device: torch.device, impl: str) -> None:
    model = tiny_model(device, impl=impl)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 40, (2, 20), generator=generator).to(device)
    with torch.no_grad():
        before = model(ids)
        for t in (0, 7, 18):
            changed = ids.clone()
            changed[:, t + 1 :] = torch.randint(0, 40, changed[:, t + 1 :].shape,
                                                generator=generator).to(device)
            after = model(changed)
            assert torch.equal(before[:, : t + 1], after[:, : t + 1]), f"position <= {t} changed"
            assert not torch.equal(before[:, t + 1 :], after[:, t + 1 :])


def test_context_limit_raises(device: torch.device) -> None:
    model = tiny_model(device)
    with pytest.raises(ValueError, match="25 tokens exceed the model's context_length of 24"):
        model(torch.zeros(1, 25, dtype=torch.long, device=device))
    prompt = torch.zeros(1, 20, dtype=torch.long, device=device)
    with pytest.raises(ValueError, match="20 tokens plus 5 new ones exceeds the model's context_length of 24"):
        generate(model, prompt, 5)
    assert generate(model, prompt, 4).shape == (1, 24)
    cache = KVCache(len(model.blocks), 24)
    with torch.no_grad():
        model(prompt, cache)
        with pytest.raises(ValueError, match="20 cached \\+ 5 tokens exceed"):
            model(torch.zeros(1, 5, dtype=torch.long, device=device), cache)


# --- the key/value cache ---------------------------------------------------------------------


def test_cached_block_equals_the_block_on_the_whole_sequence(device: torch.device) -> None:
    model = tiny_model(device)
    x = torch.randn(2, 15, 16, generator=torch.Generator().manual_seed(1)).to(device)
    with torch.no_grad():
        for layer, block in enumerate(model.blocks):
            cache = KVCache(len(model.blocks), 24)
            pieces = [block_with_cache(block, x[:, a:b], cache, layer)
                      for a, b in ((0, 4), (4, 5), (5, 6), (6, 15))]
            torch.testing.assert_close(torch.cat(pieces, dim=1), block(x), rtol=1e-5, atol=1e-5)
            assert cache.lengths[layer] == 15
    model.train()
    with pytest.raises(ValueError, match="call model.eval"):
        block_with_cache(model.blocks[0], x, KVCache(2, 24), 0)


def test_the_cached_block_differs_from_the_whole_only_by_float32_rounding() -> None:
    """Chapter 12's reading of its comparison: in float64 the cached block and the block on the
    whole sequence agree to float64's rounding, so what float32 leaves is rounding too (the
    two paths multiply matrices of other shapes), not another formula."""
    model = tiny_model().double()
    x = torch.randn(2, 12, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    with torch.no_grad():
        for layer, block in enumerate(model.blocks):
            cache = KVCache(len(model.blocks), 24)
            pieces = [block_with_cache(block, x[:, a:b], cache, layer)
                      for a, b in ((0, 5), (5, 6), (6, 12))]
            difference = (torch.cat(pieces, dim=1) - block(x)).abs().max().item()
            assert difference < 1e-12, f"block {layer}: {difference:.1e} in float64"


@pytest.mark.parametrize("impl", ["explicit", "sdpa"])
def test_cached_and_uncached_greedy_generation_agree(device: torch.device, impl: str) -> None:
    model = tiny_model(device, impl=impl)
    prompt = torch.randint(0, 40, (3, 4), generator=torch.Generator().manual_seed(2)).to(device)
    cached = generate(model, prompt, 20, temperature=0, use_cache=True)
    uncached = generate(model, prompt, 20, temperature=0, use_cache=False)
    assert cached.shape == (3, 24)
    assert torch.equal(cached[:, :4], prompt), "the output starts with the prompt"
    assert torch.equal(cached, uncached)


def test_cached_and_uncached_sampling_agree_with_the_same_generator() -> None:
    model = tiny_model()
    prompt = torch.tensor([[1, 2, 3]])
    samples = [generate(model, prompt, 15, top_p=0.9, use_cache=use_cache,
                        generator=torch.Generator().manual_seed(5)) for use_cache in (True, False)]
    assert torch.equal(*samples)


# --- sampling --------------------------------------------------------------------------------


def test_decoding_rules_on_a_hand_checked_distribution() -> None:
    logits = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()
    torch.testing.assert_close(next_token_probabilities(logits), torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert next_token_probabilities(logits, temperature=0).tolist() == [[1.0, 0.0, 0.0, 0.0]]
    torch.testing.assert_close(next_token_probabilities(logits, top_k=2), torch.tensor([[0.625, 0.375, 0, 0]]))
    torch.testing.assert_close(next_token_probabilities(logits, top_p=0.75), torch.tensor([[0.625, 0.375, 0, 0]]))
    torch.testing.assert_close(next_token_probabilities(logits, top_p=0.8), torch.tensor([[0.625, 0.375, 0, 0]]))
    torch.testing.assert_close(next_token_probabilities(logits, top_p=0.81),
                               torch.tensor([[0.5, 0.3, 0.15, 0]]) / 0.95)
    sharper = next_token_probabilities(logits, temperature=0.5)
    torch.testing.assert_close(sharper, torch.tensor([[0.25, 0.09, 0.0225, 0.0025]]) / 0.365)
    for bad in ({"temperature": -1}, {"top_k": 0}, {"top_p": 0.0}, {"top_p": 1.5}):
        with pytest.raises(ValueError):
            next_token_probabilities(logits, **bad)


def test_top_k_of_one_is_greedy(device: torch.device) -> None:
    model = tiny_model(device)
    prompt = torch.randint(0, 40, (4, 3), generator=torch.Generator().manual_seed(3)).to(device)
    greedy = generate(model, prompt, 18, temperature=0)
    top_one = generate(model, prompt, 18, top_k=1, temperature=1.5,
                       generator=torch.Generator(device).manual_seed(9))
    assert torch.equal(greedy, top_one)


def test_a_fixed_generator_reproduces_a_sample(device: torch.device) -> None:
    model = tiny_model(device)
    prompt = torch.tensor([[5, 6]], device=device)

    def sample(seed: int) -> torch.Tensor:
        return generate(model, prompt, 20, temperature=1.2,
                        generator=torch.Generator(device).manual_seed(seed))

    assert torch.equal(sample(7), sample(7))
    assert not torch.equal(sample(7), sample(8)), "different seeds, different samples"
    model.train()
    generate(model, prompt, 2)
    assert model.training, "generate leaves the model in the mode it found it in"


# --- training --------------------------------------------------------------------------------


def test_a_tiny_model_memorises_a_text_and_writes_it_back(device: torch.device) -> None:
    text = torch.randint(0, 40, (1, 24), generator=torch.Generator().manual_seed(4)).to(device)
    model = tiny_model(device, d_model=32).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    for _ in range(300):
        loss = F.cross_entropy(model(text[:, :-1]).flatten(0, 1), text[0, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.02
    assert torch.equal(generate(model, text[:, :2], 22, temperature=0), text)


def test_train_gpt_learns_saves_and_resumes_to_the_same_weights(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pattern = rng.integers(0, 40, 50)
    stream = torch.from_numpy(np.tile(pattern, 40))  # a repeating text: easy to learn
    config = GPTTrainConfig(steps=12, batch_size=4, lr=1e-2, evals=3, precision="fp32")
    windows = TokenWindows(stream, 24, config.batch_size, seed=1)
    val = TokenWindows(stream[:500], 24, 8)

    def fresh() -> GPTModel:
        return tiny_model().train()

    straight = fresh()
    history = train_gpt(straight, windows, val, config, tmp_path / "straight", progress=False,
                        log=lambda _: None)
    assert [r["step"] for r in history] == [4, 8, 12]
    assert history[-1]["val_loss"] < history[0]["val_loss"] < math.log(40)
    assert history[-1]["tokens_seen"] == 12 * 4 * 24
    best = load_gpt(tmp_path / "straight")
    assert read_checkpoint(tmp_path / "straight" / "best.pt", "scratchformer.GPTModel")["training"]["step"] == 12

    resumed = fresh()
    history_resumed = train_gpt(resumed, windows, val, config, tmp_path / "straight", resume=True,
                                progress=False, log=lambda _: None)
    assert history_resumed == history, "resuming a finished run has nothing left to do"
    for a, b in zip(straight.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(a, b)
    assert best.config == straight.config


def test_resume_continues_where_it_stopped(tmp_path: Path) -> None:
    stream = torch.from_numpy(np.tile(np.random.default_rng(1).integers(0, 40, 30), 40))
    windows = TokenWindows(stream, 24, 4, seed=2)
    val = TokenWindows(stream[:300], 24, 8)
    config = GPTTrainConfig(steps=8, batch_size=4, lr=1e-2, evals=2, precision="fp32")
    whole = tiny_model().train()
    train_gpt(whole, windows, val, config, tmp_path / "whole", progress=False, log=lambda _: None)
    # the same run, interrupted after its validation at step 4, then resumed
    early = tiny_model().train()
    stopper = _StopAfter(4)
    with pytest.raises(_Stopped):
        train_gpt(early, windows, val, config, tmp_path / "early", progress=False, log=stopper)
    continued = tiny_model().train()
    history = train_gpt(continued, windows, val, config, tmp_path / "early", resume=True,
                        progress=False, log=lambda _: None)
    assert [r["step"] for r in history] == [4, 8]
    for a, b in zip(whole.state_dict().values(), continued.state_dict().values()):
        assert torch.equal(a, b), "a resumed run ends with the weights of an uninterrupted one"


class _Stopped(Exception):
    pass


class _StopAfter:
    """A `log` that interrupts training once it has logged the validation after `step`."""

    def __init__(self, step: int) -> None:
        self.step = step

    def __call__(self, message: str) -> None:
        if message.startswith(f"step {self.step}/"):
            raise _Stopped


def test_checkpoints_are_checked_when_read(tmp_path: Path) -> None:
    model = tiny_model()
    save_gpt_checkpoint(tmp_path / "gpt.pt", model)
    loaded = load_gpt(tmp_path / "gpt.pt")
    ids = torch.randint(0, 40, (2, 10))
    with torch.no_grad():
        assert torch.equal(model(ids), loaded(ids))
    with pytest.raises(ValueError, match="not a scratchformer classifier checkpoint"):
        read_checkpoint(tmp_path / "gpt.pt")
    torch.save({"format": "scratchformer.BertForSequenceClassification", "version": 1}, tmp_path / "bert.pt")
    with pytest.raises(ValueError, match="not a scratchformer GPTModel checkpoint"):
        load_gpt(tmp_path / "bert.pt")
    (tmp_path / "broken.pt").write_bytes((tmp_path / "gpt.pt").read_bytes()[:100])
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_gpt(tmp_path / "broken.pt")


# --- held-out loss ---------------------------------------------------------------------------


def test_document_nll_scores_every_token_once_with_or_without_windows() -> None:
    model = tiny_model()
    short = [3, 1, 4, 1, 5, 9, 2, 6]
    with torch.no_grad():
        log_probs = torch.log_softmax(model(torch.tensor([short])), dim=-1)[0]
    expected = -sum(log_probs[t, short[t + 1]].item() for t in range(len(short) - 1))
    nll, count = document_nll(model, [short])
    assert count == 7 and nll == pytest.approx(expected, rel=1e-5)
    long = torch.randint(0, 40, (70,), generator=torch.Generator().manual_seed(6)).tolist()
    for stride in (1, 5, 12, 24):
        nll_long, count_long = document_nll(model, [long, short], stride=stride)
        assert count_long == 69 + 7
    # with a stride of 1, tokens 1..24 are scored in one window and each later token j from
    # the 24 tokens before it
    nll_one, _ = document_nll(model, [long], stride=1)
    with torch.no_grad():
        first = torch.log_softmax(model(torch.tensor([long[:24]])), -1)[0]
        direct = -first[torch.arange(24), long[1:25]].sum()
        for j in range(25, 70):
            window = torch.tensor([long[j - 24 : j]])
            direct -= torch.log_softmax(model(window), -1)[0, -1, long[j]]
    assert nll_one == pytest.approx(direct.item(), rel=1e-4)


# --- counting models -------------------------------------------------------------------------

# The chapter's toy stream: 0 1 0 1 2 0 over four tokens (3 never occurs). Held out: the
# document 0 1 2, standing for 3 bytes, scores p(1 | 0) and p(2 | 1).
TOY_STREAM = np.array([0, 1, 0, 1, 2, 0])
HELD_OUT = [[0, 1, 2]]


def test_ngram_bits_per_byte_against_values_worked_by_hand() -> None:
    counts = BigramCounts(TOY_STREAM, vocab_size=4)
    previous, following = document_pairs(HELD_OUT)
    assert previous.tolist() == [0, 1] and following.tolist() == [1, 2]
    # unigram, add-1: targets 1 0 1 2 0 -> c = (2, 2, 1, 0), N = 5; p(1) = 3/9, p(2) = 2/9
    unigram = bits_per_byte(-unigram_log_prob(counts, following, 1.0).sum(), 3)
    assert unigram == pytest.approx(math.log2(9 / 3 * 9 / 2) / 3, rel=1e-12)
    # add-1 bigram: c(0) = 2, c(0, 1) = 2 -> 3/6; c(1) = 2, c(1, 2) = 1 -> 2/6
    add_one = bits_per_byte(-add_k_bigram_log_prob(counts, previous, following, 1.0).sum(), 3)
    assert add_one == pytest.approx(math.log2(6 / 3 * 6 / 2) / 3, rel=1e-12)
    # Kneser-Ney: D = 3 / (3 + 2 * 1) = 0.6; 4 distinct pairs; 3 tokens follow something;
    # p_cont(1) = p_cont(2) = (1 - 0.6 + 0.6 * 3/4) / 4 = 0.2125;
    # p(1 | 0) = (2 - 0.6 + 0.6 * 1 * 0.2125) / 2 = 611/800; p(2 | 1) = (1 - 0.6 + 0.6 * 2 * 0.2125) / 2 = 131/400
    assert kneser_ney_discount(counts) == 0.6
    kneser_ney = bits_per_byte(-kneser_ney_bigram_log_prob(counts, previous, following).sum(), 3)
    assert kneser_ney == pytest.approx(math.log2(800 / 611 * 400 / 131) / 3, rel=1e-12)


def test_rows_of_a_stream_are_counted_apart() -> None:
    rows = BigramCounts(np.array([[0, 1, 2], [2, 0, 1]]), vocab_size=3)
    assert rows.pair_count(np.array([0, 1, 2, 2]), np.array([1, 2, 0, 2])).tolist() == [2, 1, 1, 0]
    assert rows.targets.tolist() == [1, 2, 1] and rows.contexts.tolist() == [2, 1, 1]


@pytest.mark.parametrize("vocab_size", [4, 7])
def test_bigram_models_are_distributions(vocab_size: int) -> None:
    counts = BigramCounts(TOY_STREAM, vocab_size=vocab_size)
    everything = np.arange(vocab_size)
    assert np.exp(unigram_log_prob(counts, everything, 0.5)).sum() == pytest.approx(1.0)
    for v in range(vocab_size):
        context = np.full(vocab_size, v)
        for log_probs in (add_k_bigram_log_prob(counts, context, everything, 0.01),
                          kneser_ney_bigram_log_prob(counts, context, everything)):
            assert np.isfinite(log_probs).all()
            assert np.exp(log_probs).sum() == pytest.approx(1.0, abs=1e-12)


def reference_kneser_ney(stream: list[int], vocab_size: int, order: int, history: list[int],
                         token: int) -> float:
    """Interpolated Kneser-Ney written with dictionaries, one gram at a time."""
    counts = {order: Counter(tuple(stream[i : i + order]) for i in range(len(stream) - order + 1))}
    for k in range(order - 1, 0, -1):  # continuation counts: distinct tokens seen before
        counts[k] = Counter(gram[1:] for gram in counts[k + 1])

    def discount(k: int) -> float:
        values = list(counts[max(k, 2)].values())
        n1, n2 = values.count(1), values.count(2)
        return n1 / (n1 + 2 * n2) if n1 else 0.5

    d = discount(1)
    prob = (max(counts[1][(token,)] - d, 0) + d * len(counts[1]) / vocab_size) / sum(counts[1].values())
    for k in range(2, order + 1):
        context = tuple(history[len(history) - (k - 1) :])
        followers = {gram[-1]: c for gram, c in counts[k].items() if gram[:-1] == context}
        if -1 in context or not followers:
            continue
        d = discount(k)
        prob = (max(followers.get(token, 0) - d, 0) + d * len(followers) * prob) / sum(followers.values())
    return prob


@pytest.mark.parametrize("order", [2, 3, 4])
def test_kneser_ney_of_any_order_against_a_dictionary_version(order: int) -> None:
    stream = [0, 1, 2, 0, 1, 2, 0, 1, 0, 3, 1, 2, 2, 0, 1]
    model = KneserNey(np.array(stream), vocab_size=5, order=order)
    documents = [[0, 1, 2, 0, 4], [3, 1, 0], [2, 2, 1, 2, 0, 1, 3]]  # 4 and some contexts unseen
    histories, following = document_histories(documents, order)
    assert len(following) == sum(len(ids) - 1 for ids in documents)
    log_probs = model.log_prob(histories, following)
    expected = [math.log(reference_kneser_ney(stream, 5, order, h.tolist(), w))
                for h, w in zip(histories, following)]
    assert log_probs == pytest.approx(expected, abs=1e-12)
    for history in histories:  # every context's distribution sums to 1
        total = np.exp(model.log_prob(np.repeat(history[None], 5, 0), np.arange(5))).sum()
        assert total == pytest.approx(1.0, abs=1e-12)


def test_kneser_ney_of_order_2_is_the_bigram_model() -> None:
    previous, following = document_pairs(HELD_OUT)
    bigram = kneser_ney_bigram_log_prob(BigramCounts(TOY_STREAM, vocab_size=4), previous, following)
    general = KneserNey(TOY_STREAM, vocab_size=4, order=2).log_prob(*document_histories(HELD_OUT, 2))
    assert np.array_equal(bigram, general)


@pytest.mark.parametrize(("stream", "vocab_size", "order", "match"), [
    ([0, 1], 4, 1, "order >= 2"),
    ([0, 1], 4, 3, "at least `order` tokens"),
    ([0, 1, 2, 3], 60_000, 4, "overflow the 64-bit keys"),
    ([0, 5, 1], 4, 2, r"token ids must lie in \[0, 4\)"),
])
def test_kneser_ney_refuses_what_it_cannot_count(stream: list[int], vocab_size: int, order: int,
                                                 match: str) -> None:
    with pytest.raises(ValueError, match=match):
        KneserNey(np.array(stream), vocab_size, order)


# --- the command line ------------------------------------------------------------------------


def test_train_gpt_and_generate_commands(tmp_path: Path, toy_dir: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    arguments = tiny_run_arguments(toy_dir, out, tmp_path / "cache")
    assert main(arguments) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["data"]["documents"] == 120 + 200, "the unsup copy of a test review is dropped"
    assert results["tokenizer"]["vocab_size"] == results["model_config"]["vocab_size"] == 300
    assert set(results["heldout"]["bits_per_byte"]) == {
        "unigram (add-1)", f"add-k bigram (k = {results['heldout']['add_k']})", "Kneser-Ney bigram",
        "Kneser-Ney bigram, from the GPT's windows", "GPT"}
    steps, batch = gpt_preset("tiny")[1].steps, gpt_preset("tiny")[1].batch_size
    assert results["heldout"]["read_tokens"] == steps * batch * (gpt_preset("tiny")[0].context_length + 1)
    assert results["history"][-1]["step"] == gpt_preset("tiny")[1].steps
    capsys.readouterr()
    assert main(arguments) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert main([*arguments, "--resume"]) == 0, "resuming a finished run trains no further"
    assert main([*arguments, "--overwrite", "--set", "d_model=8", "--set", "d_hidden=16"]) == 0
    assert json.loads((out / "results.json").read_text())["model_config"]["d_model"] == 8

    tuned = tmp_path / "tuned"
    tuning = tiny_run_arguments(toy_dir, tuned, tmp_path / "cache")
    assert main([*tuning, "--init", str(out), "--no-unlabeled", "--set", "steps=4"]) == 0
    tuned_results = json.loads((tuned / "results.json").read_text())
    assert tuned_results["init"]["checkpoint"] == str(out)
    assert tuned_results["model_config"]["d_model"] == 8, "the sizes of the model it starts from"
    assert tuned_results["data"]["documents"] == tuned_results["data"]["labelled_documents"] == 120
    assert (tuned / "tokenizer.json").read_bytes() == (out / "tokenizer.json").read_bytes()

    record_path = tmp_path / "samples.json"
    assert main(["generate", "--checkpoint", str(out), "--sentiment", "positive", "--prompt", "the movie",
                 "--num", "3", "--batch-size", "2", "--max-new-tokens", "10", "--top-p", "0.9",
                 "--json", str(record_path)]) == 0
    record = json.loads(record_path.read_text())
    assert len(record["samples"]) == 3 and all(s["text"].startswith("the movie") for s in record["samples"])
    assert all(s["tokens"] <= 10 for s in record["samples"])
    assert len(record["first_step"]) == 10 and record["kept_tokens"] >= 1
    again = tmp_path / "again.json"
    main(["generate", "--checkpoint", str(out), "--sentiment", "positive", "--prompt", "the movie",
          "--num", "3", "--batch-size", "2", "--max-new-tokens", "10", "--top-p", "0.9",
          "--json", str(again)])
    assert json.loads(again.read_text())["samples"] == record["samples"], "the seed fixes the samples"
    capsys.readouterr()
    assert main(["generate", "--checkpoint", str(out), "--max-new-tokens", "100"]) == 2
    assert "exceeds the model's context_length" in capsys.readouterr().err


def test_generate_is_judged_by_a_classifier(tmp_path: Path, toy_dir: Path) -> None:
    gpt_dir, bert_dir = tmp_path / "gpt", tmp_path / "bert"
    assert main(tiny_run_arguments(toy_dir, gpt_dir, tmp_path / "cache")) == 0
    assert main(["train-imdb", "--data", str(toy_dir), "--out", str(bert_dir), "--config", "tiny",
                 "--device", "cpu", "--cache", str(tmp_path / "cache"), "--no-progress", "--no-test"]) == 0
    record_path = tmp_path / "judged.json"
    assert main(["generate", "--checkpoint", str(gpt_dir), "--sentiment", "negative", "--num", "4",
                 "--max-new-tokens", "8", "--judge", str(bert_dir), "--json", str(record_path)]) == 0
    record = json.loads(record_path.read_text())
    labels = [s["judge"]["label"] for s in record["samples"]]
    assert record["agreement"] == sum(label == "negative" for label in labels) / 4
    assert record["judge_sha256"] and record["checkpoint_sha256"]


def test_a_folder_holds_one_run(tmp_path: Path, toy_dir: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    arguments = tiny_run_arguments(toy_dir, out, tmp_path / "cache")
    assert main([*arguments, "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    assert main(arguments) == 0
    assert not (out / ".lock").exists(), "the lock goes when the run ends"
    (out / ".lock").write_text('{"pid": 1, "host": "elsewhere"}')
    assert main([*arguments, "--overwrite"]) == 2
    assert "in use by another run" in capsys.readouterr().err
    (out / ".lock").unlink()
    (out / "tokenizer.json").unlink()
    assert main([*arguments, "--resume"]) == 2
    assert "no " + str(out / "tokenizer.json") in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*arguments, "--resume", "--overwrite"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_two_process_ddp_run_on_cpu(tmp_path: Path, toy_dir: Path) -> None:
    out = tmp_path / "ddp"
    result = run_under_torchrun(
        tmp_path, tiny_run_arguments(toy_dir, out, tmp_path / "cache"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["world_size"] == 2
    steps = gpt_preset("tiny")[1].steps
    batch, context = gpt_preset("tiny")[1].batch_size, gpt_preset("tiny")[0].context_length
    assert results["history"][-1]["tokens_seen"] == steps * batch * context * 2
    assert result.stdout.count("held-out bits per byte, GPT") == 1, "only rank 0 reports"
    assert isinstance(load_gpt(out), GPTModel)


def test_special_token_ids_are_read_from_the_tokenizer(tmp_path: Path, toy_dir: Path) -> None:
    texts, _ = toy_texts(30, 5)
    tokenizer = train_review_tokenizer(texts, vocab_size=280)
    assert special_ids(tokenizer)[END_OF_TEXT] == tokenizer.n_vocab - 3


def test_cpu_training_returns_freed_memory_on_glibc() -> None:
    """The allocator setting that keeps a long CPU run flat (benchmarks/cpu_memory.py)."""
    import platform

    from scratchformer.runs.hardware import return_freed_memory

    assert return_freed_memory() is (platform.libc_ver()[0] == "glibc")
