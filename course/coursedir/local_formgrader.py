"""A Jupyter server extension: the formgrader of a course graded locally says so.

nbgrader's Manage Assignments page lists each lab with a status (draft, released) and Release,
Collect and Release Feedback buttons, which move notebooks through an nbgrader exchange. A
course graded on the instructor's machine has none: nbgrader_config.py points nbgrader at an
empty `exchange/` in the course folder, students get the labs from the student edition or the
LMS, and `make collect` gathers their notebooks. There the page hides those columns and says
why. A class on JupyterHub names its own exchange (deploy/), and its page is nbgrader's own.

The formgrader renders its pages from a Jinja environment in the server's settings; once every
extension is loaded, this one puts the course's Manage Assignments template in front of it.
That template extends nbgrader's (as `nbgrader/manage_assignments.tpl`), so nbgrader's page,
its script and its other templates are used as they are.
"""

from functools import partial
from pathlib import Path

from jinja2 import ChoiceLoader, DictLoader, PrefixLoader
from tornado.ioloop import IOLoop

LOCAL_EXCHANGE = "exchange"  # the empty exchange nbgrader_config.py makes in the course folder
# The columns of nbgrader's page that act on the exchange, by their headers' text, and the
# classes of their cells (manage_assignments.js).
EXCHANGE_HEADERS = ("Status", "Release", "Collect", "Release Feedback")
EXCHANGE_CELLS = ("status", "release", "collect", "release-feedback")

MANAGE_ASSIGNMENTS = """\
{%- extends "nbgrader/manage_assignments.tpl" -%}
{%- block head -%}
{{ super() }}
{%- if course_graded_locally(exchange) %}
<style>
{% for name in course_exchange_cells %}#main-table td.{{ name }}, {% endfor -%}
.course-exchange-only { display: none; }
</style>
<script>
document.addEventListener("DOMContentLoaded", function () {
  var exchange_headers = {{ course_exchange_headers | tojson }};
  document.querySelectorAll("thead th").forEach(function (header) {
    if (exchange_headers.indexOf(header.textContent.trim()) >= 0) {
      header.classList.add("course-exchange-only");
    }
  });
});
</script>
{%- endif -%}
{%- endblock -%}
{%- block messages -%}
{%- if course_graded_locally(exchange) %}
<div class="alert alert-info" id="course-graded-locally">
This course is graded on this machine: students get the labs from the student edition or the
LMS, <code>make collect</code> puts their notebooks in <code>submitted/</code> and
<code>make feedback</code> writes their feedback. Release, Collect and Release Feedback move
notebooks through a JupyterHub exchange, which this course does not have, so they are hidden
here, with the status they set (draft or released).
</div>
{%- endif -%}
{{ super() }}
{%- endblock -%}
"""


def graded_locally(exchange_root, course_root):
    """Whether nbgrader's exchange is the course folder's own empty one: no exchange is used."""
    if not exchange_root or not course_root:
        return False
    return Path(exchange_root).resolve() == (Path(course_root) / LOCAL_EXCHANGE).resolve()


def formgrader_graded_locally(settings, exchange_root):
    """graded_locally for the course the formgrader of these server settings serves."""
    formgrader = settings.get("nbgrader_formgrader")
    course_root = getattr(getattr(formgrader, "coursedir", None), "root", None)
    return graded_locally(exchange_root, course_root)


def install(settings):
    """Put the course's templates in front of the formgrader's; False if it has none yet."""
    environment = settings.get("nbgrader_jinja2_env")
    if environment is None:
        return False
    if "course_graded_locally" not in environment.globals:
        nbgrader = environment.loader
        course = DictLoader({"manage_assignments.tpl": MANAGE_ASSIGNMENTS})
        environment.loader = ChoiceLoader([course, PrefixLoader({"nbgrader": nbgrader}), nbgrader])
        environment.globals.update(
            course_graded_locally=partial(formgrader_graded_locally, settings),
            course_exchange_headers=list(EXCHANGE_HEADERS),
            course_exchange_cells=list(EXCHANGE_CELLS),
        )
    return True


def _jupyter_server_extension_points():
    """This module is a Jupyter server extension."""
    return [{"module": "course.coursedir.local_formgrader"}]


def _load_jupyter_server_extension(server):
    """Once every extension is loaded (nbgrader's formgrader after the course's), install."""

    def install_or_say():
        if not install(server.web_app.settings):
            server.log.info("No formgrader in this server: its pages are left as they are")

    IOLoop.current().add_callback(install_or_say)
