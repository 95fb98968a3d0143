"""Headless Chromium (Debian's `chromium` and `chromium-driver`) driven over WebDriver's plain HTTP API."""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
]


def available() -> bool:
    """Whether Chromium and its driver are installed (`.ci/run` installs them)."""
    return shutil.which("chromedriver") is not None and Path(CHROMIUM).exists()


class Browser:
    """One WebDriver session: open pages, run scripts in them, wait for conditions, take screenshots."""

    def __init__(self, client: httpx.Client, session: str) -> None:
        self._client = client
        self._session = session

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self._client.request(method, f"/session/{self._session}{path}", json=body)
        value = response.json()["value"]
        if response.status_code != 200:
            raise RuntimeError(f"webdriver {path}: {value.get('message', value)}")
        return value

    def open(self, url: str) -> None:
        """Load a page and wait for it."""
        self._call("POST", "/url", {"url": url})

    def js(self, script: str, *args: Any) -> Any:
        """Run `script` (a function body; `arguments` holds args) in the page and return its value."""
        return self._call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def wait(self, condition: str, *args: Any, timeout: float = 30) -> Any:
        """Wait until the JS expression `condition` is truthy in the page; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(f"return ({condition});", *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page never showed: {condition}")
            time.sleep(0.1)

    def screenshot(self, path: Path) -> None:
        """Save what the page looks like now as a PNG."""
        path.write_bytes(base64.b64decode(self._call("GET", "/screenshot")))


class Page:
    """The page as a user works it, with a screenshot of each state it reaches."""

    def __init__(self, browser: Browser, folder: Path) -> None:
        self.browser = browser
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def shot(self, name: str) -> Path:
        """Save the page as `name.png` in this test's screenshot folder; its path."""
        path = self.folder / f"{name}.png"
        self.browser.screenshot(path)
        return path

    def open(self, url: str) -> None:
        """Load (or reload) the page and wait until it knows what the server covers."""
        self.browser.open(url)
        self.ready()

    def ready(self) -> None:
        """Wait until the page knows what the server covers."""
        self.browser.wait("document.body.dataset.ready === '1'")

    def ask(self, question: str) -> None:
        self.browser.js(
            "document.getElementById('question').value = arguments[0];"
            "document.getElementById('ask').requestSubmit();",
            question,
        )

    def answered(self, turns: int) -> list[dict[str, object]]:
        """Wait for `turns` answers on the page; what each shows (answer, citation labels)."""
        self.browser.wait(
            "document.querySelectorAll('.turn[data-turn]').length === arguments[0] "
            "&& document.getElementById('send').hidden === false",
            turns,
        )
        return self.browser.js(
            "return Array.from(document.querySelectorAll('.turn[data-turn]')).map(t => ({"
            "answer: t.querySelector('.answer').innerText,"
            "html: t.querySelector('.answer').innerHTML,"
            "citations: Array.from(t.querySelectorAll('.citations li')).map(li => li.innerText)}));"
        )

    def status(self) -> str:
        return self.browser.js("return document.getElementById('status').innerText;")

    def stored(self) -> dict[str, object]:
        return json.loads(self.browser.js("return localStorage.getItem('haiku-serve:conversation');"))


@contextmanager
def chromium(profile: Path) -> Iterator[Browser]:
    """A headless Chromium with a new empty profile, for the duration of the block."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    driver = subprocess.Popen(
        ["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            _wait_for_driver(client)
            options = {"binary": CHROMIUM, "args": [*FLAGS, f"--user-data-dir={profile}"]}
            capabilities = {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}
            started = client.post("/session", json={"capabilities": capabilities}).json()["value"]
            session = started["sessionId"]
            try:
                yield Browser(client, session)
            finally:
                client.delete(f"/session/{session}")
    finally:
        driver.terminate()
        driver.wait(timeout=10)


def _wait_for_driver(client: httpx.Client) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            if client.get("/status").json()["value"]["ready"]:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("chromedriver did not start")
        time.sleep(0.1)
