"""The options of `make autograde` and the progress it shows: checked without grading anyone."""

import io

import pytest

from course import instructor
from course.coursedir import gradebook_db, paths
from course.grading import pool
from course.grading.preprocessors.judge import JudgeExecute

LAB = "01_softmax"


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self):
        return True


def test_progress_shows_done_failures_and_time_left_on_a_terminal_only():
    terminal, log = Terminal(), io.StringIO()
    for stream in (terminal, log):
        progress = pool.Progress(LAB, 40, stream)
        progress.start -= 10
        progress.update(10, 1)
        progress.close()
    assert "01_softmax: 10/40 graded, 1 failed, about 0:30 left" in terminal.getvalue()
    assert log.getvalue() == ""
    assert "not known yet" in pool.Progress(LAB, 40).line(0, 0)


def test_time_left_counts_down_while_no_submission_is_done(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(pool.time, "monotonic", lambda: clock[0])
    progress = pool.Progress(LAB, 40)
    shown = []
    for seconds, done in [(10, 10), (20, 10), (30, 10), (10, 20)]:
        clock[0] += seconds
        shown.append(progress.line(done, 0).rsplit(", ", 1)[1])
    assert shown == ["about 0:30 left", "about 0:10 left", "about 0:00 left", "about 1:10 left"]


@pytest.mark.parametrize("jobs", [0, -2, 1.5, "2", True])
def test_jobs_must_be_a_positive_whole_number(jobs):
    with pytest.raises(ValueError, match="positive whole number of workers"):
        pool.checked_jobs(jobs)


def test_make_autograde_refuses_a_bad_jobs_value(capsys):
    with pytest.raises(SystemExit) as stopped:
        instructor.main(["autograde", LAB, "--jobs", "many"])
    assert stopped.value.code == 2
    assert "JOBS must be a positive whole number of workers, got 'many'" in capsys.readouterr().err


def test_sqlite_gradebooks_wait_for_other_writers():
    url = gradebook_db.shared_url("sqlite:////course/gradebook.db")
    assert url == f"sqlite:////course/gradebook.db?timeout={gradebook_db.SQLITE_BUSY_SECONDS}"
    assert gradebook_db.shared_url("postgresql://grader@/gradebook") == (
        "postgresql://grader@/gradebook"
    )
    with pytest.raises(ValueError, match="SQLAlchemy database URL"):
        gradebook_db.shared_url("")


def test_make_autograde_refuses_an_empty_regrade_id(capsys):
    with pytest.raises(SystemExit) as stopped:
        instructor.main(["autograde", LAB, "--regrade", "s001,,s002"])
    assert stopped.value.code == 2
    assert "REGRADE must be student ids separated by commas" in capsys.readouterr().err
    assert instructor.students_argument("s001, s002") == ["s001", "s002"]


@pytest.mark.parametrize("sandboxed", [True, False])
def test_workers_get_the_sandbox_setting_as_nbgrader_configuration(sandboxed, monkeypatch):
    command = pool.worker_command(LAB, sandboxed)
    options = command[command.index(LAB) + 1 :]
    assert options == ([] if sandboxed else ["--ForkingExecute.sandbox=False"])
    monkeypatch.chdir(paths.ROOT)  # where nbgrader_config.py is
    assert JudgeExecute(config=pool.nbgrader_api(options).config).sandbox is sandboxed


def test_the_machine_is_probed_once_and_refuses_what_cannot_bound_a_sandbox(monkeypatch):
    from course.grading.kernels import cgroups, probe

    found = {"probe": (True, ""), "mode": cgroups.Mode(cgroups.V2, "delegated")}
    asked = []
    monkeypatch.setattr(probe, "probe", lambda: asked.append("probe") or found["probe"])
    monkeypatch.setattr(cgroups, "mode", lambda: asked.append("mode") or found["mode"])
    machine = pool.prepare_machine()
    assert machine.ok and machine.limits == found["mode"].describe() and asked == ["probe", "mode"]
    found["mode"] = cgroups.Mode(cgroups.RLIMITS, "no group is delegated")
    refused = pool.prepare_machine()
    assert (refused.ok, refused.refusal, refused.reason) == (
        False,
        pool.NO_CONTROL_GROUP,
        "no group is delegated",
    )
    accepted = pool.prepare_machine(per_process_limits=True)
    assert accepted.ok and accepted.limits.startswith("sandbox limits: rlimits")
    found["probe"] = (False, "user namespaces are disabled")
    assert pool.prepare_machine() == pool.Machine(
        pool.CANNOT_SANDBOX, "user namespaces are disabled", ""
    )
