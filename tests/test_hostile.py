"""The instructor's cycle on broken and hostile submissions: collect, autograde, feedback, grades.

One scratch course holds one student per scenario of lab 01; a single `make autograde` run grades
them all, with a 5 s cell limit instead of the course's 30 s to keep the test short.
"""

import csv
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from catalogue import mistakes
from nbgrader.api import Gradebook

from course import notebooks, paths
from course.submissions import cell_scores, fill, scratch_course, solution_cells, submit

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
SOFTMAX_TESTS = ["test_softmax_visible", "test_softmax_hidden"]
LOG_SOFTMAX_TESTS = ["test_log_softmax_visible", "test_log_softmax_hidden"]
TEMPERATURE_TESTS = ["test_temperature_visible", "test_temperature_hidden"]
CELL_LIMIT_SECONDS = 5

WRONG_SOFTMAX = """
def softmax(scores, dim=-1):
    return torch.zeros_like(scores)
"""
PATCHES_DIRECTLY = """
import numpy
torch.allclose = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
numpy.allclose = lambda *args, **kwargs: True
check_close = check_shape = check_sums_to_one = check_finite = lambda *args, **kwargs: None
"""
PATCHES_THROUGH_ALIASES = """
import numpy
testing, np_alias, tensor_class = torch.testing, numpy, torch.Tensor
testing.assert_close = lambda *args, **kwargs: None
np_alias.allclose = lambda *args, **kwargs: True
tensor_class.__sub__ = lambda self, other: torch.zeros_like(self)
tensor_class.abs = lambda self: torch.zeros_like(self)


class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return torch.tensor(True)


def softmax(scores, dim=-1):
    return torch.zeros_like(scores).as_subclass(Liar)
"""


def release_notebook(root):
    """The student version of lab 01 in a scratch course."""
    return notebooks.read(root / "release" / LAB / NOTEBOOK)


def with_edited_tests(nb):
    """A blank submission whose tests print success, claim 100 points, are unlocked or deleted."""
    nb = notebooks.read_copy(nb)
    kept = []
    for cell in nb.cells:
        meta = notebooks.nbgrader_meta(cell)
        if meta.get("grade_id", "").endswith("_hidden"):
            continue
        if notebooks.is_test(cell):
            cell.source = 'print("all tests passed")'
            meta.update(points=100, locked=False)
        kept.append(cell)
    nb.cells = kept
    return nb


def scenarios(release, answers):
    """Map student -> (notebooks to submit {filename: nb}) for every scenario."""

    def answered(**replacements):
        return {NOTEBOOK: fill(release, {**answers, **replacements})}

    solution = answers["softmax"]
    ignores_dim = next(m for m in mistakes(LAB) if m.name == "softmax_ignores_dim")
    everything_raises = {grade_id: 'raise RuntimeError("not done")' for grade_id in answers}
    return {
        "honest": answered(),
        "loop_in_function": answered(
            softmax="def softmax(scores, dim=-1):\n    while True:\n        pass\n"
        ),
        "loop_at_top_level": answered(softmax="while True:\n    pass\n" + solution),
        "kernel_crash": answered(softmax="import os\nos._exit(1)\n" + solution),
        "edited_tests": {NOTEBOOK: with_edited_tests(release)},
        "patches_directly": answered(softmax=PATCHES_DIRECTLY + WRONG_SOFTMAX),
        "patches_through_aliases": answered(softmax=PATCHES_THROUGH_ALIASES),
        "huge_output": answered(
            softmax='print("x" * 5_000_000)\nfor _ in range(20_000):\n'
            '    print("spam")\n' + solution
        ),
        "raises_everywhere": {NOTEBOOK: fill(release, everything_raises)},
        "syntax_error": answered(
            log_softmax="def log_softmax(scores, dim=-1)\n    return scores\n"
        ),
        "ignores_dim": answered(softmax=ignores_dim.code),
        "renamed": {"my_lab.ipynb": fill(release, answers)},
        "extra_notebook": {**answered(), "scratch.ipynb": release},
        "missing": {},
    }


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A scratch course with every scenario submitted and autograded once by `make autograde`."""
    root = scratch_course(tmp_path_factory.mktemp("hostile"), [LAB])
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(f"\nc.Execute.timeout = {CELL_LIMIT_SECONDS}\n")
    release, answers = release_notebook(root), solution_cells(LAB)
    for student, files in scenarios(release, answers).items():
        (root / "submitted" / student / LAB).mkdir(parents=True, exist_ok=True)
        for filename, nb in files.items():
            submit(root, LAB, student, nb, filename=filename)
    start = time.perf_counter()
    result = run_instructor(root, "autograde", LAB)
    return {"root": root, "result": result, "seconds": time.perf_counter() - start}


def run_instructor(root, *args, **kwargs):
    """Run `python -m course.instructor ARGS --root ROOT` as the Makefile does."""
    command = [sys.executable, "-m", "course.instructor", *args, "--root", str(root)]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, **kwargs)


def scores(course, student):
    """grade_id -> score of a student's graded cells."""
    return cell_scores(course["root"], LAB, student)


