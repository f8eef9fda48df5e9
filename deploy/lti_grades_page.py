"""The instructor's button for grades back by LTI: /user/<instructor>/course-lti/grades.

A page of the instructor's own server (so only those who may open it, as for the formgrader)
that names the LMS course the course is linked to (as the hub recorded it, read with
`course.lms.launches`) and lists the course's labs, each with "Send grades" and "Send,
provisional too". A button runs `python -m course.lms.lti grades NN_topic` (what `make
lti-grades` runs) in the instructor's copy of the course, and the page shows its report. An
instructor's launch that names no lab lands here, and so does the launch that links the course.
Enabled for the instructor by deploy/jupyter/instructor/jupyter_server_config.d/
lti_grades_page.json.
"""

import asyncio
import html
import sys

import class_settings
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

from course.coursedir import paths
from course.lms import launches

SEND_SECONDS = 600
PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Grades to the LMS (LTI)</title></head>
<body><h1>Grades to the LMS (LTI 1.3)</h1>
<p id="linked">{linked}</p>
<p>Each button sends the lab's grades to the lab's column in that LMS course only: the column
of the activity the lab was launched from. After deleting and adding an activity again, open it
once in the LMS, then send.</p>
{report}<table>{rows}</table></body></html>"""
LINKED = """This course is linked to the LMS course <b>{name}</b> (deployment {deployment}, linked
by {by} on {time}): the hub refuses launches from any other LMS course. To move the course to
another LMS course (a new term's copy, say), set COURSE_LTI_CONTEXT_ID to its id and restart the
hub."""
NOT_LINKED = """This course is not linked to an LMS course yet: the first instructor's launch from
the LMS links it to that LMS course (or set COURSE_LTI_CONTEXT_ID in the hub's environment)."""
ROW = """<tr><td>{lab}</td><td><form method="post">{xsrf}
<input type="hidden" name="lab" value="{lab}">
<button type="submit" name="provisional" value="">Send grades</button>
<button type="submit" name="provisional" value="1">Send, provisional too</button>
</form></td></tr>"""


def linked_course(course):
    """The paragraph that names the LMS course the course is linked to (HTML)."""
    linked = launches.read_link(course / launches.LTI_FOLDER)
    if linked is None:
        return NOT_LINKED
    fields = {
        "name": linked.name,
        "deployment": linked.deployment_id or "not known yet",
        "by": linked.linked_by,
        "time": linked.time,
    }
    return LINKED.format(**{k: html.escape(str(v)) for k, v in fields.items()})


def labs(course):
    """The course's labs: the folders of source/ that hold a notebook."""
    source = course / "source"
    return (
        sorted(p.name for p in source.iterdir() if any(p.glob("*.ipynb")))
        if source.is_dir()
        else []
    )


async def send(lab, provisional, course):
    """`python -m course.lms.lti grades LAB` in `course`; (exit status, its report)."""
    command = [sys.executable, "-m", "course.lms.lti", "grades", lab]
    command += ["--provisional"] if provisional else []
    process = await asyncio.create_subprocess_exec(
        *command, cwd=course, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), SEND_SECONDS)
    return process.returncode, output.decode(errors="replace")


class GradesPage(JupyterHandler):
    """The page, and its buttons."""

    def page(self, report=""):
        """The page, with `report` (already HTML) above the labs."""
        course = class_settings.course_folder()
        rows = "".join(ROW.format(lab=html.escape(lab), xsrf=self.xsrf_form_html())
                       for lab in labs(course))  # fmt: skip
        return PAGE.format(linked=linked_course(course), report=report, rows=rows)

    @web.authenticated
    def get(self):
        """The labs and their buttons."""
        self.finish(self.page())

    @web.authenticated
    async def post(self):
        """Send one lab's grades; the page with the report."""
        lab = self.get_body_argument("lab", "")
        if not paths.LAB_NAME.match(lab):
            raise web.HTTPError(400, f"{lab!r} is not a lab of the course")
        provisional = bool(self.get_body_argument("provisional", ""))
        status, output = await send(lab, provisional, class_settings.course_folder())
        outcome = "sent" if status == 0 else "some grades were not sent"
        report = f'<h2 id="outcome">{html.escape(lab)}: {outcome}</h2><pre id="report">'
        self.finish(self.page(report + html.escape(output) + "</pre>"))


def _jupyter_server_extension_points():
    """Jupyter Server finds the extension here."""
    return [{"module": "lti_grades_page"}]


def _load_jupyter_server_extension(serverapp):
    """Add /course-lti/grades to the server."""
    pattern = url_path_join(serverapp.web_app.settings["base_url"], "course-lti/grades")
    serverapp.web_app.add_handlers(".*$", [(pattern, GradesPage)])
