"""A course graded locally gets a Manage Assignments page without the exchange's columns.

The decision (the course folder's own empty exchange, or another one) and the page nbgrader's
templates render with the course's in front: a note and the columns hidden for a local course,
nbgrader's page unchanged where an exchange is configured.
"""

import re
from pathlib import Path
from types import SimpleNamespace

from jinja2 import Environment, FileSystemLoader
from nbgrader.server_extensions.formgrader import handlers

from course.coursedir import local_formgrader
from course.coursedir.local_formgrader import (
    EXCHANGE_CELLS,
    EXCHANGE_HEADERS,
    graded_locally,
    install,
)

HUB_EXCHANGE = "/srv/nbgrader/exchange"  # deploy/class_settings.py's default


def formgrader_settings(course_root):
    """Server settings as nbgrader's formgrader leaves them, for a course at `course_root`."""
    formgrader = SimpleNamespace(coursedir=SimpleNamespace(root=str(course_root)))
    environment = Environment(loader=FileSystemLoader([handlers.template_path]))
    return {"nbgrader_formgrader": formgrader, "nbgrader_jinja2_env": environment}


def manage_assignments(settings, exchange):
    """The Manage Assignments page as ManageAssignmentsHandler renders it."""
    template = settings["nbgrader_jinja2_env"].get_template("manage_assignments.tpl")
    return template.render(
        url_prefix=".",
        base_url="",
        windows=False,
        course_id="attention-step-by-step",
        exchange=exchange,
        exchange_missing=False,
        current_config={},
        default_timezone="+0000",
    )


def test_a_course_is_graded_locally_when_its_exchange_is_its_own_empty_folder(tmp_path):
    assert graded_locally(tmp_path / "exchange", tmp_path)
    assert graded_locally(f"{tmp_path}/./exchange/", str(tmp_path))
    assert not graded_locally(HUB_EXCHANGE, tmp_path)
    assert not graded_locally(tmp_path / "other" / "exchange", tmp_path)
    assert not graded_locally("", tmp_path)  # an exchange that is not a folder
    assert not graded_locally(tmp_path / "exchange", None)


def test_the_course_configuration_makes_the_local_exchange_the_module_expects():
    config = Path(local_formgrader.__file__).parents[2] / "nbgrader_config.py"
    made = re.search(r'Path\(__file__\)\.parent / "(\w+)"', config.read_text())
    assert made and made.group(1) == local_formgrader.LOCAL_EXCHANGE


def test_a_local_course_page_says_why_and_hides_the_exchange_columns(tmp_path):
    settings = formgrader_settings(tmp_path)
    assert install(settings)
    page = manage_assignments(settings, str(tmp_path / "exchange"))
    assert 'id="course-graded-locally"' in page
    assert "make collect" in page and "JupyterHub exchange" in page
    assert "#main-table td.release, #main-table td.collect" in page
    assert '["Status", "Release", "Collect", "Release Feedback"]' in page
    assert "manage_assignments.js" in page  # nbgrader's page, with its script
    assert page.count('id="course-graded-locally"') == 1


def test_a_course_with_an_exchange_gets_nbgraders_page_unchanged(tmp_path):
    nbgrader_page = manage_assignments(formgrader_settings(tmp_path), HUB_EXCHANGE)
    settings = formgrader_settings(tmp_path)
    install(settings)
    install(settings)  # a second install changes nothing
    assert manage_assignments(settings, HUB_EXCHANGE) == nbgrader_page
    other_pages = settings["nbgrader_jinja2_env"].get_template("gradebook_assignments.tpl")
    assert other_pages.filename.startswith(handlers.template_path)


def test_the_hidden_columns_are_nbgraders_exchange_columns():
    """Each header is in nbgrader's page and each cell class in the rows its script makes."""
    template = Path(handlers.template_path, "manage_assignments.tpl").read_text()
    headers = re.findall(r"<th[^>]*>([^<]+)</th>", template)
    script = Path(handlers.static_path, "js", "manage_assignments.js").read_text()
    insert_row = script[script.index("var insertRow") :]
    insert_row = insert_row[: insert_row.index("return row;")]
    cells = re.findall(r'addClass\("(?:text-center )?([\w-]+)"\)', insert_row)
    assert len(headers) == len(cells)
    hidden = [cells.index(name) for name in EXCHANGE_CELLS]
    assert [headers[index] for index in hidden] == list(EXCHANGE_HEADERS)


def test_a_server_without_a_formgrader_is_left_alone():
    assert not install({})