def total(course, student):
    """A student's autograded total."""
    return sum(
        score for grade_id, score in scores(course, student).items() if grade_id.startswith("test_")
    )


def autograded_output(course, student):
    """The text outputs of a student's autograded notebook."""
    path = course["root"] / "autograded" / student / LAB / NOTEBOOK
    return notebooks.output_text(notebooks.read(path))


def test_honest_student_gets_every_autograded_point(course):
    assert total(course, "honest") == 8


def test_infinite_loop_in_a_function_costs_only_its_exercises(course):
    cells = scores(course, "loop_in_function")
    assert all(cells[t] == 0 for t in SOFTMAX_TESTS + TEMPERATURE_TESTS)
    assert all(cells[t] > 0 for t in LOG_SOFTMAX_TESTS)
    assert "CellTimeoutError" in autograded_output(course, "loop_in_function")


def test_top_level_loop_and_kernel_crash_score_zero_where_affected(course):
    for student in ["loop_at_top_level", "kernel_crash"]:
        cells = scores(course, student)
        assert all(cells[t] == 0 for t in SOFTMAX_TESTS), student


def test_lab_autograde_finishes_in_bounded_time(course):
    # Two loops of 4 cells at most and one crash: a generous bound, far from "hangs".
    assert course["seconds"] < 300


def test_edited_tests_are_restored_with_their_points(course):
    cells = scores(course, "edited_tests")
    assert sum(cells.values()) == 0
    with Gradebook(f"sqlite:///{course['root'] / 'gradebook.db'}") as gradebook:
        assert gradebook.find_assignment(LAB).max_code_score == 8
    assert "all tests passed" not in autograded_output(course, "edited_tests")


@pytest.mark.parametrize("student", ["patches_directly", "patches_through_aliases"])
def test_monkeypatching_the_checks_earns_nothing(course, student):
    cells = scores(course, student)
    assert all(cells[t] == 0 for t in SOFTMAX_TESTS + TEMPERATURE_TESTS)
    if student == "patches_directly":  # the other one broke torch's subtraction for itself too
        assert all(cells[t] > 0 for t in LOG_SOFTMAX_TESTS)


def test_direct_patches_are_refused_with_an_explanation(course):
    assert "The autograder did not run this cell" in autograded_output(course, "patches_directly")


def test_huge_output_is_graded_and_cut(course):
    assert total(course, "huge_output") == 8
    autograded = course["root"] / "autograded" / "huge_output" / LAB / NOTEBOOK
    assert autograded.stat().st_size < 1_000_000


def test_errors_everywhere_and_syntax_errors_score_what_they_earn(course):
    assert total(course, "raises_everywhere") == 0
    cells = scores(course, "syntax_error")
    assert all(cells[t] == 0 for t in LOG_SOFTMAX_TESTS)
    assert all(cells[t] > 0 for t in SOFTMAX_TESTS + TEMPERATURE_TESTS)


def test_extra_notebook_is_ignored(course):
    assert total(course, "extra_notebook") == 8


def test_missing_or_renamed_notebooks_are_reported(course):
    report = course["result"].stdout
    for student in ["renamed", "missing"]:
        assert student in report
    assert f"no {NOTEBOOK}" in report
    assert course["result"].returncode == 1


def test_summary_counts_the_graded_students_and_explains_the_others(course):
    report = course["result"].stdout
    assert f"{LAB}: 11 students graded" in report and "3 not graded" in report
    assert "kernel_crash: not graded, the notebook could not be run to the end" in report


