"""The browser tests' fixtures: the built book served on 127.0.0.1, and headless Chromium."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.browser import CHROMIUM_FLAGS, find_browser, serve


@pytest.fixture(scope="module")
def site(html_dir: Path) -> Iterator[str]:
    """`_build/html` served on 127.0.0.1 (a free port) by a thread; yields the base URL."""
    yield from serve(html_dir)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    found = find_browser()
    if found is None:
        reason = "no chromium + chromedriver on PATH (install Debian's chromium and chromium-driver: make browser)"
        if os.environ.get("BOOK_BROWSER_REQUIRED") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = found[0]
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=found[1]), options=options)
    driver.set_script_timeout(40)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
