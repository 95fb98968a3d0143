"""The browser for the page tests: one headless Chromium per module, and the page as each test sees it.

A browser test that fails keeps a screenshot of the page as it was then, named in the failure report
(under the test's own tmp folder, so under `--basetemp` when given).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import Browser, Page, chromium

SECTION = "browser screenshot"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """One headless Chromium for this module's tests (starting one takes seconds): each test's server
    is another origin (its own port), so the page's saved state is each test's own; `page` clears it."""
    with chromium(tmp_path_factory.mktemp("browser") / "profile") as shared:
        yield shared


@pytest.fixture
def page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    """The page in the module's headless Chromium, its screenshots under the test's `screens` folder.
    Afterwards the origin's saved state is cleared, as a port the next server is given may be the same."""
    yield Page(browser, tmp_path / "screens")
    browser.js("localStorage.clear(); sessionStorage.clear();")
    browser.open("about:blank")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, Any]:
    report = yield
    shown = getattr(item, "funcargs", {}).get("page")
    if report.when == "call" and report.failed and isinstance(shown, Page):
        # Taken now, before teardown leaves the page: what the test saw when it failed.
        try:
            path = shown.shot("failure")
        except Exception as exc:  # the browser may be what failed
            report.sections.append((SECTION, f"none could be taken: {exc}"))
        else:
            report.sections.append((SECTION, f"the page when the test failed: {path}"))
    return report