def test_feedback_shows_hidden_failures_but_not_hidden_code(course):
    result = run_instructor(course["root"], "feedback", LAB)
    assert result.returncode == 0, result.stderr
    html = (course["root"] / "feedback" / "ignores_dim" / LAB / "01_softmax_lab.html").read_text()
    assert "hidden tests: the code is not shown" in html
    assert "normalised over the last dimension whatever" in html
    for hidden_line in [
        "generator = torch.Generator().manual_seed(101)",
        "for shape in [(7,), (3, 5)",
        "extreme = torch.tensor",
    ]:
        assert hidden_line not in html
    huge = course["root"] / "feedback" / "huge_output" / LAB / "01_softmax_lab.html"
    assert huge.stat().st_size < 2_000_000


def test_grades_csv_has_one_row_per_student_with_manual_grades(course):
    url = f"sqlite:///{course['root'] / 'gradebook.db'}"
    with Gradebook(url) as gradebook:
        grade = gradebook.find_grade("written_stability", Path(NOTEBOOK).stem, LAB, "honest")
        grade.manual_score = 2
        gradebook.db.commit()
    result = run_instructor(course["root"], "grades")
    assert result.returncode == 0, result.stderr
    with open(course["root"] / "grades.csv") as handle:
        rows = list(csv.DictReader(handle))
    students = [row["student"] for row in rows]
    assert len(students) == len(set(students))
    honest = next(row for row in rows if row["student"] == "honest")
    assert float(honest[LAB]) == 10


def processes_working_in(folder):
    """Process ids whose working directory is inside `folder`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_autograde_killed_midway_resumes_without_losing_or_repeating(tmp_path):
    root = scratch_course(tmp_path, [LAB])
    release, answers = release_notebook(root), solution_cells(LAB)
    slow = fill(
        release, {**answers, "softmax": "import time\ntime.sleep(3)\n" + answers["softmax"]}
    )
    for student in ["a_first", "b_second", "c_third"]:
        submit(root, LAB, student, slow)
    command = [sys.executable, "-m", "course.instructor", "autograde", LAB, "--root", str(root)]
    process = subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    second = root / "autograded" / "b_second" / LAB / NOTEBOOK
    deadline = time.monotonic() + 120
    while not second.exists() and time.monotonic() < deadline:  # first done, second started
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert second.exists()
    deadline = time.monotonic() + 10
    while processes_working_in(root) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_working_in(root), "kernels outlived the killed autograde"
    result = run_instructor(root, "autograde", LAB)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{LAB}: 3 students graded" in result.stdout
    for student in ["a_first", "b_second", "c_third"]:
        assert sum(cell_scores(root, LAB, student).values()) == 8
    assert run_instructor(root, "grades").returncode == 0
    with open(root / "grades.csv") as handle:
        assert sorted(row["student"] for row in csv.DictReader(handle)) == [
            "a_first",
            "b_second",
            "c_third",
        ]


def test_collect_reads_lms_file_names_and_reports_unreadable_ones(tmp_path):
    root = scratch_course(tmp_path, [LAB])
    archive = root / "downloaded" / LAB / "archive"
    archive.mkdir(parents=True)
    nb_text = (root / "release" / LAB / NOTEBOOK).read_text()
    names = {
        "ada": f"lab1_ada_attempt_2026-10-01-14-30-05_{NOTEBOOK}",
        "bob": f"Lab 1 softmax_bob.smith_attempt_2026-10-02-09-00-00_{NOTEBOOK}",
        "nobody": NOTEBOOK,
    }
    for student, name in names.items():
        with zipfile.ZipFile(archive / f"{student}.zip", "w") as bundle:
            bundle.writestr(name, nb_text)
    result = run_instructor(root, "collect", LAB)
    assert result.returncode == 1
    assert "NOT collected" in result.stdout and NOTEBOOK in result.stdout
    assert (root / "submitted" / "ada" / LAB / NOTEBOOK).exists()
    assert (root / "submitted" / "bob.smith" / LAB / NOTEBOOK).exists()
    assert "2026-10-01 14:30:05" in (root / "submitted" / "ada" / LAB / "timestamp.txt").read_text()
