"""Chapter 11's `reading_contributions` and its JavaScript port, `_static/web/reading.mjs`, which
the classifier box runs.

In Python: the parts and the baseline add up to the model's own logit gap for the framed review
(float32's rounding, 1e-4), each part is the average of what the token added reading forwards
and reading backwards, computed here from the definition, and a review that does not fit one
frame is refused. Under `node`: for token lists of every length from 0 to 40, the rows the page
frames are the rows Python frames, and, given the same gaps, its parts and baseline are
Python's (1e-12). The browser test holds the box on chapter 11's page to the same numbers.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest
import torch

from support import ROOT
from scratchformer.data.framing import GPT2_SPECIALS, frame_tokens
from scratchformer.measure.evaluation import reading_contributions
from scratchformer.models.bert import BertConfig, BertForSequenceClassification

MAX_LEN = 48


@pytest.fixture(scope="module")
def model() -> BertForSequenceClassification:
    torch.manual_seed(0)
    config = BertConfig(d_model=32, max_len=MAX_LEN, num_layers=2, num_heads=2, pooling="mean",
                        dropout=0.1)  # dropout is on in training mode: the function turns it off
    return BertForSequenceClassification(config)


def gap_of(model: BertForSequenceClassification, tokens: list[int]) -> float:
    with torch.no_grad():
        logits = model.eval()(torch.tensor([frame_tokens(tokens, MAX_LEN, "head")]))[0]
    return (logits[1] - logits[0]).item()


@pytest.mark.parametrize("length", [0, 1, 2, 7, MAX_LEN - 2])
def test_the_parts_and_the_baseline_add_up_to_the_gap(model: BertForSequenceClassification,
                                                      length: int) -> None:
    tokens = random.Random(length).sample(range(1000, 30000), length)
    model.train()
    parts, baseline = reading_contributions(model, tokens, MAX_LEN)
    assert not model.training
    assert parts.shape == (length,) and parts.dtype == torch.float64
    assert abs(baseline - gap_of(model, [])) < 1e-5
    assert abs(baseline + parts.sum().item() - gap_of(model, tokens)) < 1e-4


def test_a_part_is_the_mean_of_what_the_token_adds_both_ways(model: BertForSequenceClassification) -> None:
    tokens = [1200, 318, 407, 2089, 13, 3797]
    parts, _ = reading_contributions(model, tokens, MAX_LEN)
    for t, part in enumerate(parts.tolist()):
        forwards = gap_of(model, tokens[: t + 1]) - gap_of(model, tokens[:t])
        backwards = gap_of(model, tokens[t:]) - gap_of(model, tokens[t + 1 :])
        assert abs(part - (forwards + backwards) / 2) < 1e-5, t


def test_a_review_longer_than_a_frame_is_refused(model: BertForSequenceClassification) -> None:
    with pytest.raises(ValueError, match=r"47 tokens do not fit one frame of 48 ids \(at most 46\)"):
        reading_contributions(model, list(range(1000, 1047)), MAX_LEN)


NODE_SCRIPT = """
import { readingParts, readingRows } from "./_static/web/reading.mjs";
import { frameTokens } from "./_static/web/bpe.mjs";
import { readFileSync } from "node:fs";
const { framing, cases } = JSON.parse(readFileSync(0, "utf8"));
const head = { ...framing, truncation: "head" };
console.log(JSON.stringify(cases.map(({ tokens, gaps }) => ({
  rows: readingRows(tokens).map((row) => frameTokens(row, head)),
  ...(gaps ? readingParts(gaps, tokens.length) : {}),
}))));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_page_frames_the_same_rows_and_takes_the_same_parts() -> None:
    """The page's rows and parts against Python's, for a 'model' whose gap is a fixed random
    number for each framed row: the two agree on which rows to read, and on what the gaps
    make of them."""
    framing = {"cls": GPT2_SPECIALS.cls, "sep": GPT2_SPECIALS.sep, "pad": GPT2_SPECIALS.pad,
               "max_len": MAX_LEN, "truncation": "windows"}
    rng = random.Random(0)
    gap_of_row: dict[tuple[int, ...], float] = {}

    def fake_model(ids: torch.Tensor) -> torch.Tensor:
        """Logits (B, 2) whose gap is the row's own random number."""
        gaps = [gap_of_row.setdefault(tuple(row), rng.uniform(-4, 4)) for row in ids.tolist()]
        return torch.tensor([[0.0, gap] for gap in gaps], dtype=torch.float64)

    cases, expected = [], []
    for length in range(0, 41):
        tokens = [rng.randrange(50257) for _ in range(length)]
        parts, baseline = reading_contributions(fake_model, tokens, MAX_LEN)
        rows = [frame_tokens(row, MAX_LEN, "head") for row in
                [tokens[:k] for k in range(length + 1)] + [tokens[k:] for k in range(1, length)]]
        cases.append({"tokens": tokens, "gaps": [gap_of_row[tuple(row)] for row in rows]})
        expected.append((rows, parts.tolist(), baseline))
    done = subprocess.run(["node", "--input-type=module", "-e", NODE_SCRIPT], cwd=ROOT,
                          input=json.dumps({"framing": framing, "cases": cases}),
                          capture_output=True, text=True, timeout=120, check=True)
    results = json.loads(done.stdout)
    for (rows, parts, baseline), result, case in zip(expected, results, cases):
        assert result["rows"] == rows, len(case["tokens"])
        assert len(result["parts"]) == len(parts)
        assert all(abs(a - b) < 1e-12 for a, b in zip(result["parts"], parts)), len(parts)
        assert result["baseline"] == baseline
        assert abs(result["gap"] - (baseline + sum(parts))) < 1e-9
