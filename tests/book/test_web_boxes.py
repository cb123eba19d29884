"""The model boxes' files hold to their records and rules (the browser test holds the built pages
to the same):

- the classifier box starts with the first review of the book's written set, as its comment
  says, and that review is the written set's record's first;
- each box's no-JavaScript fallback names the run its manifest says the served model comes from,
  in the export command a reader would type;
- the GPT box's long prompt is the written set's first 20 reviews, one after another;
- `book/results/web_contributions.json` is what chapter 11's `reading_contributions` gives now,
  on the served ONNX file, for the fixed clear reviews, which it scored all of, hits counted
  by the set's rule; the claim it tests (more hits than not) holds;
- `book/results/web_boxes.json` measured the models the site serves.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from html.parser import HTMLParser
from pathlib import Path

import pytest

from support import ROOT

WEB = ROOT / "_static" / "web"
MODELS = ROOT / "_static" / "models"
RESULTS = ROOT / "book" / "results"
WRITTEN = [json.loads(line) for line in
           (RESULTS / "handwritten_reviews.jsonl").read_text(encoding="utf-8").splitlines() if line]


class Parts(HTMLParser):
    """The text of the elements of a box's HTML with a given class (the first of each)."""

    def __init__(self, wanted: set[str]) -> None:
        super().__init__()
        self.wanted, self.found, self.open = wanted, {}, []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        classes = set((dict(attrs).get("class") or "").split())
        self.open.append((tag, classes & self.wanted))
        for name in classes & self.wanted:
            self.found.setdefault(name, "")

    def handle_endtag(self, tag: str) -> None:
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        for _, names in self.open:
            for name in names:
                self.found[name] += data


def parts(page: Path, *names: str) -> dict[str, str]:
    parser = Parts(set(names))
    parser.feed(page.read_text(encoding="utf-8"))
    return {name: " ".join(text.split()) for name, text in parser.found.items()}


def served_run(name: str) -> str:
    """The run folder the manifest's training command wrote: its `--out` (a `.json` record's
    run is the folder of the same name)."""
    manifest = json.loads((MODELS / name / "manifest.json").read_text(encoding="utf-8"))
    words = shlex.split(manifest["command"])
    out = words[words.index("--out") + 1]
    return out.removesuffix(".json")


def test_the_classifier_box_starts_with_the_first_written_review() -> None:
    box = parts(WEB / "classifier.html", "sf-review")
    record = json.loads((RESULTS / "handwritten_reviews.json").read_text(encoding="utf-8"))
    assert box["sf-review"] == WRITTEN[0]["text"] == record["reviews"][0]["text"]


@pytest.mark.parametrize("name, page", [("imdb", "classifier.html"), ("gpt", "gpt.html")])
def test_the_fallback_names_the_served_run(name: str, page: str) -> None:
    run = served_run(name)
    fallback = parts(WEB / page, "sf-offline")["sf-offline"]
    assert f"the run {run}," in fallback, (run, fallback)
    command = re.search(r"scratchformer export-web --checkpoint (\S+) --out (\S+)", fallback)
    assert command and command[1] in (run, f"{run}/best.pt"), fallback
    assert command[2] == f"_static/models/{name}"


def test_the_long_prompt_is_the_first_20_written_reviews() -> None:
    text = parts(WEB / "gpt.html", "sf-long-text")["sf-long-text"]
    assert text == " ".join(review["text"] for review in WRITTEN[:20])


def test_the_contributions_record_is_what_the_function_gives_now() -> None:
    """Recomputed on the served ONNX file: every review's tokens, parts (1e-9: the same
    arithmetic), hardest token and hit; the hits counted; more hits than not."""
    pytest.importorskip("onnxruntime", reason="the web extra is not installed")
    import runpy
    import sys

    record = json.loads((RESULTS / "web_contributions.json").read_text(encoding="utf-8"))
    clear = ROOT / "tests" / "data" / "clear_reviews.json"
    assert record["reviews_file"]["sha256"] == hashlib.sha256(clear.read_bytes()).hexdigest()
    assert record["model"]["model_onnx_sha256"] == json.loads(
        (MODELS / "imdb" / "manifest.json").read_text())["files"]["model.onnx"]["sha256"]
    reviews = json.loads(clear.read_text(encoding="utf-8"))["reviews"]
    assert [row["text"] for row in record["reviews"]] == [review["text"] for review in reviews]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        script = runpy.run_path(str(ROOT / "benchmarks" / "web_contributions.py"), run_name="check")
        args = script["parse"]([])
        again = script["measure"](args)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert again["hits"] == record["hits"] == sum(row["hit"] for row in record["reviews"])
    for old, new in zip(record["reviews"], again["reviews"]):
        assert old["tokens"] == new["tokens"] and old["hardest"] == new["hardest"], old["text"]
        assert max(abs(a - b) for a, b in zip(old["parts"], new["parts"])) < 1e-9
        assert old["hit"] == new["hit"]
    print(f"hits: {record['hits']} of {len(reviews)}")
    assert record["hits"] > len(reviews) / 2


def test_the_box_record_measured_the_served_models() -> None:
    record = json.loads((RESULTS / "web_boxes.json").read_text(encoding="utf-8"))
    manifest = (MODELS / "gpt" / "manifest.json").read_bytes()
    assert record["gpt_manifest_sha256"] == hashlib.sha256(manifest).hexdigest()
    for name, box in (("imdb", "sf-classifier"), ("gpt", "sf-gpt")):
        files = record["bytes"]["first_use"][box]["files"]
        served = json.loads((MODELS / name / "manifest.json").read_text())["files"]
        assert files[f"/_static/models/{name}/model.onnx"] == served["model.onnx"]["bytes"]
    for prompt in ("default", "long"):
        row = record["cache"][prompt]
        assert len(row["rounds"]) == record["cache"]["rounds"]
        assert row["median_round"] in row["rounds"]


def test_the_chapter_states_the_limit_the_box_keeps() -> None:
    """Chapter 11 says up to how many tokens the box works out parts: the worker's limit."""
    limit = int(re.search(r"const READING_LIMIT = (\d+);", (WEB / "worker.mjs").read_text())[1])
    chapter = " ".join((ROOT / "book" / "11_training.md").read_text(encoding="utf-8").split())
    assert f"the box works out parts for reviews of up to {limit:,} tokens" in chapter
