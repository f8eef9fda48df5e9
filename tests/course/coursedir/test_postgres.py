"""The whole grading cycle against a real PostgreSQL gradebook, shared by parallel workers.

A PostgreSQL server is started in a temporary data directory, reached on a Unix socket only
(`tests/postgres_server.py`).
A scratch course whose nbgrader_config.py points `c.CourseDirectory.db_url` at it goes through
release, collect (a Canvas export), autograde (two graders sharing the gradebook's work queue at
once, as two machines would, then a run on two workers that regrades nothing), manual grading
through nbgrader's API (as the formgrader does it), feedback and grades; no SQLite file may
appear.
"""

import csv
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from autograded import autograded_scores
from nbgrader.api import Gradebook
from postgres_server import postgres_server

from course.coursedir import gradebook_db, paths
from course.coursedir.nbgrader_run import instructor as run_instructor
from course.coursedir.nbgrader_run import nbgrader_environment
from course.coursedir.scratch import scratch_course
from course.grading import queue

pytestmark = pytest.mark.slow  # a PostgreSQL server, and a class graded into it

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
CANVAS_GRADEBOOK = (
    "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Lab 01: Softmax (98765),"
    "Current Score,Final Score\n"
    "    Points Possible,,,,,10.00,(read only),(read only)\n"
    '"Lovelace, Ada",12345,s001,ada,Section A,,,\n'
    '"Turing, Alan",23456,s002,alan,Section A,,,\n'
    '"Hopper, Grace",34567,s003,grace,Section B,,,\n'
)


@pytest.fixture(scope="module")
def postgres_url():
    """A running PostgreSQL server with an empty database; its SQLAlchemy URL."""
    with postgres_server() as url:
        yield url


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


def grade_at_once(root, count):
    """`count` graders of the class, each in a process of its own, all at once (as machines do)."""
    command = [sys.executable, "-m", "course.instructor", "autograde", LAB, "--root", str(root)]
    processes = [
        subprocess.Popen(
            [*command, "--jobs", "1"],
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
    steps["graders"] = grade_at_once(root, 2)
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


def test_two_graders_at_once_then_a_parallel_run_fill_the_postgres_gradebook(cycle):
    for output, returncode in cycle["graders"]:
        assert returncode == 0, output
        assert "3 students graded" in output, output  # each reports the whole class
    assert "3 students graded" in cycle["autograde"].stdout, cycle["autograde"].stdout
    finished = queue.Queue(cycle["url"], LAB).rows()
    assert {state for state, *_ in finished.values()} == {"graded"}, finished
    assert [gradings for _, _, gradings, _ in finished.values()] == [1, 1, 1], finished
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
