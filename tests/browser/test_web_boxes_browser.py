"""What the boxes tell a reader, on the built pages, in headless Chromium, with the models the site
serves:

- on the fixed clear reviews (`tests/data/clear_reviews.json`), the classifier box's darkest
  token (the extreme of its colour scale) is the one `book/results/web_contributions.json`
  records, with its part, and the hits come out at the recorded rate;
- the box starts with the first review of the book's written set, and the page lists, beside
  it, the served model's errors on that set as its record holds them; a click puts one in the box;
- each box's fallback, on the built page, names the run its manifest says the model comes from;
- a text with no Latin letter gets a note that the model read English reviews, in English on the
  English page and in Chinese on the Chinese edition's;
- the GPT box's long prompt is the written set's first reviews, and "Time both ways" writes the
  greedy tokens ONNX Runtime gives, with the cache, then reads them again without it, and shows
  both rates. Rates are printed, never asserted (benchmarks/web_boxes.py records them).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, ZH_DIR
from test_browser import browser, site  # noqa: F401 - fixtures
from test_web_browser import (GPT_IDS, PARTS, SERVED, SUM_LINE, box_page, greedy_with_onnx,  # noqa: F401
                              load_boxes, served, served_specials, type_review, until_first_special,
                              wait_for)

pytestmark = pytest.mark.book
RESULTS = ROOT / "book" / "results"
WRITTEN = [json.loads(line) for line in
           (RESULTS / "handwritten_reviews.jsonl").read_text(encoding="utf-8").splitlines() if line]

DARKEST = ("return Array.from(document.querySelectorAll('#sf-classifier .sf-tokens span.sf-level-10'),"
           " (span) => [span.textContent, +span.dataset.contribution])")


def test_the_clear_reviews_are_coloured_as_recorded(browser: Any, site: str, served: dict) -> None:  # noqa: F811
    """Each clear review typed into chapter 11's box: its parts are the record's (1e-3), the
    token at the end of the colour scale is the recorded hardest one, and the hits (that token
    inside one of the review's sentiment words) are the recorded count, above half."""
    record = json.loads((RESULTS / "web_contributions.json").read_text(encoding="utf-8"))
    load_boxes(browser, site, "book/11_training.html")
    hits = 0
    for row in record["reviews"]:
        type_review(browser, row["text"])
        shown = browser.execute_script(PARTS)
        assert [label for label, _ in shown] == row["tokens"], row["text"]
        assert max(abs(part - old) for (_, part), old in zip(shown, row["parts"])) < 1e-3, row["text"]
        # the end of the colour scale: the darkest shade, on the largest part in size
        darkest = browser.execute_script(DARKEST)
        label, part = max(darkest, key=lambda token: abs(token[1]))
        assert label == row["hardest_token"], (row["text"], darkest)
        assert part == max((part for _, part in shown), key=abs)
        assert abs(float(browser.execute_script(SUM_LINE)["baseline"]) - row["baseline"]) < 1e-3
        hits += row["hit"]
    print(f"the darkest token is a sentiment word in {hits} of {len(record['reviews'])} clear reviews")
    assert hits == record["hits"] > len(record["reviews"]) / 2


def test_the_box_starts_with_the_written_set_and_lists_its_errors(browser: Any, site: str,  # noqa: F811
                                                                  served: dict) -> None:
    """The first view: the written set's first review, whatever the verdict, and beside the
    box each error the record holds (text, right label, the served model's P(positive)); a
    click on one puts its text in the box, and the box's P is the recorded one (1e-3)."""
    record = json.loads((RESULTS / "handwritten_reviews.json").read_text(encoding="utf-8"))
    load_boxes(browser, site, "book/11_training.html")
    box = browser.find_element("css selector", "#sf-classifier .sf-review")
    assert box.get_attribute("value") == WRITTEN[0]["text"] == record["reviews"][0]["text"]
    errors = [review for review in record["reviews"]
              if (review["scores"]["transformer"] >= 0.5) != (review["label"] == 1)]
    buttons = browser.find_elements("css selector", "ul.sf-errors button.sf-try")
    assert [b.get_attribute("data-text") for b in buttons] == [review["text"] for review in errors]
    for button, review in zip(buttons, errors):
        label = "positive" if review["label"] else "negative"
        assert button.text == (f"{label} review, P(positive) {review['scores']['transformer']:.2f}: "
                               f"{review['text']}")
    print(f"{len(errors)} errors of {len(record['reviews'])} listed beside the box")
    before = int(browser.execute_script(
        "return +(document.querySelector('#sf-classifier .sf-verdict').dataset.runs || 0)"))
    browser.execute_script("arguments[0].scrollIntoView(); arguments[0].click()", buttons[0])
    wait_for(browser, "return +(document.querySelector('#sf-classifier .sf-verdict').dataset.runs || 0)"
                      f" > {before} && document.getElementById('sf-classifier').dataset.pending === 'false'")
    assert box.get_attribute("value") == errors[0]["text"]
    seen = float(browser.execute_script(
        "return document.querySelector('#sf-classifier .sf-verdict').dataset.probability"))
    assert abs(seen - errors[0]["scores"]["transformer"]) < 1e-3


@pytest.mark.parametrize("page", ["book/11_training.html", "book/12_gpt.html", "book/web.html",
                                  f"{ZH_DIR}/book/11_training.html"])
def test_the_fallback_names_the_served_run(browser: Any, site: str, served: dict,  # noqa: F811
                                           html_dir: Path, page: str) -> None:
    page = box_page(html_dir, page)
    browser.get(site + page)
    for box, name in (("sf-classifier", "imdb"), ("sf-gpt", "gpt")):
        found = browser.find_elements("css selector", f"#{box} .sf-offline")
        if not found:
            continue
        words = shlex.split(served[name]["command"])
        run = words[words.index("--out") + 1].removesuffix(".json")
        text = " ".join(found[0].get_attribute("textContent").split())
        # the English box names "the run ...", its Chinese twin "即运行 ... 得到的模型"
        said = f"即运行 {run} 得到的模型" if page.startswith(f"{ZH_DIR}/") else f"the run {run},"
        assert said in text, text
        assert re.search(rf"--checkpoint {re.escape(run)}(/best\.pt)? --out _static/models/{name}\b", text), text


def test_the_cache_is_timed_both_ways_on_the_long_prompt(browser: Any, site: str, served: dict) -> None:  # noqa: F811
    """Long prompt, greedy, 12 tokens: the box writes ONNX Runtime's greedy tokens with the cache
    (all 12, past an end of text, which it says it drew), reads them again without it, and
    shows both rates side by side (printed, not asserted)."""
    import onnxruntime as ort

    load_boxes(browser, site, "book/12_gpt.html")
    root = "document.getElementById('sf-gpt')"
    browser.execute_script(f"const root = {root};"
                           "root.querySelector('.sf-temperature').value = '0';"
                           "root.querySelector('.sf-count').value = '12';"
                           "root.querySelector('.sf-sentiment').value = '';"
                           "document.querySelector('#sf-gpt .sf-text').dataset.ids = '';"
                           "root.querySelector('.sf-long').click()")
    wait_for(browser, f"return {GPT_IDS[7:]}")
    prompt = browser.execute_script(f"return {root}.querySelector('.sf-prompt').value")
    assert prompt == " ".join(review["text"] for review in WRITTEN[:20])
    start = json.loads(browser.execute_script(GPT_IDS))
    browser.execute_script(f"{root}.querySelector('.sf-compare').click()")
    wait_for(browser, f"return +({root}.querySelector('.sf-rates').dataset.runs || 0) > 0", timeout=300)
    rates = browser.execute_script(f"return {{...{root}.querySelector('.sf-rates').dataset}}")
    shown = browser.execute_script(f"return {root}.querySelector('.sf-rates').textContent")
    ids = json.loads(browser.execute_script(GPT_IDS))
    session = ort.InferenceSession(SERVED / "gpt" / "model.onnx")
    assert ids == greedy_with_onnx(session, served["gpt"], start, 12)  # all 12: timing goes on
    specials = set(served_specials().values())  # past an end of text, the text shown stops there
    text = browser.execute_script(f"return {root}.querySelector('.sf-text').textContent")
    ended = until_first_special(ids, len(start), specials)
    assert (len(ended) < len(ids)) == bool(browser.execute_script(
        f"return {root}.querySelector('.sf-message').textContent")), text
    assert int(rates["made"]) == len(ids) - len(start) and int(rates["before"]) == len(start)
    assert float(rates["cached"]) > 0 and float(rates["uncached"]) > 0
    assert "with the cache:" in shown and "without:" in shown
    print(f"long prompt ({len(start)} ids): {shown}")
