"""The whole grading cycle against a real PostgreSQL gradebook, shared by parallel workers.

A PostgreSQL server is started in a temporary data directory, reached on a Unix socket only
(as the unprivileged user `nobody` when the tests run as root, since PostgreSQL refuses root).
A scratch course whose nbgrader_config.py points `c.CourseDirectory.db_url` at it goes through
release, collect (a Canvas export), autograde (two shares graded at once by two processes, as two
machines would, then a run on two workers), manual grading through nbgrader's
API (as the formgrader does it), feedback and grades; no SQLite file may appear.
"""

import csv
import glob
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from course.coursedir import gradebook_db, paths
from course.coursedir.nbgrader_run import instructor as run_instructor
from course.coursedir.nbgrader_run import nbgrader_environment
from course.coursedir.scratch import autograded_scores, scratch_course

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
DEBIAN_BINARIES = "/usr/lib/postgresql/*/bin/pg_ctl"
SERVER_USER = "nobody"
DATABASE = "gradebook"
CANVAS_GRADEBOOK = (
    "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Lab 01: Softmax (98765),"
    "Current Score,Final Score\n"
    "    Points Possible,,,,,10.00,(read only),(read only)\n"
    '"Lovelace, Ada",12345,s001,ada,Section A,,,\n'
    '"Turing, Alan",23456,s002,alan,Section A,,,\n'
    '"Hopper, Grace",34567,s003,grace,Section B,,,\n'
)


def postgres_binaries():
    """The folder of initdb, pg_ctl and postgres (on PATH, or Debian's), or None."""
    found = shutil.which("pg_ctl") or next(iter(sorted(glob.glob(DEBIAN_BINARIES))[::-1]), None)
    return Path(found).resolve().parent if found else None


def as_server_user(command):
    """`command` run as an unprivileged user when we are root (PostgreSQL refuses root)."""
    return ["runuser", "-u", SERVER_USER, "--", *command] if os.geteuid() == 0 else command


def run_server_command(command):
    """Run a PostgreSQL program; fail the test with its output if it fails."""
    result = subprocess.run(as_server_user(command), capture_output=True, text=True)
    assert result.returncode == 0, f"{command[0]} failed:\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="module")
