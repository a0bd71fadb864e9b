"""Chromium from Debian's package, driven by Playwright: how the class report's tests open it. CI installs both
(.ci/run): there, a missing one fails; elsewhere the test says what to install."""

from __future__ import annotations

import os
import shutil

import pytest


def chromium():
    """(Playwright's sync_playwright, the path of Debian's chromium)."""
    missing = []
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
        missing.append("Playwright (pip install -e '.[dev]')")
    path = shutil.which("chromium")
    if path is None:
        missing.append("Chromium (Debian: apt-get install chromium)")
    if missing and os.environ.get("CI") != "true":
        pytest.skip(f"no browser to open the report in: install {' and '.join(missing)}")
    assert not missing, f"CI must have {' and '.join(missing)}: .ci/run installs them"
    return sync_playwright, path
