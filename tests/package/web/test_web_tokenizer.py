"""The appendix "Running the models in the browser": the page's tokenizer
(`_static/web/bpe.mjs`) gives the ids Python gives.

It runs under `node` on the tokenizer files `scratchformer.web.export` writes: GPT-2's (the
classifier's, cut as tiktoken cuts) and one trained as chapter 12 trains the GPT's (cut by the
`regex` module), on chapter 1's hard cases, on a few thousand generated reviews and, when
`IMDB_DIR` names a local copy of IMDB, on all 25,000 test reviews.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from scratchformer.data.framing import clean_review, encode_review, frame_tokens, review_token_lists
from scratchformer.data.windows import SPECIAL_TOKENS
from scratchformer.tokenize.bpe import NEWER_UNICODE_LETTERS, PROBE_TEXT, BPETokenizer
from scratchformer.web.tokenizer import js_pattern, tokenizer_record
from support.web import NODE, run_node

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")
MAX_LEN = 64

# Chapter 1's hard cases and the places where JavaScript's regular expressions differ from
# Python's: \s (U+0085, U+001C-U+001F are space in Python, U+FEFF only in JavaScript),
# letters newer than one engine's Unicode tables, astral characters (two UTF-16 units).
HARD_CASES = [
    PROBE_TEXT, "苹果", "我今天吃了一个苹果。苹果很好吃！", "张三住在西安，李四住在北京。",
    "😀", "I loved it 😀😀😀!", "👩‍👩‍👧 family 🇫🇷 flag 👍🏽", "café naïve résumé Ångström",
    "e\u0301 (combining accent) vs \u00e9", "Ελληνικά, русский, עברית, العربية, हिन्दी",
    " " * 5, " " * 300, "a" + " " * 1000 + "b", "\n\n\n", "x\t\t\ty", " \n \n  \t ",
    "ends with spaces   ", "   starts with spaces", "\u00a0\u00a0non-breaking\u00a0",
    "Great!<br /><br />Really.", "<BR/>upper<br>bare<br  />spaced", "a<br \t/>b",
    "1,234,567.89", "in 2026 it cost $12.50", "٣٤٥ and ⅫⅫ and ½", "x=1.5e3?",
    "don't can't won't I'm you're we've they'll he'd", "DON'T I'M", "it’s curly’s",
    "'s 're 'll", "a\x85b", "a\x1cb\x1d\x1e\x1f", "a\ufeffb", "line\u2028sep\u2029para",
    "\u3000ideographic\u3000space", "tab\x0bvertical\x0cform",
    "".join(chr(first) for first, _ in NEWER_UNICODE_LETTERS) + " letters",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛", "<|endoftext|> as text", "", "!!!???...", "....." * 200,
    "supercalifragilisticexpialidocious" * 30, "苹" * 2000,
]

WORDS = ["the", "movie", "film", "plot", "actor", "actress", "scene", "was", "a", "and",
         "not", "bad", "at", "all", "great", "awful", "boring", "loved", "hated", "it",
         "I", "we", "they", "director's", "script", "ending", "10/10", "1/10", "90s",
         "café", "naïve", "über", "señor", "苹果", "電影", "😀", "👍", "—", "...", "!!",
         "(", ")", "\"quoted\"", "it's", "don't", "I'd", "you'll", "3.5", "2,000",
         "<br />", "<br /><br />", "\t", "  ", "\n", "Ω", "ß", "İstanbul", "ǅ"]


def generated_reviews(count: int, seed: int = 0) -> list[str]:
    """Toy reviews: words, punctuation, numbers, scripts, emoji and line breaks mixed."""
    rng = random.Random(seed)
    reviews = []
    for _ in range(count):
        words = rng.choices(WORDS, k=rng.randint(1, 120))
        separators = rng.choices([" ", " ", " ", "", "  ", ", ", ". "], k=len(words))
        reviews.append("".join(w + s for w, s in zip(words, separators)))
    return reviews


@pytest.fixture(scope="module")
def classifier_record() -> dict:
    framing = {"max_len": MAX_LEN, "truncation": "head+tail"}
    return tokenizer_record(BPETokenizer.from_gpt2(), "tiktoken", framing)


@pytest.fixture(scope="module")
def gpt_tokenizer() -> BPETokenizer:
    text = "\n".join(clean_review(t) for t in generated_reviews(400, seed=1) + HARD_CASES)
    return BPETokenizer.train(text, 700, special_tokens=SPECIAL_TOKENS)


def check_classifier(record: dict, texts: list[str], tmp_path: Path) -> None:
    results = run_node(record, texts, tmp_path)
    expected = review_token_lists(texts)
    wrong = [i for i, (r, e) in enumerate(zip(results, expected)) if r["ordinary"] != e]
    assert not wrong, (f"{len(wrong)} of {len(texts)} texts differ, first "
                       f"{texts[wrong[0]][:200]!r}")
    # framed as `encode_review` frames a text: its tokens, framed (the first hundred through
    # `encode_review` itself; the rest are not tokenized a second time)
    for i, (text, tokens, result) in enumerate(zip(texts, expected, results)):
        framed = (encode_review(text, MAX_LEN, "head+tail") if i < 100
                  else frame_tokens(tokens, MAX_LEN, "head+tail"))
        assert result["framed"] == framed, repr(text[:200])


def test_javascript_tokenizes_the_hard_cases_as_tiktoken_does(
        classifier_record: dict, tmp_path: Path) -> None:
    check_classifier(classifier_record, HARD_CASES, tmp_path)


def test_javascript_tokenizes_generated_reviews_as_tiktoken_does(
        classifier_record: dict, tmp_path: Path) -> None:
    check_classifier(classifier_record, generated_reviews(3000), tmp_path)


def test_javascript_tokenizes_with_the_gpts_trained_vocabulary(
        gpt_tokenizer: BPETokenizer, tmp_path: Path) -> None:
    record = tokenizer_record(gpt_tokenizer, "regex")
    texts = HARD_CASES + generated_reviews(2000, seed=2) + ["lone \ud800 surrogate"]
    results = run_node(record, texts, tmp_path)
    for text, result in zip(texts, results):
        cleaned = clean_review(text)
        assert result["ordinary"] == gpt_tokenizer.encode_ordinary(cleaned), repr(text[:200])
        assert result["decoded"] == gpt_tokenizer.decode(result["ordinary"])
    assert results[0]["decoded"] == PROBE_TEXT


def test_translated_patterns_keep_other_escapes_and_refuse_unknown_classes() -> None:
    assert js_pattern(r"\d+|\.", "regex") == r"\d+|\."
    assert js_pattern(r"\S", "regex").startswith("[^")
    with pytest.raises(ValueError, match="cannot translate"):
        js_pattern(r"\p{Lu}", "regex")
    with pytest.raises(ValueError, match="cannot translate"):
        js_pattern(r"[\S]", "regex")


def test_javascript_tokenizes_all_imdb_test_reviews_as_tiktoken_does(
        classifier_record: dict, tmp_path: Path) -> None:
    if not os.environ.get("IMDB_DIR"):
        pytest.skip("IMDB_DIR does not name a local copy of IMDB: the 25,000 test reviews "
                    "are checked only where they are at hand")
    from scratchformer.data.imdb import load_imdb

    texts = load_imdb(splits=["test"])["test"].texts
    assert len(texts) == 25000
    check_classifier(classifier_record, texts, tmp_path)


def review_windows_rule(token_ids: list[int], max_len: int, framing: dict) -> list[list[int]]:
    """The rule of the package's `review_windows` (truncation "windows"), written out: the
    tokens in consecutive, non-overlapping windows of `max_len - 2` (the last one shorter; no
    tokens, one empty window), each `[CLS] window [SEP]` padded with `[PAD]` to `max_len`."""
    budget = max_len - 2
    chunks = [token_ids[start:start + budget] for start in range(0, len(token_ids), budget)] or [[]]
    return [[framing["cls"], *chunk, framing["sep"]] + [framing["pad"]] * (budget - len(chunk))
            for chunk in chunks]


def tokens_long(count: int) -> str:
    """A generated review of exactly `count` tokens (GPT-2's), padded with " the"."""
    text = " ".join(generated_reviews(40, seed=3)).rstrip()
    while len(review_token_lists([text])[0]) > count:
        text = text[:len(text) * 9 // 10].rstrip()
    while len(review_token_lists([text])[0]) < count:
        text += " the"
    assert len(review_token_lists([text])[0]) == count
    return text


def test_javascript_frames_a_review_in_windows_as_python_does(tmp_path: Path) -> None:
    """A classifier that reads in windows: the page cuts a 600-token review into the windows
    Python's rule gives (254, 254 and 92 tokens for `max_len` 256), and the edge cases too: an
    empty review, one token, exactly one and two full windows, and one token more."""
    max_len = 256
    record = tokenizer_record(BPETokenizer.from_gpt2(), "tiktoken",
                              {"max_len": max_len, "truncation": "windows"})
    framing = record["framing"]
    texts = [tokens_long(600), "", "Fine", "the" + " the" * 253, "the" + " the" * 254,
             "the" + " the" * 507, "the" + " the" * 508]
    results = run_node(record, texts, tmp_path)
    for text, result in zip(texts, results):
        body = review_token_lists([text])[0]
        assert result["ordinary"] == body
        assert result["framed"] == review_windows_rule(body, max_len, framing), (len(body), text[:80])
    sizes = [[window.index(framing["sep"]) - 1 for window in result["framed"]] for result in results]
    assert sizes == [[254, 254, 92], [0], [1], [254], [254, 1], [254, 254], [254, 254, 1]]
