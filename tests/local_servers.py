"""What the checks that start local servers and a browser share: free ports, Chromium, screenshots.

Chromium is Debian's (`.ci/run` installs it; set CHROMIUM to use another), started headless with
the flags that keep it off the network, as root needs `--no-sandbox`.
"""

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from course.coursedir import paths
from course.coursedir.nbgrader_run import nbgrader_environment

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


@contextlib.contextmanager
def jupyter(app, folder, *options):
    """Run `jupyter APP` on `folder` (its log in folder/jupyter.log) until it answers: (URL, token).

    It runs with the course's nbgrader configuration, and is stopped on leaving.
    """
    port, token = free_port(), secrets.token_hex(16)
    command = [
        sys.executable, "-m", "jupyter", app, "--no-browser", "--allow-root",
        f"--port={port}", f"--IdentityProvider.token={token}", *options,
    ]  # fmt: skip
    log_path = folder / "jupyter.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, cwd=folder, env=nbgrader_environment(), stdout=log, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            process.kill()
            pytest.fail(f"jupyter {app} did not start:\n" + log_path.read_text()[-3000:])
        try:
            yield url, token
        finally:
            process.terminate()
            process.wait(timeout=30)