def postgres_url():
    """A running PostgreSQL server with an empty database; its SQLAlchemy URL."""
    binaries = postgres_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)")
    home = Path(tempfile.mkdtemp(prefix="pg-"))  # short: a socket path has at most 107 bytes
    if os.geteuid() == 0:
        shutil.chown(home, SERVER_USER)
    data = home / "data"
    run_server_command(
        [
            str(binaries / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "--locale=C",
            "-E",
            "UTF8",
            "--no-sync",
        ]
    )
    options = f"-k {home} -c listen_addresses='' -c fsync=off"
    run_server_command(
        [
            str(binaries / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(home / "log"),
            "-o",
            options,
            "-w",
            "start",
        ]
    )
    try:
        create_database(home)
        yield f"postgresql+psycopg2://postgres@/{DATABASE}?host={home}"
    finally:
        run_server_command([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"])
        shutil.rmtree(home, ignore_errors=True)


def create_database(socket_folder):
    """CREATE DATABASE gradebook on the server listening in `socket_folder`."""
    import psycopg2

    connection = psycopg2.connect(host=str(socket_folder), user="postgres", dbname="postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {DATABASE}")
    connection.close()




def canvas_export(root, lab_01_work):
    """A Canvas export of lab 01: a solution, a catalogued mistake, blank work."""
    work = {
        "lovelaceada_12345_678901": lab_01_work["solution"],
        "turingalan_23456_678902": lab_01_work["mistake"],
        "hoppergrace_34567_678903": lab_01_work["blank"],
    }
    archive = root / "downloaded" / LAB / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as bundle:
        for prefix, nb in work.items():
            bundle.writestr(f"{prefix}_{NOTEBOOK}", nbformat.writes(nb))


def grade_in_shares(root, count):
    """Autograde share K of `count` in a process of its own each, all at once (as machines do)."""
    command = [sys.executable, "-m", "course.instructor", "autograde", LAB, "--root", str(root)]
    processes = [
        subprocess.Popen(
            [*command, "--jobs", "1", "--share", f"{index}/{count}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=nbgrader_environment(),
        )
        for index in range(count)
    ]
    return [(process.communicate(timeout=900)[0], process.returncode) for process in processes]


def grade_by_hand(url, student, grade_id, score):
    """Give a written answer its points as the formgrader does: through nbgrader's Gradebook."""
    with Gradebook(url) as book:
        notebook = book.find_submission_notebook(Path(NOTEBOOK).stem, LAB, student)
        grade = next(g for g in notebook.grades if g.name == grade_id)
        found = book.find_grade_by_id(grade.id)
        found.manual_score = score
        found.needs_manual_grade = False  # what the formgrader's grade handler does on a score
        book.db.commit()


@pytest.fixture(scope="module")
def cycle(postgres_url, tmp_path_factory, lab_01_work):
    """A Canvas course with a PostgreSQL gradebook taken through the whole cycle."""
    root = tmp_path_factory.mktemp("postgres")
    scratch_course(root, [LAB], config_lines=[f"c.CourseDirectory.db_url = {postgres_url!r}"])
    canvas_export(root, lab_01_work)
    (root / "exported.csv").write_text(CANVAS_GRADEBOOK, encoding="utf-8")
    steps = {"collect": run_instructor(root, "collect", LAB)}
    steps["shares"] = grade_in_shares(root, 2)
    steps["autograde"] = run_instructor(root, "autograde", LAB, "--jobs", "2")
    grade_by_hand(postgres_url, "12345", "written_stability", 2)
    steps["feedback"] = run_instructor(root, "feedback", LAB, "--provisional")
    steps["grades"] = run_instructor(
        root, "grades", LAB, "--lms-gradebook", str(root / "exported.csv")
    )
    steps["grades_csv"] = run_instructor(root, "grades")
    return {"root": root, "url": postgres_url, **steps}


def test_the_course_reads_its_gradebook_url_from_the_configuration(cycle):
    assert gradebook_db.configured_url(cycle["root"]) == cycle["url"]


def test_every_step_succeeds_and_nothing_is_written_to_sqlite(cycle):
    for step in ("collect", "autograde", "feedback", "grades", "grades_csv"):
        result = cycle[step]
        assert result.returncode == 0, f"{step}:\n{result.stdout}\n{result.stderr}"
    assert not (cycle["root"] / "gradebook.db").exists()


def test_shares_graded_at_once_then_a_parallel_run_fill_the_postgres_gradebook(cycle):
    for output, returncode in cycle["shares"]:
        assert returncode == 0, output
    graded = [re.findall(r"(\d+) students? graded", output) for output, _ in cycle["shares"]]
    assert sum(int(count) for found in graded for count in found) == 3, cycle["shares"]
    assert "3 students graded" in cycle["autograde"].stdout, cycle["autograde"].stdout
    with Gradebook(cycle["url"]) as book:
        assert book.find_assignment(LAB).max_score == 10
        assert len(book.assignment_submissions(LAB)) == 3
    scores = autograded_scores(cycle["root"], LAB)
    assert scores["12345"] == (8, 8)
    assert 0 < scores["23456"][0] < 8
    assert scores["34567"][0] == 0


def test_manual_grades_reach_the_feedback_and_the_lms_gradebook(cycle):
    assert "Canvas: feedback of 3 students" in cycle["feedback"].stdout, cycle["feedback"].stdout
    with zipfile.ZipFile(cycle["root"] / "upload" / LAB / "feedback_canvas.zip") as bundle:
        ada = bundle.read(f"lovelaceada_12345_678901_{NOTEBOOK}").decode()
    assert "| written_stability | 2 / 2 |" in ada
    written = (cycle["root"] / "upload" / LAB / "grades_canvas.csv").read_text("utf-8-sig")
    rows = {row[1]: row[5] for row in csv.reader(io.StringIO(written))}
    assert rows["12345"] == "10"
    table = (cycle["root"] / "grades.csv").read_text()
    assert "12345,10.0" in table, table
