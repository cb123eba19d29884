"""What the book's model boxes cost a reader, measured in headless Chromium on the built site.

The built site (`make book`, `_build/html`) is served on 127.0.0.1 as its host serves it (text
gzip-compressed for a browser that accepts it), and Chromium (Debian's `chromium` and
`chromium-driver`, as `make browser` installs them) opens the pages with a box, as a reader
does:

- bytes: each page with a box, from an empty cache, left alone (every byte it fetched, the theme's
  included, as the browser's resource timing counts them on the wire); then each box's first use
  (a focus: the bytes the site sent for the worker, the runtime and the model, from an empty
  cache), by file;
- the GPT box's key/value cache: "Time both ways" (greedy, 40 new tokens), after the default
  prompt and after "Long prompt", round after round, the two prompts taking turns; each round
  gives the rate with the cache and the rate without it, on the same tokens. The median round
  of each prompt is reported.

Timings record the machine's load (the appendix "Running it for real", "Timing on a quiet
machine") and are refused on a busy machine unless `--allow-busy`, which records them marked so.

    python benchmarks/web_boxes.py --record book/results/web_boxes.json

What this deliberately does not handle: other browsers, a network between the reader and the
site (bytes are counted, not timed), and the classifier's speed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scratchbook.arguments import existing_folder, output_file, positive_int

ROOT = Path(__file__).resolve().parents[1]
BOX_PAGES = ("book/11_training.html", "book/12_gpt.html", "book/web.html")
COMPRESSED = {".html", ".css", ".js", ".mjs", ".json", ".svg", ".txt", ".xml"}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: the built site, counts positive, `--record` writable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=existing_folder, default=ROOT / "_build" / "html",
                        help="the built site (default: _build/html)")
    parser.add_argument("--rounds", type=positive_int, default=3,
                        help="timed rounds of each prompt (default 3)")
    parser.add_argument("--tokens", type=positive_int, default=40,
                        help="new tokens a round writes (default 40)")
    parser.add_argument("--record", type=output_file, default=None,
                        help="write the record here (default: print only)")
    parser.add_argument("--allow-busy", action="store_true",
                        help="record the timings even if the machine was busy (marked so)")
    return parser.parse_args(argv)


if __name__ == "__main__":  # bad arguments are refused here, before anything is started
    ARGUMENTS = parse()

import functools
import gzip
import http.server
import io
import json
import platform
import shutil
import statistics
import tempfile
import threading
import time
from typing import Any

from scratchbook.records import WEB_BOXES
from scratchformer.runs.folders import command_record
from scratchformer.runs.hardware import (MachineBusy, check_quiet, hardware_info,
                                         one_minute_load, timing_load)

SENT: list[tuple[str, int]] = []  # (path, bytes) of every response the site sent


class Handler(http.server.SimpleHTTPRequestHandler):
    """The site as GitHub Pages serves it (text gzip-compressed when the browser accepts it),
    counting the bytes of each response's body."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def send_head(self) -> Any:
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            return super().send_head()
        if path.suffix in COMPRESSED and "gzip" in self.headers.get("Accept-Encoding", ""):
            body = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(str(path)))
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            size, sent = len(body), io.BytesIO(body)
        else:
            size, sent = path.stat().st_size, super().send_head()
        if self.command == "GET":
            SENT.append((self.path.split("?")[0], size))
        return sent


def chromium(profile: Path) -> Any:
    """Headless Chromium that can reach 127.0.0.1 only."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    browser = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
    driver = shutil.which("chromedriver") or "/usr/lib/chromium/chromedriver"
    if browser is None or not Path(driver).exists():
        raise SystemExit("no chromium and chromedriver here: `make browser` installs them")
    options = Options()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--window-size=1280,900", f"--user-data-dir={profile}",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(flag)
    driver_ = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    driver_.set_script_timeout(60)
    return driver_


def wait_for(browser: Any, script: str, timeout: float = 120) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout).until(lambda driver: driver.execute_script(script))


PAGE_BYTES = """
const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
return entries.map((e) => ({path: new URL(e.name).pathname, wire: e.transferSize || e.encodedBodySize,
                            decoded: e.decodedBodySize}));
