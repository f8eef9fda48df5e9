"""The formgrader's pages as the course serves them: a login for the whole server, a grading page
that says when a save failed, and a 404 for an address it does not have.

A real browser types grades through each way in: tests/browser/formgrader_check.py.
"""

from types import SimpleNamespace

import nbformat
from nbconvert.exporters import HTMLExporter
from nbgrader.server_extensions.formgrader import handlers
from tornado.web import Application

from course.coursedir import formgrader_pages
from course.coursedir.formgrader_pages import (
    NOT_SAVED_ID,
    NotFound,
    install,
    keep_login_for_the_whole_server,
)

RESOURCES = {  # what nbgrader's SubmissionHandler gives its page
    "assignment_id": "01_softmax", "notebook_id": "01_softmax_lab", "submission_id": "abc",
    "index": 0, "total": 1, "base_url": "", "student": "ada", "last_name": None,
    "first_name": None, "notebook_path": "autograded/ada/01_softmax/01_softmax_lab.ipynb",
}  # fmt: skip


def formgrader_app():
    """A web application with the formgrader's exporter and catch-all 404, as nbgrader's."""
    exporter = HTMLExporter(template_name="formgrade",
                            extra_template_basedirs=[handlers.template_path])
    return Application([(r"/formgrader/.*", handlers.Template404)], nbgrader_exporter=exporter)


def test_a_login_is_kept_for_the_whole_server():
    provider = SimpleNamespace(cookie_options={"httponly": True})
    keep_login_for_the_whole_server(provider, "/")
    assert provider.cookie_options == {"httponly": True, "path": "/"}
    configured = SimpleNamespace(cookie_options={"path": "/user/ada/"})
    keep_login_for_the_whole_server(configured, "/")
    assert configured.cookie_options == {"path": "/user/ada/"}


def test_the_grading_page_says_when_a_save_failed_and_locks_its_fields():
    app = formgrader_app()
    assert install(app) and install(app)  # twice: the page is changed once
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("An answer.")])
    page, _ = app.settings["nbgrader_exporter"].from_notebook_node(nb, resources=dict(RESOURCES))
    assert page.count("$(document).ajaxError") == 1
    assert f'"{NOT_SAVED_ID}"' in page and "NOT in the gradebook" in page
    assert 'prop("disabled", true)' in page
    assert page.index("formgrade.js") < page.index("ajaxError")  # nbgrader's page, then the note


def test_an_address_the_formgrader_does_not_have_is_answered_by_the_courses_404():
    app = formgrader_app()
    install(app)
    rule = app.default_router.rules[0].target.rules[0]
    assert rule.target is NotFound and issubclass(NotFound, handlers.Template404)


def test_a_server_without_a_formgrader_is_left_as_it_is():
    assert not install(Application([]))
    assert formgrader_pages._jupyter_server_extension_points() == [
        {"module": "course.coursedir.formgrader_pages"}]
