"""deploy/course_exchange.py's collect without a hub: the current user plays every student.

make test-hub takes the same attack through a real JupyterHub with real Unix users.
"""

import logging
import os
import pwd
import sys

import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory

from course.coursedir import paths
from course.coursedir.nbgrader_run import nbgrader_environment

sys.path.insert(0, str(paths.ROOT / "deploy"))
import course_exchange  # noqa: E402 - deploy/ is not a package

COURSE_ID = "attention-step-by-step"
LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
ME = pwd.getpwuid(os.getuid()).pw_name
SOLUTION = "### BEGIN SOLUTION\n### BEGIN HIDDEN TESTS\n"


@pytest.fixture
def course(tmp_path, monkeypatch):
    """(course folder, inbound/): a course with its source notebook and gradebook, an exchange."""
    monkeypatch.setenv("PATH", nbgrader_environment()["PATH"])  # nbgrader runs alembic
    folder = tmp_path / "course"
    (folder / "source" / LAB).mkdir(parents=True)
    (folder / "source" / LAB / NOTEBOOK).write_text(SOLUTION)
    inbound = tmp_path / "exchange" / COURSE_ID / "inbound"
    inbound.mkdir(parents=True)
    return folder, inbound


def submission(inbound, when):
    """A new submission folder of the current user, made at `when` (e.g. "10:00:00")."""
    folder = inbound / f"{ME}+{LAB}+2026-01-01 {when}.000000 UTC+abc"
    folder.mkdir()
    (folder / "timestamp.txt").write_text(f"2026-01-01 {when}.000000 UTC")
    return folder


def collect(course_folder, inbound, caplog):
    """nbgrader's collect of lab 01 through course_exchange; the lines it logged."""
    coursedir = CourseDirectory(
        root=str(course_folder),
        course_id=COURSE_ID,
        assignment_id=LAB,
        db_url=f"sqlite:///{course_folder / 'gradebook.db'}",
    )
    log = logging.getLogger("course-exchange-test")
    exchange = course_exchange.ExchangeCollect(
        coursedir=coursedir,
        authenticator=Authenticator(),
        root=str(inbound.parent.parent),
        log=log,
    )
    with caplog.at_level(logging.INFO, logger=log.name):
        exchange.start()
    return [record.getMessage() for record in caplog.records]


def submitted_text(course_folder):
    """Everything in submitted/, as one text."""
    files = (course_folder / "submitted").rglob("*")
    return "".join(p.read_text(errors="replace") for p in files if p.is_file())


def test_collect_refuses_links_and_a_fifo_and_names_them(course, caplog):
    course_folder, inbound = course
    folder = submission(inbound, "10:00:00")
    (folder / NOTEBOOK).symlink_to(course_folder / "source" / LAB / NOTEBOOK)
    (folder / "gradebook.db").symlink_to(course_folder / "gradebook.db")
    os.mkfifo(folder / "answers.ipynb")
    (folder / "notes.txt").write_text("mine")
    lines = collect(course_folder, inbound, caplog)
    assert f"refused {NOTEBOOK} from student {ME}: a symbolic link" in lines
    assert f"refused gradebook.db from student {ME}: a symbolic link" in lines
    assert f"refused answers.ipynb from student {ME}: a FIFO" in lines
    collected = course_folder / "submitted" / ME / LAB
    assert sorted(p.name for p in collected.iterdir()) == ["notes.txt", "timestamp.txt"]
    assert "BEGIN SOLUTION" not in submitted_text(course_folder)


def test_a_submission_swapped_for_a_link_is_not_collected(course, caplog):
    course_folder, inbound = course
    link = inbound / f"{ME}+{LAB}+2026-01-01 11:00:00.000000 UTC+abc"
    link.symlink_to(course_folder / "source" / LAB, target_is_directory=True)
    lines = collect(course_folder, inbound, caplog)
    assert any("is a symbolic link" in line for line in lines), lines
    assert not (course_folder / "submitted" / ME / LAB).exists()


def test_nbgraders_ignored_names_are_still_left_behind(course, caplog):
    course_folder, inbound = course
    folder = submission(inbound, "12:00:00")
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints" / NOTEBOOK).write_text("old")
    (folder / NOTEBOOK).write_text("{}")
    collect(course_folder, inbound, caplog)
    collected = course_folder / "submitted" / ME / LAB
    assert sorted(p.name for p in collected.iterdir()) == [NOTEBOOK, "timestamp.txt"]


def test_list_inbound_skips_a_submission_whose_notebook_is_a_fifo(course, caplog):
    course_folder, inbound = course
    plain = submission(inbound, "13:00:00")
    (plain / NOTEBOOK).write_text("{}")
    planted = inbound / f"{ME}+{LAB}+2026-01-01 14:00:00.000000 UTC+def"
    planted.mkdir()
    os.mkfifo(planted / NOTEBOOK)
    log = logging.getLogger("course-exchange-test")
    exchange = course_exchange.ExchangeList(
        coursedir=CourseDirectory(root=str(course_folder), course_id=COURSE_ID),
        authenticator=Authenticator(),
        root=str(inbound.parent.parent),
        inbound=True,
        log=log,
    )
    with caplog.at_level(logging.INFO, logger=log.name):
        listed = exchange.start()
    lines = [record.getMessage() for record in caplog.records]
    assert [s["path"] for found in listed for s in found["submissions"]] == [str(plain)]
    assert f"Not listed: {planted / NOTEBOOK} is a FIFO" in lines
