"""What the browser checks share: one headless Chromium per module."""

from pathlib import Path

import pytest
from local_servers import CHROMIUM, launch_chromium
from playwright.sync_api import sync_playwright


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium, or set CHROMIUM")
    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()
