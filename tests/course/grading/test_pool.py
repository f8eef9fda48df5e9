"""Autograding on several workers gives what one worker gives, exactly once, even if interrupted.

One class of lab 01 (solutions, blank work, a catalogued mistake, a cell with eval, a forbidden
call, a renamed notebook) is graded with JOBS=1 and with JOBS=2 in two copies of a scratch
course; the grades, the autograded notebooks, the summary and the review lines must agree. A
third and a fourth copy are graded by a run that is killed mid-way (SIGKILL), or stopped with
Ctrl-C, then run again.
"""

import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest
from autograded import autograded_scores, cell_scores
from catalogue import mistakes
from postgres_server import postgres_server

from course import instructor
from course.coursedir import gradebook_db, notebooks, paths
from course.coursedir.nbgrader_run import nbgrader_environment
from course.coursedir.scratch import fill, solution_cells, submit
from course.grading import pool, queue
from course.grading.kernels import cgroups

pytestmark = pytest.mark.slow  # grades classes on several workers (test_pool_options: none)

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
FORBIDDEN = "def softmax(scores, dim=-1):\n    return torch.softmax(scores, dim=dim)\n"
REFUSED = "def softmax(scores, dim=-1):\n    return eval('scores')\n"
HANGS = "def softmax(scores, dim=-1):\n    while True:\n        pass\n"


def class_of_lab_01(root, solutions=3):
    """Submit a class of lab 01 that exercises every line of the summary and the review."""
    release = notebooks.read(root / "release" / LAB / NOTEBOOK)
    answers = solution_cells(LAB)
    mistake = next(m for m in mistakes(LAB) if m.name == "softmax_ignores_dim")
    for number in range(solutions):
        submit(root, LAB, f"honest{number:02d}", fill(release, answers))
    submit(root, LAB, "blank", release)
    submit(root, LAB, "mistake", fill(release, {**answers, "softmax": mistake.code}))
    submit(root, LAB, "forbidden", fill(release, {**answers, "softmax": FORBIDDEN}))
    submit(root, LAB, "refused", fill(release, {**answers, "softmax": REFUSED}))
    submit(root, LAB, "renamed", fill(release, answers), filename="Copy of lab.ipynb")


def copy_course(source, target):
    """A copy of a released scratch course with its submissions, graded by no one yet."""
    shutil.copytree(source, target)
    return target


def grading_record(root):
    """What a run leaves per student: cell scores and the autograded notebook."""
    record = {}
    for student in instructor.submitted_students(LAB, root):
        graded = paths.autograded(root, student, LAB) / NOTEBOOK
        if graded.exists():
            record[student] = (cell_scores(root, LAB, student), without_timings(graded))
    return record


def without_timings(path):
    """An autograded notebook without the clock times Jupyter stamps on each executed cell."""
    nb = notebooks.read(path)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


def relative(message, root):
    """A summary with the course's own folder written as <root>."""
    return message.replace(str(root), "<root>")


def submission_counts(root):
    """student -> how many submissions, and how many grades per submission, the gradebook holds."""
    with gradebook_db.open_gradebook(root) as book:
        found = book.assignment_submissions(LAB)
        counts = {}
        for submission in found:
            grades = [g for nb in submission.notebooks for g in nb.grades]
            names = [g.name for g in grades]
            previous = counts.get(submission.student.id, (0, 0))
            counts[submission.student.id] = (previous[0] + 1, len(names), len(set(names)))
        return counts


@pytest.fixture(scope="module")
def released(course_copy):
    """A scratch course with lab 01 released and a class submitted, graded by no one yet."""
    root = course_copy(LAB, name="released")
    class_of_lab_01(root)
    return root


@pytest.fixture(scope="module")
def sequential(released, tmp_path_factory):
    """The class graded by one worker: (root, ok, summary)."""
    root = copy_course(released, tmp_path_factory.mktemp("sequential") / "course")
    ok, message = instructor.autograde(LAB, root, jobs=1)
    return root, ok, message


