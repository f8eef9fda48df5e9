"""What the checks that start local servers and a browser share: free ports, Chromium, screenshots.

Chromium is Debian's (`.ci/run` installs it; set CHROMIUM to use another), started headless with
the flags that keep it off the network, as root needs `--no-sandbox`.
"""

import os
import socket

from course.build import paths

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = paths.ROOT / "browser-screenshots"  # ignored by git


def free_port():
    """A TCP port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch_chromium(playwright):
    """Headless Chromium, started by Playwright."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
