"""A student's server opens the lab an LMS launch names: /user/<name>/course-lab/<NN_topic>.

The hub sends a launch there (deploy/lti_login.py). The lab is fetched from the exchange
(nbgrader's fetch, as the Assignments tab does) unless the student already has it; the page then
opens its notebook in JupyterLab. A lab that is not released yet gets a page saying so.
Enabled for students by deploy/jupyter/student/jupyter_server_config.d/lti_lab.json.
"""

import asyncio
import sys
from pathlib import Path

import class_settings
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

from course.coursedir import paths

FETCH_SECONDS = 120


async def fetch(lab, folder):
    """nbgrader's fetch of `lab` into `folder`; (exit status, its output)."""
    command = [sys.executable, "-m", "nbgrader", "fetch_assignment", lab,
               "--course", class_settings.COURSE_ID]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *command, cwd=folder, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), FETCH_SECONDS)
    return process.returncode, output.decode(errors="replace")


def lab_notebook(folder, lab):
    """The lab's notebook in `folder` (NN_topic_lab.ipynb, else the first notebook), or None."""
    preferred = folder / f"{lab}_lab.ipynb"
    if preferred.exists():
        return preferred
    return next(iter(sorted(folder.glob("*.ipynb"))), None)


class LabHandler(JupyterHandler):
    """Fetch the lab if need be, then open it."""

    @web.authenticated
    async def get(self, lab):
        """Redirect to the lab's notebook in JupyterLab."""
        if not paths.LAB_NAME.match(lab):
            raise web.HTTPError(404, f"{lab!r} is not a lab of the course")
        root = Path(self.settings["server_root_dir"]).expanduser()
        if not (root / lab).is_dir():
            status, output = await fetch(lab, root)
            if status != 0 or not (root / lab).is_dir():
                last = output.strip().splitlines()[-1:] or [""]
                raise web.HTTPError(404, f"{lab} could not be fetched (released yet?): {last[0]}")
        notebook = lab_notebook(root / lab, lab)
        path = f"{lab}/{notebook.name}" if notebook else lab
        self.redirect(url_path_join(self.base_url, "lab", "tree", path))


def _jupyter_server_extension_points():
    """Jupyter Server finds the extension here."""
    return [{"module": "lti_lab"}]


def _load_jupyter_server_extension(serverapp):
    """Add /course-lab/<lab> to the server."""
    pattern = url_path_join(serverapp.web_app.settings["base_url"], r"course-lab/([^/]+)")
    serverapp.web_app.add_handlers(".*$", [(pattern, LabHandler)])