def test_two_workers_give_what_one_gives(sequential, released, tmp_path):
    root = copy_course(released, tmp_path / "course")
    ok, message = instructor.autograde(LAB, root, jobs=2)
    one_root, one_ok, one_message = sequential
    assert (ok, relative(message, root)) == (one_ok, relative(one_message, one_root))
    assert grading_record(root) == grading_record(one_root)
    assert autograded_scores(root, LAB) == autograded_scores(one_root, LAB)


def test_the_summary_and_review_name_every_case(sequential):
    _, ok, message = sequential
    assert not ok  # the renamed notebook is not graded
    assert "7 students graded" in message and "1 not graded" in message, message
    assert "renamed: not graded, no 01_softmax_lab.ipynb" in message, message
    assert "refused:" in message and "forbidden:" in message, message
    assert "forbidden: softmax, line 2: it calls softmax, which this lab forbids" in message
    assert "refused: softmax, line 2: it calls eval, which runs code from a string" in message
    assert f"  {cgroups.mode().describe()}" in message.splitlines(), message


def test_each_grade_is_in_the_gradebook_once(sequential):
    root = sequential[0]
    counts = submission_counts(root)
    graded = {s for s in instructor.submitted_students(LAB, root) if s != "renamed"}
    assert graded <= set(counts)
    for student in graded:
        submissions, grades, distinct = counts[student]
        assert submissions == 1 and grades == distinct == len(cell_scores(root, LAB, student))


def test_a_run_regrades_only_the_students_asked_for(sequential, tmp_path):
    one_root, _, one_message = sequential
    root = copy_course(one_root, tmp_path / "course")
    notebooks_of = {s: paths.autograded(root, s, LAB) / NOTEBOOK for s in ("mistake", "blank")}
    before = {s: path.stat().st_mtime_ns for s, path in notebooks_of.items()}
    ok, message = instructor.autograde(LAB, root, jobs=1, regrade=["mistake"])
    assert relative(message, root) == relative(one_message, one_root)
    assert notebooks_of["mistake"].stat().st_mtime_ns > before["mistake"]
    assert notebooks_of["blank"].stat().st_mtime_ns == before["blank"]
    assert submission_counts(root) == submission_counts(one_root)


