"""`make lab`'s server serves the formgrader and a notebook's kernel, and warns of nothing."""

import asyncio
import shutil

import pytest
import requests
from local_servers import jupyter
from tornado.websocket import websocket_connect

from course.coursedir import paths

pytestmark = pytest.mark.slow


async def open_kernel_channels(url, token, kernel_id):
    """Connect to a kernel's websocket as a notebook does, and hang up a moment later."""
    address = url.replace("http", "ws", 1)
    socket = await websocket_connect(
        f"{address}/api/kernels/{kernel_id}/channels?token={token}&session_id=check"
    )
    await asyncio.sleep(1)
    socket.close()


def test_the_lab_server_logs_no_warning_that_the_course_causes(tmp_path):
    shutil.copy(paths.ROOT / "nbgrader_config.py", tmp_path)
    with jupyter("lab", tmp_path) as (url, token):
        headers = {"Authorization": f"token {token}"}
        page = requests.get(f"{url}/formgrader/manage_assignments", headers=headers, timeout=60)
        assert page.status_code == 200
        kernel = requests.post(f"{url}/api/kernels", headers=headers, json={}, timeout=60).json()
        asyncio.run(open_kernel_channels(url, token, kernel["id"]))
        requests.delete(f"{url}/api/kernels/{kernel['id']}", headers=headers, timeout=60)
    warnings = [line for line in (tmp_path / "jupyter.log").read_text().splitlines()
                if line.startswith(("[W", "[E")) or "not recognized" in line]  # fmt: skip
    assert not warnings, "\n".join(warnings)
