"""Chapters 1, 4-8 and 10 (with the package's checks modules, `scratchformer.nn.checks` and
`scratchformer.models.bert_checks`): what the API cannot compute is refused with an error that
names the argument and the fix, not with torch's words from deep inside a matrix product or an
embedding, and nothing is computed silently from an input that means something else (a float
mask, a row with no real token).

Each case once raised torch's own error (`expected m1 and m2 to have the same dtype`, an
`IndexError` in the classifier's head, `'list' object has no attribute 'dim'`) or ran silently;
the last test shows that what was accepted before still runs and gives the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from scratchformer.models.bert import BertConfig, BertForSequenceClassification
from scratchformer.nn.attention import (MultiHeadAttention, SelfAttention, causal_mask,
                                        scaled_dot_product_attention)
from scratchformer.tokenize.bpe import BPETokenizer


def bert(pooling: str = "cls") -> BertForSequenceClassification:
    return BertForSequenceClassification(BertConfig(vocab_size=100, d_model=16, max_len=16, num_layers=1,
                                                    num_heads=2, pad_id=0, pooling=pooling)).eval()


IDS = torch.tensor([[5, 6, 7, 0], [5, 8, 0, 0]])
X = torch.randn(2, 3, 4)

# (what the case is, the call, the error it raises, the phrase its message holds)
API_CASES = [
    ("sdpa, integer inputs", lambda: scaled_dot_product_attention(X.long(), X.long(), X.long()), TypeError,
     "q must hold floating-point numbers, got torch.int64"),
    ("sdpa, float32 and float64", lambda: scaled_dot_product_attention(X, X.double(), X), TypeError,
     "q, k and v must have one dtype, got torch.float32, torch.float64 and torch.float32"),
    ("sdpa, meta tensors and a mask", lambda: scaled_dot_product_attention(
        *[X.to("meta")] * 3, torch.ones(3, 3, dtype=torch.bool, device="meta")), ValueError,
     "q is on the meta device, which holds shapes but no values"),
    ("self-attention, float64", lambda: SelfAttention(4, 4)(X.double()), TypeError,
     "x is torch.float64 and the module's weights are torch.float32"),
    ("self-attention, integers", lambda: SelfAttention(4, 4)(X.long()), TypeError,
     "x must hold floating-point numbers, got torch.int64"),
    ("self-attention, meta", lambda: SelfAttention(4, 4)(X.to("meta")), ValueError, "x is on the meta device"),
    ("multi-head, float64", lambda: MultiHeadAttention(4, 4, 2)(X.double()), TypeError,
     "x is torch.float64 and the module's weights are torch.float32"),
    ("multi-head, integers", lambda: MultiHeadAttention(4, 4, 2)(X.long()), TypeError,
     "x must hold floating-point numbers"),
    ("multi-head, meta", lambda: MultiHeadAttention(4, 4, 2)(X.to("meta")), ValueError, "x is on the meta device"),
    ("causal_mask(2.5)", lambda: causal_mask(2.5), ValueError, "seq_len must be a positive integer, got 2.5"),
    ("bert, uint8 ids", lambda: bert()(IDS.to(torch.uint8)), TypeError,
     "ids must be int64 (or int32) token ids, got torch.uint8; convert them with ids.long()"),
    ("bert, a list of ids", lambda: bert()(IDS.tolist()), TypeError,
     "ids must be a torch.Tensor of token ids, got list; use torch.tensor(ids)"),
    ("bert, ids (2, 0)", lambda: bert()(torch.zeros(2, 0, dtype=torch.long)), ValueError,
     "ids of shape (2, 0) hold no token"),
    ("bert mean, ids (2, 0)", lambda: bert("mean")(torch.zeros(2, 0, dtype=torch.long)), ValueError,
     "ids of shape (2, 0) hold no token"),
    ("bert, meta ids", lambda: bert()(IDS.to("meta")), ValueError, "ids are on meta and the model on cpu"),
    ("bert, an all-False mask", lambda: bert()(IDS, torch.zeros(2, 4, dtype=torch.bool)), ValueError,
     "attention_mask marks no real token in row(s) 0, 1"),
    ("bert, a row with no real token", lambda: bert()(IDS, torch.tensor([[1, 1, 1, 0], [0, 0, 0, 0]])),
     ValueError, "attention_mask marks no real token in row(s) 1"),
    ("bert, a float mask", lambda: bert()(IDS, (IDS != 0).float()), TypeError,
     "attention_mask must be boolean (True at real tokens) or 0/1 integers, got torch.float32"),
    ("bert, an additive mask", lambda: bert()(IDS, torch.where(IDS != 0, 0, -10000)), ValueError,
     "attention_mask must hold only 0 (padding) and 1 (real tokens), got values from -10000 to 0"),
    ("BPE trained on a list", lambda: BPETokenizer.train(["text"], 300), TypeError,
     "train takes one str of text, got list"),
]


@pytest.mark.parametrize(("name", "call", "error", "phrase"), API_CASES, ids=[case[0] for case in API_CASES])
def test_the_api_refuses_by_name_what_torch_would_refuse_in_its_own_words(
        name: str, call: Callable, error: type[Exception], phrase: str) -> None:
    with pytest.raises(error) as raised:
        call()
    assert phrase in str(raised.value), str(raised.value)


def test_what_the_api_checks_still_runs_as_before() -> None:
    model = bert("mean")
    assert torch.equal(model(IDS), model(IDS, IDS != 0)) and torch.equal(model(IDS), model(IDS, (IDS != 0).long()))
    assert torch.equal(model(IDS), model(IDS.int()))
    with torch.autocast("cpu", dtype=torch.bfloat16):  # mixed precision casts as it multiplies
        assert MultiHeadAttention(4, 4, 2)(X.bfloat16()).shape == (2, 3, 4)
    context, weights = scaled_dot_product_attention(X.double(), X.double(), X.double())
    assert context.dtype == torch.float64 and torch.allclose(weights.sum(-1), torch.ones(2, 3, dtype=torch.float64))
