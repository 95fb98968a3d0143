"""Browser tests keep a screenshot of the page when they fail: each test's outcome is noted on it."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, Any]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report
