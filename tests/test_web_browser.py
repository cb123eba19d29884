"""The pages' model boxes in headless Chromium.

First, a small classifier and a small GPT stand in for the site's models in
`_build/html/_static/models/`: the appendix's page must give PyTorch's verdicts (within 1e-3)
for three reviews typed into it, the same contribution for a token, and the same ids as
`generate` for greedy steps with and without the key/value cache. Then the models the site
serves (the recorded runs', committed in `_static/models/`) run on chapters 11 and 12 and are
compared with ONNX Runtime in Python on the same files. No request may leave 127.0.0.1; each
test prints the time to the first verdict and the GPT's tokens per second.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from conftest import ROOT
from test_browser import SCREENSHOTS, browser, site  # noqa: F401 - fixtures

pytest.importorskip("onnx", reason="the web extra is not installed: pip install '.[web]'")
sys.path.insert(0, str(ROOT / "tools"))
import book_site  # noqa: E402

from scratchformer.bert import BertConfig, BertForSequenceClassification  # noqa: E402
from scratchformer.checkpoint import save_checkpoint  # noqa: E402
from scratchformer.evaluation import token_contributions  # noqa: E402
from scratchformer.framing import encode_review  # noqa: E402
from scratchformer.gpt import GPTConfig, GPTModel, generate  # noqa: E402
from scratchformer.gpt_data import SPECIAL_TOKENS  # noqa: E402
from scratchformer.gpt_train import save_gpt_checkpoint  # noqa: E402
from scratchformer.tokenizer import BPETokenizer  # noqa: E402
from scratchformer.web_export import export_web  # noqa: E402

pytestmark = pytest.mark.book
MAX_LEN = 64
REVIEWS = ["Not bad at all.", "A dull, boring film: I hated it 😀<br />Never again.",
           "苹果 loved the acting, superb and great!"]


@pytest.fixture
def models(html_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    if not (html_dir / "_static" / "ort" / "ort.wasm.min.mjs").is_file():
        pytest.skip("onnxruntime-web is not in the built site: run `make mathjax` and build")
    work = tmp_path_factory.mktemp("web-models")
    torch.manual_seed(0)
    config = BertConfig(d_model=32, max_len=MAX_LEN, num_layers=2, num_heads=2,
                        pooling="mean", dropout=0.0)
    classifier = BertForSequenceClassification(config).eval()
    save_checkpoint(work / "classifier.pt", classifier, config)
    tokenizer = BPETokenizer.train("the film was great and the plot was dull " * 50, 320,
                                   special_tokens=SPECIAL_TOKENS)
    gpt = GPTModel(GPTConfig(vocab_size=tokenizer.n_vocab, context_length=64, d_model=32,
                             num_layers=2, num_heads=2)).eval()
    (work / "gpt").mkdir()
    save_gpt_checkpoint(work / "gpt" / "best.pt", gpt)
    tokenizer.save(work / "gpt" / "tokenizer.json")
    target = html_dir / "_static" / "models"
    served = work / "served"  # the site's own models wait here while the small ones stand in
    served.mkdir()
    for name in ("imdb", "gpt"):
        if (target / name).exists():
            shutil.move(target / name, served / name)
    try:
        export_web(work / "classifier.pt", target / "imdb")
        export_web(work / "gpt", target / "gpt")
        assert book_site.write_model_index(html_dir) == ["gpt", "imdb"]
        yield {"classifier": classifier, "gpt": gpt, "tokenizer": tokenizer}
    finally:
        for name in ("imdb", "gpt"):
            shutil.rmtree(target / name, ignore_errors=True)
            if (served / name).exists():
                shutil.move(served / name, target / name)
        book_site.write_model_index(html_dir)


def wait_for(browser: Any, script: str, timeout: float = 60) -> Any:  # noqa: F811
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout).until(lambda driver: driver.execute_script(script))


VERDICT = "return document.querySelector('#sf-classifier .sf-verdict').dataset.probability"
RUNS = "return +document.querySelector('#sf-classifier .sf-verdict').dataset.runs"
IDS = "return document.querySelector('#sf-classifier .sf-verdict').dataset.ids"
GPT_IDS = "return document.querySelector('#sf-gpt .sf-text').dataset.ids"


def type_review(browser: Any, review: str) -> list[int]:  # noqa: F811
    """Type `review` into the classifier's box and wait for its verdict: the ids it framed."""
    box = browser.find_element("css selector", "#sf-classifier .sf-review")
    before = int(browser.execute_script(RUNS))
    browser.execute_script("arguments[0].value = arguments[1];"
                           "arguments[0].dispatchEvent(new Event('input'));", box, review)
    wait_for(browser, f"{RUNS} > {before}")
    return json.loads(browser.execute_script(IDS))