"""
FIRST_CONTROL = {"sf-classifier": ".sf-review", "sf-gpt": ".sf-prompt"}


def kind_of(path: str) -> str:
    """Which part of a box a file the site sent belongs to."""
    if path.startswith("/_static/ort/"):
        return "runtime"
    if path.startswith("/_static/models/"):
        return "model"
    if path.startswith("/_static/web/"):
        return "scripts"
    return "other"


def measure_bytes(browser: Any, site: str) -> dict:
    """Each box page before the reader touches it, and each box's first use, in bytes."""
    pages = {}
    for page in BOX_PAGES:
        browser.execute_cdp_cmd("Network.clearBrowserCache", {})
        browser.get(site + page)
        wait_for(browser, "return document.readyState === 'complete' && Array.from("
                          "document.querySelectorAll('.sf-widget.sf-live')).every((b) =>"
                          " b.querySelector('.sf-status').textContent.includes('MB'))")
        time.sleep(2)  # anything late (fonts, MathJax's parts) has come
        fetched = browser.execute_script(PAGE_BYTES)
        pages[page] = {"wire": sum(e["wire"] for e in fetched),
                       "decoded": sum(e["decoded"] for e in fetched), "files": len(fetched)}
        print(f"{page} before use: {pages[page]['wire'] / 1e3:,.0f} kB on the wire "
              f"({pages[page]['decoded'] / 1e3:,.0f} kB decoded), {len(fetched)} files")
    first_use = {}
    for box, page in (("sf-classifier", "book/11_training.html"), ("sf-gpt", "book/12_gpt.html")):
        browser.execute_cdp_cmd("Network.clearBrowserCache", {})
        browser.get(site + page)
        wait_for(browser, f"return document.getElementById('{box}').dataset.state === 'waiting'")
        SENT.clear()
        browser.execute_script(f"document.querySelector('#{box} {FIRST_CONTROL[box]}').focus()")
        wait_for(browser, f"return document.getElementById('{box}').dataset.state === 'ready'")
        files: dict[str, int] = {}
        for path, size in SENT:
            files[path] = files.get(path, 0) + size
        other = {path: size for path, size in files.items() if kind_of(path) == "other"}
        files = {path: size for path, size in files.items() if path not in other}
        by_kind: dict[str, int] = {}
        for path, size in files.items():
            by_kind[kind_of(path)] = by_kind.get(kind_of(path), 0) + size
        # the page's own late files (a figure scrolled into view) are not the box's
        first_use[box] = {"total": sum(files.values()), "by_kind": by_kind, "files": files,
                          "page_files_meanwhile": other}
        print(f"{box} first use: {first_use[box]['total'] / 1e6:.2f} MB: " + ", ".join(
            f"{kind} {size / 1e6:.2f} MB" for kind, size in sorted(by_kind.items())))
    return {"before_use": pages, "first_use": first_use}


SET_PROMPT = """
const root = document.getElementById('sf-gpt');
const fields = arguments[0];
for (const [selector, value] of Object.entries(fields)) root.querySelector(selector).value = value;
if (arguments[1]) root.querySelector('.sf-long').click(); else root.querySelector('.sf-reset').click();
"""
RATES = "return +(document.querySelector('#sf-gpt .sf-rates').dataset.runs || 0)"