def run_autograde(root, jobs):
    """Start `python -m course.instructor autograde` as `make autograde JOBS=jobs` does."""
    command = [sys.executable, "-m", "course.instructor", "autograde", LAB, "--root", str(root)]
    return subprocess.Popen(
        [*command, "--jobs", str(jobs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=nbgrader_environment(),
        start_new_session=True,
    )


def wait_for_a_graded_notebook(root, process, seconds=300):
    """Wait until the run has written one executed autograded notebook."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        if any(notebooks.executed(p) for p in (root / "autograded").glob(f"*/{LAB}/*.ipynb")):
            return
        time.sleep(0.1)
    raise AssertionError("the run graded nothing in time, or ended before it could be stopped")


def descendants(pid):
    """The ids of every process below `pid` (workers, zygotes and kernels)."""
    return {child.pid for child in psutil.Process(pid).children(recursive=True)}


def started_modules(pid):
    """The `python -m` module of each process that process `pid` started, sorted."""
    commands = [child.cmdline() for child in psutil.Process(pid).children()]
    return sorted(command[command.index("-m") + 1] for command in commands if "-m" in command)


def still_running(pids, seconds=15):
    """Those of `pids` still running (not zombies) after waiting up to `seconds` for them to end."""
    deadline = time.monotonic() + seconds
    while True:
        running = {pid for pid in pids if is_running(pid)}
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.1)


def is_running(pid):
    """True if process `pid` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("stop", ["SIGKILL", "Ctrl-C"])
def test_a_run_stopped_midway_then_rerun_gives_every_grade_once(
    stop, sequential, released, tmp_path
):
    root = copy_course(released, tmp_path / "course")
    process = run_autograde(root, jobs=2)
    wait_for_a_graded_notebook(root, process)
    below = descendants(process.pid)
    assert below, "no worker was running"
    workers = ["course.grading.pool"] * 2
    assert started_modules(process.pid) == sorted([*workers, "course.grading.kernels.zygote"])
    # Ctrl-C on a terminal sends SIGINT to the command's process group (make and the instructor).
    os.killpg(process.pid, signal.SIGKILL if stop == "SIGKILL" else signal.SIGINT)
    out, _ = process.communicate(timeout=60)
    if stop == "Ctrl-C":
        assert process.returncode == 130
        assert "stopped: run `make autograde` again to finish" in out
        assert not still_running(below), "workers, zygotes or kernels outlived Ctrl-C"
    unfinished = [
        s
        for s in instructor.submitted_students(LAB, root)
        if not notebooks.executed(paths.autograded(root, s, LAB) / NOTEBOOK)
    ]
    assert unfinished, "the run was stopped too late to test anything"
    rerun = run_autograde(root, jobs=2)
    out, err = rerun.communicate(timeout=600)
    one_root, _, one_message = sequential
    assert relative(out.strip(), root) == relative(one_message, one_root), out + err
    assert "\r" not in out  # no progress line when the output is not a terminal
    assert grading_record(root) == grading_record(one_root)
    assert submission_counts(root) == submission_counts(one_root)


def test_a_grader_stopped_by_its_scheduler_gives_its_submissions_back_at_once(course_copy):
    with postgres_server() as url:
        root = course_copy(LAB, config_lines=[f"c.CourseDirectory.db_url = {url!r}"], name="term")
        release = notebooks.read(root / "release" / LAB / NOTEBOOK)
        for number in range(4):
            submit(root, LAB, f"s{number}", fill(release, solution_cells(LAB)))
        process = run_autograde(root, jobs=1)
        work = queue.Queue(url, LAB, owner="test")
        work.create()  # if the grader has not yet
        try:
            deadline = time.monotonic() + 300
            while process.poll() is None and time.monotonic() < deadline:
                if any(row[0] == "grading" for row in work.rows().values()):
                    break
                time.sleep(0.1)
            process.send_signal(signal.SIGTERM)  # as Slurm's scancel or time limit does
            out, err = process.communicate(timeout=60)
            rows = work.rows()
        finally:
            work.close()
    assert process.returncode == 130, out + err
    assert "stopped: run `make autograde` again to finish" in out
    assert "grading" not in {row[0] for row in rows.values()}, rows
    waiting = [student for student, row in rows.items() if row[0] == "waiting"]
    assert waiting and all(rows[student][1] == 0 for student in waiting), rows


def hanging_course(course_copy, honest):
    """A scratch course (tests stopped after 8 s) with a looping softmax and `honest` solutions."""
    root = course_copy(LAB, config_lines=["c.Execute.timeout = 8"], name="hanging")
    release = notebooks.read(root / "release" / LAB / NOTEBOOK)
    submit(root, LAB, "a_hangs", fill(release, {**solution_cells(LAB), "softmax": HANGS}))
    for number in range(honest):
        submit(root, LAB, f"honest{number}", fill(release, solution_cells(LAB)))
    instructor.ensure_in_gradebook(LAB, root)
    return root


def test_a_hanging_submission_holds_up_no_other(course_copy):
    root = hanging_course(course_copy, honest=2)
    students = instructor.submitted_students(LAB, root)
    outcomes = pool.grade_class(LAB, students, root, jobs=2)
    assert list(outcomes)[-1] == "a_hangs", list(outcomes)  # the others finished first
    for number in range(2):
        assert outcomes[f"honest{number}"].success
        assert sum(cell_scores(root, LAB, f"honest{number}").values()) == 8
    assert 0 < sum(cell_scores(root, LAB, "a_hangs").values()) < 8


def test_a_submission_over_the_time_limit_is_stopped_and_left_for_the_next_run(course_copy):
    root = hanging_course(course_copy, honest=0)
    outcomes = pool.grade_class(LAB, ["a_hangs"], root, jobs=1, limit=10)
    assert not outcomes["a_hangs"].success
    assert "grading took longer than 10 s and was stopped" in outcomes["a_hangs"].log
    assert not notebooks.executed(paths.autograded(root, "a_hangs", LAB) / NOTEBOOK)
    instructor.discard_unfinished(LAB, ["a_hangs"], root)
    assert not paths.autograded(root, "a_hangs", LAB).exists()