def run_greedy(browser: Any, prompt: str, sentiment: str, count: int, use_cache: bool,  # noqa: F811
               timeout: float = 60) -> tuple[list[int], float]:
    """Greedy `count` tokens in the GPT's box after `sentiment` ("" for none) and `prompt`,
    with or without the cache: the ids on the page and the tokens per second it reports."""
    browser.execute_script("""
        const root = document.getElementById('sf-gpt');
        root.querySelector('.sf-prompt').value = arguments[0];
        root.querySelector('.sf-sentiment').value = arguments[1];
        root.querySelector('.sf-temperature').value = '0';
        root.querySelector('.sf-count').value = arguments[2];
        const cache = root.querySelector('.sf-cache');
        cache.checked = arguments[3];
        cache.dispatchEvent(new Event('change'));
        root.querySelector('.sf-reset').click();
        root.querySelector('.sf-speed').textContent = '';
        root.querySelector('.sf-run').click();""", prompt, sentiment, str(count), use_cache)
    wait_for(browser, "return document.querySelector('#sf-gpt .sf-speed').textContent", timeout)
    speed = browser.execute_script(
        "return document.querySelector('#sf-gpt .sf-speed').dataset.tokensPerSecond")
    return json.loads(browser.execute_script(GPT_IDS)), float(speed)


def check_offline_and_quiet(browser: Any, site: str) -> list[str]:  # noqa: F811
    """Assert that no request left `site` and the console logged no error; the requests."""
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map((r) => r.name)")
    outside = [url for url in resources if not url.startswith(site)]
    assert not outside, outside
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    return resources


def test_the_widgets_give_pythons_numbers_offline(
        browser: Any, site: str, models: dict) -> None:  # noqa: F811
    started = time.perf_counter()
    browser.get(site + "book/web.html")
    wait_for(browser, VERDICT)
    first_verdict = time.perf_counter() - started
    classifier = models["classifier"]
    for review in REVIEWS:
        ids = encode_review(review, MAX_LEN, "head+tail")
        assert type_review(browser, review) == ids
        with torch.no_grad():
            expected = classifier(torch.tensor([ids])).softmax(-1)[0, 1].item()
        seen = float(browser.execute_script(VERDICT))
        assert abs(seen - expected) < 1e-3, (review, seen, expected)
        verdict = browser.find_element("css selector", "#sf-classifier .sf-verdict").text
        assert verdict.startswith("positive" if expected >= 0.5 else "negative")
    shares = token_contributions(classifier, torch.tensor([ids]))[0]
    spans = browser.find_elements("css selector", "#sf-classifier .sf-tokens span")
    assert len(spans) == sum(i != classifier.config.pad_id for i in ids)
    assert abs(float(spans[3].get_attribute("data-contribution")) - shares[3].item()) < 1e-3

    gpt, tokenizer = models["gpt"], models["tokenizer"]
    prompt = "the film was"
    start = [tokenizer.special_ids["<|endoftext|>"]] + tokenizer.encode_ordinary(prompt)
    expected = generate(gpt, torch.tensor([start]), 12, temperature=0)[0].tolist()
    speeds = {}
    for use_cache in (True, False, True, False):  # the second round of each is timed warm
        ids, speeds[use_cache] = run_greedy(browser, prompt, "", 12, use_cache)
        assert ids == expected, use_cache
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "web.png"))
    resources = check_offline_and_quiet(browser, site)
    assert any("/_static/ort/" in url for url in resources)
    print(f"first verdict {first_verdict:.2f} s after the page was asked for; GPT "
          f"{speeds[True]:.1f} tokens/s with the cache, {speeds[False]:.1f} without")


SERVED = ROOT / "_static" / "models"


def greedy_with_onnx(session: Any, manifest: dict, ids: list[int], steps: int) -> list[int]:
    """Greedy continuation of `ids` by an exported GPT, the whole prefix each step (no cache)."""
    import numpy as np

    config = manifest["config"]
    empty = np.zeros((config["num_layers"], 1, config["num_heads"], 0, manifest["head_dim"]),
                     dtype=np.float32)
    for _ in range(steps):
        logits = session.run(["logits"], {"ids": np.array([ids], dtype=np.int64),
                                          "past_keys": empty, "past_values": empty})[0]
        ids = ids + [int(logits.reshape(-1, logits.shape[-1])[-1].argmax())]
    return ids


