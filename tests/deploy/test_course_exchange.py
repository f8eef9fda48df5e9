"""deploy/course_exchange.py's collect without a hub: the current user plays every student.

make test-hub takes the same attack through a real JupyterHub with real Unix users.
"""

import datetime
import logging
import os
import pwd
import sys
import unicodedata

import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import parse_utc

from course.coursedir import paths
from course.coursedir.nbgrader_run import nbgrader_environment
from course.grading.kernels import policy

sys.path.insert(0, str(paths.ROOT / "deploy"))
import course_exchange  # noqa: E402 - deploy/ is not a package

pytestmark = pytest.mark.slow  # releases, submits and collects through a real nbgrader exchange
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


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's folder is made with chown")
def test_a_newer_folder_made_in_a_students_name_by_another_user_leaves_theirs_collected(
    course, caplog
):
    course_folder, inbound = course
    (submission(inbound, "10:00:00") / "notes.txt").write_text("mine")
    planted = submission(inbound, "11:00:00")
    (planted / "notes.txt").write_text("planted")
    os.chown(planted, 65534, 65534)  # as if another user had made it
    lines = collect(course_folder, inbound, caplog)
    assert any(f"made by {course_exchange.owner(planted)}" in line for line in lines), lines
    assert (course_folder / "submitted" / ME / LAB / "notes.txt").read_text() == "mine"


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


def newest_change(folder):
    """The newest change time of `folder` and its files, as collect must read it (naive UTC)."""
    times = [os.lstat(path).st_ctime for path in [folder, *folder.rglob("*")]]
    return datetime.datetime.fromtimestamp(max(times), datetime.UTC).replace(tzinfo=None)


def collected_time(course_folder):
    """The time in the collected submission's timestamp.txt."""
    return parse_utc((course_folder / "submitted" / ME / LAB / "timestamp.txt").read_text())


def test_a_back_dated_submission_is_collected_at_its_real_arrival_and_shown(course, caplog):
    course_folder, inbound = course
    folder = inbound / f"{ME}+{LAB}+2000-01-01 00:00:00.000000 UTC+abc"
    folder.mkdir()
    (folder / NOTEBOOK).write_text("{}")
    (folder / "timestamp.txt").write_text("2000-01-01 00:00:00.000000 UTC")
    arrived = newest_change(folder)
    lines = collect(course_folder, inbound, caplog)
    assert collected_time(course_folder) == arrived
    assert any(
        "the submission says 2000-01-01 00:00:00 UTC, its files arrived at "
        f"{arrived:%Y-%m-%d %H:%M:%S} UTC" in line
        for line in lines
    ), lines


def test_a_file_changed_after_an_honest_submission_makes_it_later(course, caplog):
    course_folder, inbound = course
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    claim = now - datetime.timedelta(hours=2)  # submitted two hours ago, by its claim
    folder = inbound / f"{ME}+{LAB}+{claim:%Y-%m-%d %H:%M:%S.%f} UTC+abc"
    folder.mkdir()
    (folder / "timestamp.txt").write_text(f"{claim:%Y-%m-%d %H:%M:%S.%f} UTC")
    (folder / NOTEBOOK).write_text("{}")  # written now: two hours after its claim
    collect(course_folder, inbound, caplog)
    assert collected_time(course_folder) == newest_change(folder)


def test_an_honest_claim_a_few_minutes_before_its_files_settled_stands(course, caplog):
    course_folder, inbound = course
    claim = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    claim -= datetime.timedelta(minutes=4)  # submitting took 4 minutes on a busy hub
    folder = inbound / f"{ME}+{LAB}+{claim:%Y-%m-%d %H:%M:%S.%f} UTC+abc"
    folder.mkdir()
    (folder / "timestamp.txt").write_text(f"{claim:%Y-%m-%d %H:%M:%S.%f} UTC")
    lines = collect(course_folder, inbound, caplog)
    assert collected_time(course_folder) == claim
    assert not any("the submission says" in line for line in lines), lines


def test_a_submission_whose_name_is_no_time_is_collected_at_its_arrival(course, caplog):
    course_folder, inbound = course
    folder = inbound / f"{ME}+{LAB}+not a time+abc"
    folder.mkdir()
    (folder / "timestamp.txt").write_text("yesterday, honestly")
    lines = collect(course_folder, inbound, caplog)
    assert collected_time(course_folder) == newest_change(folder)
    assert any("the submission says no time" in line for line in lines), lines


ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[1A\rINFO all collected\u202e"


def test_names_with_terminal_escapes_are_logged_escaped(course, caplog):
    course_folder, inbound = course
    folder = submission(inbound, "10:00:00")
    (folder / f"{ESCAPES}.ipynb").symlink_to(course_folder / "source" / LAB / NOTEBOOK)
    os.mkfifo(folder / f"answers{ESCAPES}")
    other = inbound / f"{ESCAPES}+{LAB}+2026-01-01 10:00:00.000000 UTC+abc"  # names another
    other.mkdir()
    lines = collect(course_folder, inbound, caplog)
    escaped = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[1A\\x0dINFO all collected\\u202e"
    assert f"refused {escaped}.ipynb from student {ME}: a symbolic link" in lines, lines
    assert f"refused answers{escaped} from student {ME}: a FIFO" in lines, lines
    assert any(line.startswith(f"Not collected: {escaped}+{LAB}+") for line in lines), lines
    for line in lines:
        assert not any(unicodedata.category(ch) in ("Cc", "Cf") for ch in line), repr(line)


def test_a_notebook_larger_than_the_grader_reads_whole_is_refused_and_named(course, caplog):
    course_folder, inbound = course
    folder = submission(inbound, "10:00:00")
    with open(folder / NOTEBOOK, "wb") as notebook:  # a cell of 100 MB, say
        notebook.truncate(policy.SUBMITTED_FILE_BYTES + 1)
    lines = collect(course_folder, inbound, caplog)
    size = policy.SUBMITTED_FILE_BYTES + 1
    refusal = f"{size} bytes, over the limit of {policy.SUBMITTED_FILE_BYTES} per file"
    assert f"refused {NOTEBOOK} from student {ME}: {refusal}" in lines, lines
    assert not (course_folder / "submitted" / ME / LAB / NOTEBOOK).exists()
