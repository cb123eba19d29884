"""Headless Chromium and a local server for the built book, as the browser tests use them
(tests/browser/conftest.py makes fixtures of them)."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support import ROOT

SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
    # A reader on a plane: any host but this one fails to resolve, so a CDN load would show.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


def find_browser() -> tuple[str, str] | None:
    """Paths of Chromium and ChromeDriver, or None."""
    browser = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
    driver = shutil.which("chromedriver") or ("/usr/lib/chromium/chromedriver"
                                              if Path("/usr/lib/chromium/chromedriver").exists() else None)
    return (browser, driver) if browser and driver else None


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves quietly, recording each request's method and path (`SITE_REQUESTS`): the requests a page's workers
    make appear in no timeline the page can read, but every one that reaches the site is here."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        SITE_REQUESTS.append(f"{self.command} {self.path}")


SITE_REQUESTS: list[str] = []


def serve(html_dir: Path, handler: type[QuietHandler] = QuietHandler) -> Iterator[str]:
    """`html_dir` served on 127.0.0.1 (a free port) by a thread with `handler`; yields the base
    URL, and stops the server when resumed (a fixture's body)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=html_dir))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