def test_the_recorded_models_run_on_their_chapters(
        browser: Any, site: str, html_dir: Path) -> None:  # noqa: F811
    """The site's own models: the files its manifests list, byte for byte; chapter 11's box
    gives ONNX Runtime's (Python) verdicts on three reviews, chapter 12's box the same greedy
    tokens with and without the cache. Prints the figures a reader would feel."""
    import hashlib

    import onnxruntime as ort

    missing = [name for name in ("imdb", "gpt") if not (SERVED / name / "manifest.json").is_file()]
    if missing:
        pytest.skip(f"this checkout has no exported {' or '.join(missing)} in _static/models/")
    manifests = {name: json.loads((SERVED / name / "manifest.json").read_text())
                 for name in ("imdb", "gpt")}
    for name, manifest in manifests.items():
        for file, entry in manifest["files"].items():
            served = (html_dir / "_static" / "models" / name / file).read_bytes()
            assert hashlib.sha256(served).hexdigest() == entry["sha256"], (name, file)
            assert len(served) <= 8_000_000, f"{name}/{file}: {len(served):,} bytes"
    browser.execute_cdp_cmd("Network.clearBrowserCache", {})  # the small models had these URLs
    classifier = ort.InferenceSession(SERVED / "imdb" / "model.onnx")
    framing = json.loads((SERVED / "imdb" / "tokenizer.json").read_text())["framing"]
    started = time.perf_counter()
    browser.get(site + "book/11_training.html")
    wait_for(browser, VERDICT, timeout=120)
    first_verdict = time.perf_counter() - started
    for review in REVIEWS:
        ids = encode_review(review, framing["max_len"], framing["truncation"])
        assert type_review(browser, review) == ids
        probabilities, shares = classifier.run(["probabilities", "contributions"],
                                               {"ids": torch.tensor([ids]).numpy()})[:2]
        seen = float(browser.execute_script(VERDICT))
        assert abs(seen - probabilities[0, 1]) < 1e-3, (review, seen, probabilities)
    spans = browser.find_elements("css selector", "#sf-classifier .sf-tokens span")
    assert abs(float(spans[2].get_attribute("data-contribution")) - shares[0, 2]) < 1e-3
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.execute_script("document.getElementById('sf-classifier').scrollIntoView()")
    browser.save_screenshot(str(SCREENSHOTS / "classifier_widget.png"))

    gpt = ort.InferenceSession(SERVED / "gpt" / "model.onnx")
    browser.get(site + "book/12_gpt.html")
    wait_for(browser, GPT_IDS, 120)
    speeds, expected = {}, None
    for use_cache in (True, False, True, False):  # the second round of each is timed warm
        ids, speeds[use_cache] = run_greedy(browser, "This movie was", "<|positive|>", 30,
                                            use_cache, timeout=120)
        if expected is None:
            expected = greedy_with_onnx(gpt, manifests["gpt"], ids[:-30], 30)
        assert ids == expected, use_cache
    browser.execute_script("document.getElementById('sf-gpt').scrollIntoView()")
    browser.save_screenshot(str(SCREENSHOTS / "gpt_widget.png"))
    check_offline_and_quiet(browser, site)
    print(f"recorded models: first verdict {first_verdict:.2f} s after chapter 11 was asked "
          f"for; GPT {speeds[True]:.1f} tokens/s with the cache, {speeds[False]:.1f} without")


def test_the_boxes_work_on_the_chinese_pages(browser: Any, site: str, html_dir: Path) -> None:  # noqa: F811
    """The Chinese edition serves the same models from its own site: chapter 11's box there
    gives ONNX Runtime's (Python) verdicts too, and fetches nothing from elsewhere."""
    import onnxruntime as ort

    if not (SERVED / "imdb" / "manifest.json").is_file():
        pytest.skip("this checkout has no exported imdb model in _static/models/")
    classifier = ort.InferenceSession(SERVED / "imdb" / "model.onnx")
    framing = json.loads((SERVED / "imdb" / "tokenizer.json").read_text())["framing"]
    browser.get(site + "zh/book/11_training.html")
    wait_for(browser, VERDICT, timeout=120)
    for review in REVIEWS:
        ids = encode_review(review, framing["max_len"], framing["truncation"])
        assert type_review(browser, review) == ids
        probabilities = classifier.run(["probabilities"], {"ids": torch.tensor([ids]).numpy()})[0]
        seen = float(browser.execute_script(VERDICT))
        assert abs(seen - probabilities[0, 1]) < 1e-3, (review, seen, probabilities)
    resources = check_offline_and_quiet(browser, site)
    assert any("/zh/_static/models/imdb/" in url for url in resources), resources
