"""The GPT box's rules are the package's: every case of `tests/data/web_settings_cases.json`
(settings as the text of the box's fields) gives, from chapter 12's `generate` and
`next_token_probabilities`, exactly the message the table holds, or runs. The browser test
holds the box on chapter 12's page to the same table, so the box says what Python says."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from typing import Any

import pytest
import torch

from support import ROOT
from scratchformer.models.gpt import (GPTConfig, GPTModel, generate,
                                      next_token_probabilities)

TABLE = json.loads((ROOT / "tests" / "data" / "web_settings_cases.json").read_text(encoding="utf-8"))
CASES = [{**TABLE["defaults"], **case} for case in TABLE["cases"]]
INTEGER = re.compile(r"[+-]?\d+")
FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def read_setting(text: str, empty_is_none: bool) -> Any:
    """A field's text as the Python value it stands for (the rule of `_static/web/rules.mjs`)."""
    stripped = text.strip()
    if not stripped and empty_is_none:
        return None
    if INTEGER.fullmatch(stripped):
        return int(stripped)
    if FLOAT.fullmatch(stripped):
        return float(stripped)
    return text


def case_id(case: dict) -> str:
    changed = {key: value for key, value in case.items()
               if key != "error" and TABLE["defaults"].get(key) != value}
    return ",".join(f"{key}={value!r}" for key, value in changed.items()) or "defaults"


@pytest.fixture(scope="module")
def model() -> GPTModel:
    torch.manual_seed(0)
    return GPTModel(GPTConfig(vocab_size=16, context_length=TABLE["context_length"], d_model=8,
                              num_layers=1, num_heads=1)).eval()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_generate_says_what_the_table_says(model: GPTModel, case: dict) -> None:
    ids = torch.zeros((1, case["prompt_tokens"]), dtype=torch.long)
    settings = {"temperature": read_setting(case["temperature"], False),
                "top_k": read_setting(case["top_k"], True),
                "top_p": read_setting(case["top_p"], True)}
    count = read_setting(case["max_new_tokens"], False)
    if case["error"] is None:
        written = generate(model, ids, count, **settings)
        assert written.shape == (1, case["prompt_tokens"] + count)
        return
    with pytest.raises(ValueError) as raised:
        generate(model, ids, count, **settings)
    assert str(raised.value) == case["error"]


@pytest.mark.parametrize("case", [c for c in CASES if c["error"] and c["error"].startswith(
    ("temperature", "top_k", "top_p"))], ids=case_id)
def test_next_token_probabilities_refuses_the_same_settings(case: dict) -> None:
    with pytest.raises(ValueError) as raised:
        next_token_probabilities(torch.zeros(1, 16), read_setting(case["temperature"], False),
                                 read_setting(case["top_k"], True), read_setting(case["top_p"], True))
    assert str(raised.value) == case["error"]


def test_the_table_covers_every_rule() -> None:
    """Each of generate's refusals, and runs it accepts, is in the table at least once."""
    starts = {case["error"].split(" ")[0] if case["error"] else None for case in CASES}
    assert starts == {None, "temperature", "top_k", "top_p", "max_new_tokens", "a"}


REPR_SCRIPT = """
import {readSetting, pythonRepr} from "./_static/web/rules.mjs";
import {readFileSync} from "node:fs";
const texts = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(texts.map((t) => pythonRepr(readSetting(t, true)))));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_box_reads_and_writes_numbers_as_python_does() -> None:
    """`rules.mjs` turns a field's text into the value Python reads and names it as `repr` does,
    on edge cases and on 2,000 random numbers of every magnitude, so its messages can equal
    the package's word for word."""
    draw = random.Random(0)
    texts = ["", " ", "0", "-0", "007", "+3", "1.", ".5", "-0.0", "1e3", "1E-5", "inf", "-Infinity",
             "nan", "abc", "1_000", "1e16", "1e15", "123456789012345678", "0.0001", "0.00001"]
    texts += [repr(draw.uniform(-1, 1) * 10 ** draw.randint(-12, 20)) for _ in range(1000)]
    texts += [f"{draw.uniform(-1, 1) * 10 ** draw.randint(-6, 8):.{draw.randint(0, 9)}f}" for _ in range(1000)]
    node = subprocess.run(["node", "--input-type=module", "-e", REPR_SCRIPT], input=json.dumps(texts),
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    assert json.loads(node.stdout) == [repr(read_setting(text, True)) for text in texts]


REFUSAL_SCRIPT = """
import {generateRefusal, readSetting} from "./_static/web/rules.mjs";
import {readFileSync} from "node:fs";
const {cases, context} = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(cases.map((c) => generateRefusal(
  c.prompt_tokens, readSetting(c.max_new_tokens, false), context, readSetting(c.temperature, false),
  readSetting(c.top_k, true), readSetting(c.top_p, true)))));
"""
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_box_refuses_in_the_packages_words_and_in_chinese() -> None:
    """For every case of the table, `rules.mjs` refuses what `generate` refuses: its English is
    the package's message word for word, and its Chinese, which the Chinese edition's box shows,
    is Chinese and names the same setting and value (the Latin words left in it are the
    setting's name, the value as Python writes it, and `None`)."""
    node = subprocess.run(["node", "--input-type=module", "-e", REFUSAL_SCRIPT],
                          input=json.dumps({"cases": CASES, "context": TABLE["context_length"]}),
                          capture_output=True, text=True, cwd=ROOT, timeout=60, check=True)
    refusals = json.loads(node.stdout)
    assert [r and r["english"] for r in refusals] == [case["error"] for case in CASES]
    for case, refused in zip(CASES, refusals):
        if refused is None:
            continue
        chinese = refused["chinese"]
        value = re.search(r"got (.*)$", case["error"])
        numbers = re.findall(r"\d+", case["error"])
        assert CJK.search(chinese), chinese
        assert (value.group(1) in chinese) if value else all(n in chinese for n in numbers), chinese
        setting = re.match(r"[a-z_]+", case["error"]).group(0)
        left = set(re.findall(r"[A-Za-z_]{3,}", chinese)) - {setting, "None", "context_length"}
        assert not left - set(re.findall(r"[A-Za-z_]{3,}", value.group(1) if value else "")), chinese
