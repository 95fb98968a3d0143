"""Running haiku as root with file permissions enforced, so unreadable folders can be tested."""

from __future__ import annotations

import os
import shutil

import pytest


def without_root_powers() -> list[str]:
    """A command prefix that runs haiku with file permissions enforced, even for root."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root reads any folder, and setpriv (to drop that power) is not installed")
    # Root bypasses permissions through two capabilities; without them it is checked like any owner.
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