def measure_cache(browser: Any, site: str, rounds: int, tokens: int) -> dict:
    """Rounds of "Time both ways" after the default prompt and after the long one."""
    browser.get(site + "book/12_gpt.html")
    wait_for(browser, "return document.getElementById('sf-gpt').dataset.state === 'waiting'")
    default_prompt = browser.execute_script("return document.querySelector('#sf-gpt .sf-prompt').value")
    browser.execute_script("document.querySelector('#sf-gpt .sf-prompt').focus()")
    wait_for(browser, "return document.getElementById('sf-gpt').dataset.state === 'ready'")
    fields = {".sf-temperature": "0", ".sf-count": str(tokens), ".sf-sentiment": "",
              ".sf-prompt": default_prompt}
    samples: dict[str, list[dict]] = {"default": [], "long": []}
    for round_index in range(rounds + 1):  # the first round warms up and is not kept
        order = ("default", "long") if round_index % 2 == 0 else ("long", "default")
        for prompt in order:
            browser.execute_script(SET_PROMPT, fields, prompt == "long")
            wait_for(browser, "return document.querySelector('#sf-gpt .sf-text').dataset.ids")
            before = browser.execute_script(RATES)
            browser.execute_script("document.querySelector('#sf-gpt .sf-compare').click()")
            wait_for(browser, f"{RATES} > {before}", timeout=600)
            rates = browser.execute_script("return {...document.querySelector('#sf-gpt .sf-rates').dataset}")
            sample = {"cached": float(rates["cached"]), "uncached": float(rates["uncached"]),
                      "before": int(rates["before"]), "made": int(rates["made"])}
            if round_index:
                samples[prompt].append(sample)
            print(f"round {round_index}{' (warm-up)' if not round_index else ''}, {prompt} prompt: "
                  f"{sample['made']} tokens after {sample['before']}: {sample['cached']:.1f} "
                  f"tokens/s with the cache, {sample['uncached']:.1f} without")
    summary = {}
    for prompt, kept in samples.items():
        median = statistics.median(s["cached"] / s["uncached"] for s in kept)
        middle = min(kept, key=lambda s: abs(s["cached"] / s["uncached"] - median))
        summary[prompt] = {"prompt": default_prompt if prompt == "default" else "Long prompt",
                           "median_round": middle, "ratio": middle["cached"] / middle["uncached"],
                           "rounds": kept}
    return summary


def main(args: argparse.Namespace, argv: list[str]) -> None:
    load_at_start = one_minute_load()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Handler, directory=args.site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    site = f"http://127.0.0.1:{server.server_address[1]}/"
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        browser = chromium(Path(profile))
        try:
            version = browser.capabilities.get("browserVersion")
            sizes = measure_bytes(browser, site)
            cache = measure_cache(browser, site, args.rounds, args.tokens)
        finally:
            browser.quit()
            server.shutdown()
            server.server_close()
    load = timing_load(load_at_start, one_minute_load(), own=(0, 1))
    for prompt, row in cache.items():
        middle = row["median_round"]
        print(f"{prompt} prompt, median round: {middle['cached']:.1f} tokens/s with the cache, "
              f"{middle['uncached']:.1f} without ({row['ratio']:.1f}x), {middle['made']} tokens "
              f"after {middle['before']}")
    print(f"load: {load}")
    if args.record is None:
        return
    try:
        check_quiet(load, args.allow_busy)
    except MachineBusy as err:
        raise SystemExit(f"{args.record} not written: {err}") from None
    package = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["dependencies"]
    hardware = hardware_info(__import__("torch").device("cpu"))
    record = {
        **command_record(["python", "benchmarks/web_boxes.py", *argv]),
        "what": "the model boxes in headless Chromium: bytes before use and on first use, and "
                "the GPT box's rates with and without the key/value cache",
        "hardware": {"cpu": hardware["cpu"], "logical_cpus": hardware["logical_cpus"]},
        "software": {"chromium": version, "onnxruntime-web": package["onnxruntime-web"],
                     "python": platform.python_version()},
        "load": load,
        "gpt_manifest_sha256": __import__("hashlib").sha256(
            (ROOT / "_static" / "models" / "gpt" / "manifest.json").read_bytes()).hexdigest(),
        "bytes": sizes,
        "cache": {"tokens": args.tokens, "rounds": args.rounds, "greedy": True, **cache},
    }
    WEB_BOXES.write(record, args.record)
    print(f"wrote {args.record}")


if __name__ == "__main__":
    main(ARGUMENTS, sys.argv[1:])
