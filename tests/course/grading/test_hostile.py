"""The instructor's cycle on broken and hostile submissions: collect, autograde, feedback, grades.

One scratch course holds one student per scenario of lab 01; a single `make autograde` run grades
them all, with a 5 s cell limit instead of the course's 30 s to keep the test short. A second
course shows that the grader's verdicts hold when a submission controls its whole kernel (every
student cell runs as written; the review of the code only lists findings). A third attacks the
machine from the kernel: its files, its network, other students' kernels and its resources. The
sandbox must stop each attack, and no attack may earn a point it did not compute.
"""

import contextlib
import csv
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import pytest
import zmq
from catalogue import mistakes
from jupyter_core.utils import run_sync
from nbgrader.api import Gradebook

from course.build import notebooks, paths
from course.build.nbgrader_run import instructor as run_instructor
from course.build.nbgrader_run import nbgrader_environment
from course.build.submissions import cell_scores, fill, scratch_course, solution_cells, submit
from course.grading import sandbox, zygote
from course.grading.fastkernel import MAX_MESSAGE_BYTES, ForkingKernelManager

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
CALLS_BUILTIN = """
def softmax(scores, dim=-1):
    return torch.softmax(scores, dim=dim)
"""
# Attacks on the kernel itself, from cells that all run as written. Each would have earned
# points if the tests ran in the student's kernel; the grader runs them in its own process.
BLANKS_TEST_CELLS = """
def blank_tests(lines):
    text = "".join(lines)
    return ["pass\\n"] if "check_" in text or "assert" in text else lines


get_ipython().input_transformers_cleanup.append(blank_tests)
"""
BLANKS_TESTS_BY_AST = """
import ast


class BlankTests(ast.NodeTransformer):
    def visit_Module(self, node):
        text = ast.unparse(node)
        return ast.Module(body=[ast.Pass()], type_ignores=[]) if "check_close" in text else node


get_ipython().ast_transformers.append(BlankTests())
"""
CALLS_TORCH_IN_LATER_CELLS = """
def call_torch(lines):
    return [line.replace("softmax(", "torch.softmax(") for line in lines]


get_ipython().input_transformers_cleanup.append(call_torch)
"""
ATTACKS_AT_FIRST_CALL = """
def softmax(scores, dim=-1):
    hooks = get_ipython().input_transformers_cleanup
    if not hooks:
        hooks.append(lambda lines: ["pass\\n"])
    return torch.zeros_like(scores)
"""
SWAPS_CHECK_CODE = """
alias = check_close
alias.__code__ = (lambda *args, **kwargs: None).__code__
"""
ECHOES_CELLS = """
get_ipython().events.register("pre_run_cell", lambda info: print(info.raw_cell))
"""
HIDES_ERRORS = """
print("test_softmax_hidden: passed (2/2 points)")
get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)
get_ipython().showtraceback = lambda *args, **kwargs: None
"""
REPLACES_AGENT = """
class Forger:
    reply = '{"value": true}'

    def run(self, request):
        pass


__judge__ = Forger()
"""
REBINDS_CHECKS = """
check_close = check_shape = check_sums_to_one = check_finite = lambda *args, **kwargs: None
"""
CRASHES_IN_FUNCTION = """
import os


def softmax(scores, dim=-1):
    os._exit(9)
"""
CRASHES_AT_TOP_LEVEL = "import os\nos._exit(9)\n"


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


def scenarios(release, answers, root):
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
        "imports_os": answered(softmax="import os\nos._exit(1)\n" + solution),
        "input_transformer": answered(softmax=BLANKS_TEST_CELLS + WRONG_SOFTMAX),
        "calls_torch_in_later_cells": answered(softmax=CALLS_TORCH_IN_LATER_CELLS + WRONG_SOFTMAX),
        "calls_builtin": answered(softmax=CALLS_BUILTIN),
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


def kernel_attacks(release, answers, root):
    """Map student -> notebooks for the attacks on the kernel."""

    def answered(softmax):
        return {NOTEBOOK: fill(release, {**answers, "softmax": softmax})}

    return {
        "honest": answered(answers["softmax"]),
        "blanks_test_cells": answered(BLANKS_TEST_CELLS + WRONG_SOFTMAX),
        "blanks_tests_by_ast": answered(BLANKS_TESTS_BY_AST + WRONG_SOFTMAX),
        "attacks_at_first_call": answered(ATTACKS_AT_FIRST_CALL),
        "swaps_check_code": answered(SWAPS_CHECK_CODE + WRONG_SOFTMAX),
        "echoes_cells": answered(ECHOES_CELLS + WRONG_SOFTMAX),
        "hides_errors": answered(HIDES_ERRORS + WRONG_SOFTMAX),
        "patches_checks": answered(PATCHES_DIRECTLY + WRONG_SOFTMAX),
        "patches_through_aliases": answered(PATCHES_THROUGH_ALIASES),
        "replaces_agent": answered(REPLACES_AGENT + WRONG_SOFTMAX),
        "rebinds_checks": answered(REBINDS_CHECKS + WRONG_SOFTMAX),
        "crashes_in_function": answered(CRASHES_IN_FUNCTION),
        "crashes_at_top_level": answered(CRASHES_AT_TOP_LEVEL + answers["softmax"]),
    }


def graded_course(folder, submissions, config=""):
    """A scratch course with these submissions, autograded once by `make autograde`."""
    root = scratch_course(folder, [LAB])
    with open(root / "nbgrader_config.py", "a") as handle:
        handle.write(f"\nc.Execute.timeout = {CELL_LIMIT_SECONDS}\n{config}")
    for student, files in submissions(release_notebook(root), solution_cells(LAB), root).items():
        paths.submitted(root, student, LAB).mkdir(parents=True, exist_ok=True)
        for filename, nb in files.items():
            submit(root, LAB, student, nb, filename=filename)
    start = time.perf_counter()
    result = run_instructor(root, "autograde", LAB)
    return {"root": root, "result": result, "seconds": time.perf_counter() - start}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Every scenario, graded with the course's own configuration."""
    return graded_course(tmp_path_factory.mktemp("hostile"), scenarios)


@pytest.fixture(scope="module")
def open_kernel(tmp_path_factory):
    """The attacks on the kernel, graded with the course's own configuration."""
    return graded_course(tmp_path_factory.mktemp("open"), kernel_attacks)




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
    path = paths.autograded(course["root"], student, LAB) / NOTEBOOK
    return notebooks.output_text(notebooks.read(path))


def test_honest_student_gets_every_autograded_point(course):
    assert total(course, "honest") == 8


def test_infinite_loop_in_a_function_costs_only_its_exercises(course):
    cells = scores(course, "loop_in_function")
    assert all(cells[t] == 0 for t in SOFTMAX_TESTS + TEMPERATURE_TESTS)
    assert all(cells[t] > 0 for t in LOG_SOFTMAX_TESTS)
    assert "did not finish within 5 s" in autograded_output(course, "loop_in_function")


def test_a_top_level_loop_and_a_dead_kernel_score_zero_where_affected(course):
    for student in ["loop_at_top_level", "imports_os"]:
        cells = scores(course, student)
        assert all(cells[t] == 0 for t in SOFTMAX_TESTS), student
        assert all(cells[t] > 0 for t in LOG_SOFTMAX_TESTS), student


def test_an_input_transformer_blanks_only_the_students_own_cells(course):
    # The test cells run in the grader: the hook can blank only cells that run in the kernel.
    cells = scores(course, "input_transformer")
    assert all(cells[t] == 0 for t in SOFTMAX_TESTS), cells
    finding = r"input_transformer: softmax, line \d+: it calls get_ipython"
    assert re.search(finding, course["result"].stdout)


def test_a_hook_that_makes_later_cells_call_torch_runs_and_is_listed_for_the_instructor(course):
    # The student's own later cells compute with torch.softmax: the values are right, so the
    # tests pass, as for any call of a forbidden built-in. The instructor sees the hook.
    report = course["result"].stdout
    finding = r"calls_torch_in_later_cells: softmax, line \d+: it calls get_ipython"
    assert re.search(finding, report), report


def test_lab_autograde_finishes_in_bounded_time(course):
    # Two loops of 4 cells at most and one crash: a generous bound, far from "hangs".
    assert course["seconds"] < 300


def test_edited_tests_are_restored_with_their_points(course):
    cells = scores(course, "edited_tests")
    assert sum(cells.values()) == 0
    with Gradebook(paths.gradebook_url(course["root"])) as gradebook:
        assert gradebook.find_assignment(LAB).max_code_score == 8
    assert "all tests passed" not in autograded_output(course, "edited_tests")


@pytest.mark.parametrize("student", ["patches_directly", "patches_through_aliases"])
def test_monkeypatching_the_checks_earns_nothing(course, student):
    cells = scores(course, student)
    assert all(cells[t] == 0 for t in SOFTMAX_TESTS + TEMPERATURE_TESTS)
    if student == "patches_directly":  # the other one broke torch's subtraction for itself too
        assert all(cells[t] > 0 for t in LOG_SOFTMAX_TESTS)


def test_every_student_cell_runs_and_is_kept_as_written(course):
    for student in ["patches_directly", "imports_os", "input_transformer"]:
        path = paths.autograded(course["root"], student, LAB) / NOTEBOOK
        submitted = paths.submitted(course["root"], student, LAB) / NOTEBOOK
        kept = {notebooks.nbgrader_meta(c).get("grade_id"): c.source
                for c in notebooks.read(path).cells}
        written = {notebooks.nbgrader_meta(c).get("grade_id"): c.source
                   for c in notebooks.read(submitted).cells}
        assert kept["softmax"] == written["softmax"], student
        assert "The autograder did not run this cell" not in autograded_output(course, student)


def test_summary_lists_the_findings_about_each_students_cells(course):
    report = course["result"].stdout
    assert "findings to review (every cell ran; no points depend on them):" in report
    assert "imports_os: softmax, line 1: it imports os, which this lab does not use" in report
    assert "calls_builtin: softmax, line 3: it calls softmax, which this lab forbids" in report
    assert total(course, "calls_builtin") == 8  # the computation is right: the instructor judges
    assert "honest:" not in report


def test_huge_output_is_graded_and_cut(course):
    assert total(course, "huge_output") == 8
    autograded = paths.autograded(course["root"], "huge_output", LAB) / NOTEBOOK
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
    assert f"{LAB}: 15 students graded" in report and "2 not graded" in report


def test_feedback_shows_hidden_failures_but_not_hidden_code(course):
    result = run_instructor(course["root"], "feedback", LAB, "--provisional")
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


def open_scores(open_kernel, student):
    """grade_id -> score of a student of the course of attacks on the kernel."""
    return cell_scores(open_kernel["root"], LAB, student)


@pytest.mark.parametrize(
    "student",
    [
        "blanks_test_cells",
        "blanks_tests_by_ast",
        "attacks_at_first_call",
        "swaps_check_code",
        "echoes_cells",
        "hides_errors",
        "patches_checks",
        "patches_through_aliases",
        "replaces_agent",
        "rebinds_checks",
    ],
)
def test_a_kernel_under_the_students_control_cannot_forge_a_pass(open_kernel, student):
    assert sum(open_scores(open_kernel, "honest").values()) == 8
    cells = open_scores(open_kernel, student)
    assert all(cells[t] == 0 for t in SOFTMAX_TESTS + TEMPERATURE_TESTS), cells


def test_correct_work_beside_the_attacks_still_earns_its_points(open_kernel):
    for student in [
        "blanks_tests_by_ast",
        "echoes_cells",
        "hides_errors",
        "patches_checks",
        "rebinds_checks",
        "swaps_check_code",
    ]:
        cells = open_scores(open_kernel, student)
        assert all(cells[t] > 0 for t in LOG_SOFTMAX_TESTS), (student, cells)


def test_a_kernel_that_dies_costs_only_the_tests_that_need_the_dead_code(open_kernel):
    for student in ["crashes_in_function", "crashes_at_top_level"]:
        cells = open_scores(open_kernel, student)
        assert all(cells[t] == 0 for t in SOFTMAX_TESTS), (student, cells)
        assert cells["test_log_softmax_visible"] == 1 and cells["test_log_softmax_hidden"] == 2
    root = open_kernel["root"]
    path = paths.autograded(root, "crashes_at_top_level", LAB) / NOTEBOOK
    assert "The kernel died while running this cell" in notebooks.output_text(notebooks.read(path))


def test_hidden_test_code_never_reaches_the_kernel_or_the_feedback(open_kernel):
    result = run_instructor(open_kernel["root"], "feedback", LAB, "--provisional")
    assert result.returncode == 0, result.stderr
    student = open_kernel["root"] / "feedback" / "echoes_cells" / LAB / "01_softmax_lab.html"
    root = open_kernel["root"]
    autograded = notebooks.read(paths.autograded(root, "echoes_cells", LAB) / NOTEBOOK)
    texts = [student.read_text(), notebooks.output_text(autograded)]
    for hidden_line in ["generator = torch.Generator().manual_seed(101)", "extreme = torch.tensor"]:
        assert all(hidden_line not in text for text in texts)
    echoed = "".join(
        output.text
        for cell in autograded.cells
        if not notebooks.is_test(cell)
        for output in cell.get("outputs", [])
        if output.output_type == "stream"
    )
    assert "def log_softmax" in echoed  # the hook ran, and echoed the cells it was given
    source = notebooks.read(root / "source" / LAB / NOTEBOOK)
    for cell in source.cells:
        if notebooks.is_test(cell):  # no test cell, visible or hidden, reached the kernel
            assert all(line not in echoed for line in cell.source.splitlines() if len(line) > 20)


def test_grades_csv_has_one_row_per_student_with_manual_grades(course):
    url = paths.gradebook_url(course["root"])
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
        command,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=nbgrader_environment(),
    )
    second = paths.autograded(root, "b_second", LAB) / NOTEBOOK
    deadline = time.monotonic() + 120
    while not second.exists() and time.monotonic() < deadline:  # first done, second started
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert second.exists()
    deadline = time.monotonic() + 10
    while (processes_working_in(root) or sandbox_processes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_working_in(root), "processes outlived the killed autograde"
    assert not sandbox_processes(), "sandboxed kernels outlived the killed autograde"
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
    assert (paths.submitted(root, "ada", LAB) / NOTEBOOK).exists()
    assert (paths.submitted(root, "bob.smith", LAB) / NOTEBOOK).exists()
    timestamp = paths.submitted(root, "ada", LAB) / "timestamp.txt"
    assert "2026-10-01 14:30:05" in timestamp.read_text()


# Attacks on the machine from a kernel the student owns (every cell runs). Each template is
# filled with the scratch course's root and the ports of listeners this test opens on loopback.
MARK = "PWNED-BY-A-SUBMISSION"
WRITES_COURSE = """
import numpy, torch
targets = ["{root}/gradebook.db", "{root}/nbgrader_config.py", "{root}/course/grading/feedback.py",
           "{root}/source/01_softmax/01_softmax_lab.ipynb", "../../../gradebook.db",
           "../../../nbgrader_config.py", "/tmp/{mark}"]
for target in targets:
    for write in (lambda: open(target, "a").write("{mark}"),
                  lambda: numpy.save(open(target, "ab"), numpy.frombuffer(b"{mark}", "uint8")),
                  lambda: torch.save("{mark}", target)):
        try:
            write()
            print("WROTE", target)
        except Exception as error:
            print("write refused:", target, type(error).__name__)
"""
READS_COURSE = """
import numpy
targets = ["{root}/source/01_softmax/01_softmax_lab.ipynb",
           "{root}/submitted/honest/01_softmax/01_softmax_lab.ipynb",
           "../../../source/01_softmax/01_softmax_lab.ipynb", "{course_package}/feedback.py"]
for target in targets:
    for read in (lambda: open(target).read(),
                 lambda: numpy.fromfile(target, dtype="uint8").tobytes().decode()):
        try:
            print(read())
        except Exception as error:
            print("read refused:", target, type(error).__name__)
"""
USES_NETWORK = """
import socket
for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
    port = {tcp_port} if kind == socket.SOCK_STREAM else {udp_port}
    try:
        with socket.socket(socket.AF_INET, kind) as sock:  # refused by the system call filter
            sock.settimeout(2)
            sock.connect(("127.0.0.1", port))
            sock.send(b"{mark}")
            print("SENT", kind)
    except OSError as error:
        print("network refused:", kind, type(error).__name__)
interfaces = [line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:]]
routes = open("/proc/net/route").readlines()[1:]
print("interfaces:", interfaces, "routes:", len(routes))
"""
OUTLIVES_GRADING = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
"""
HOOKS_LATER_KERNELS = """
import glob, os, time
if os.fork() == 0:
    os.setsid()
    deadline = time.time() + 120
    while time.time() < deadline:
        for path in glob.glob("/tmp/**/*.json", recursive=True):
            try:
                from jupyter_client import BlockingKernelClient
                client = BlockingKernelClient(connection_file=path)
                client.load_connection_info()
                client.start_channels()
                client.execute("def softmax(scores, dim=-1):\\n    return scores * 0\\n")
            except Exception:
                pass
        time.sleep(0.2)
    os._exit(0)
"""
MEMORY_BOMB = """
hoard = []
try:
    while True:
        hoard.append(bytearray(256 * 2**20))
except MemoryError:
    print("memory refused after", len(hoard) // 4, "GiB")
del hoard
"""
FORK_BOMB = """
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        children += 1
except OSError as error:
    print("fork refused after", children, "processes:", type(error).__name__)
"""
FILLS_DISK = """
import os
for folder in ("/tmp", os.path.expanduser("~"), "."):
    written = 0
    try:
        with open(os.path.join(folder, "{mark}"), "wb") as handle:
            while True:
                handle.write(b"x" * 2**20)
                handle.flush()
                written += 1
    except OSError as error:
        print("disk refused in", folder, "after", written, "MiB:", type(error).__name__)
"""
# A module planted where another user can write (/tmp), named like one the grader imports.
PLANTED = "open({marker!r}, 'w').close()\nraise ImportError('planted')\n"
HUGE_REPLY = """
def softmax(scores, dim=-1):
    return torch.zeros(60_000_000)
"""
PRINTS_OVER_64_MIB = 'print("x" * 80_000_000)\n' + WRONG_SOFTMAX
UNINTERRUPTIBLE = """
import time


def softmax(scores, dim=-1):
    while True:
        try:
            time.sleep(1)
        except BaseException:
            pass
"""
# Every binding form, over builtins and the names the test cells import from locked cells.
SHADOWS_BY_EVERY_BINDING = """
import utils.grading
import builtins as check_close
for check_shape in [lambda *args, **kwargs: None]:
    pass
with open("/dev/null") as check_finite:
    pass
if (check_sums_to_one := lambda *args, **kwargs: None) is not None:
    pass
try:
    raise ValueError("shadow")
except ValueError as getattr:
    pass
abs, len, all = (lambda *args: 0), (lambda *args: 0), (lambda *args: True)


def bool(*args):
    return True


class isinstance:
    pass


utils.grading.check_close = lambda *args, **kwargs: None
"""
SANDBOX_ATTACKS = {
    "writes_course": WRITES_COURSE,
    "reads_course": READS_COURSE,
    "uses_network": USES_NETWORK,
    "outlives_grading": OUTLIVES_GRADING,
    "a_hooks_later_kernels": HOOKS_LATER_KERNELS,
    "memory_bomb": MEMORY_BOMB,
    "fork_bomb": FORK_BOMB,
    "fills_disk": FILLS_DISK,
    "shadows_by_every_binding": SHADOWS_BY_EVERY_BINDING,
}


def sandbox_processes():
    """Process ids that run as a sandbox's user."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and int(line.split()[1]) >= sandbox.UID_BASE:
                found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """The attacks on the machine, graded with listeners on loopback."""
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    for listener in (tcp, udp):
        listener.setblocking(False)
    folder = tmp_path_factory.mktemp("attacked")
    (folder / "course").mkdir()  # a stand-in for the instructor's tools beside the course
    (folder / "course" / "feedback.py").write_text("# the instructor's code\n")
    fields = {
        "root": folder,
        "mark": MARK,
        "tcp_port": tcp.getsockname()[1],
        "udp_port": udp.getsockname()[1],
        "course_package": paths.ROOT / "course",
    }

    def submissions(release, answers, root):
        def answered(softmax):
            return {NOTEBOOK: fill(release, {**answers, "softmax": softmax})}

        attacks = {
            student: answered(code.format(**fields) + WRONG_SOFTMAX)
            for student, code in SANDBOX_ATTACKS.items()
        }
        return {
            **attacks,
            "huge_reply": answered(HUGE_REPLY),
            "prints_over_64_mib": answered(PRINTS_OVER_64_MIB),
            "uninterruptible": answered(UNINTERRUPTIBLE),
            "honest": answered(answers["softmax"]),
        }

    try:
        course = graded_course(folder, submissions)
        course["leftover_processes"] = sandbox_processes()
        course["tcp_connections"], course["udp_datagrams"] = [], []
        with contextlib.suppress(BlockingIOError):
            course["tcp_connections"].append(tcp.accept())
        with contextlib.suppress(BlockingIOError):
            course["udp_datagrams"].append(udp.recv(100))
        yield course
    finally:
        tcp.close()
        udp.close()


def test_sandbox_can_be_made_here():
    assert sandbox.probe() == (True, "")


ATTACKS_ON_THE_GRADER = ["huge_reply", "prints_over_64_mib", "uninterruptible"]


@pytest.mark.parametrize("student", [*SANDBOX_ATTACKS, *ATTACKS_ON_THE_GRADER])
def test_an_attack_on_the_machine_earns_nothing(attacked, student):
    assert sum(cell_scores(attacked["root"], LAB, "honest").values()) == 8
    cells = cell_scores(attacked["root"], LAB, student)
    assert all(cells[t] == 0 for t in SOFTMAX_TESTS), cells


@pytest.mark.parametrize("student", ["memory_bomb", "fork_bomb", "fills_disk", "uninterruptible"])
def test_an_attack_on_resources_costs_only_its_own_tests(attacked, student):
    cells = cell_scores(attacked["root"], LAB, student)
    assert cells["test_log_softmax_visible"] == 1 and cells["test_log_softmax_hidden"] == 2, cells


def test_the_kernel_cannot_write_the_course_or_outside_its_sandbox(attacked):
    root = attacked["root"]
    output = autograded_output(attacked, "writes_course")
    wrote = [line for line in output.splitlines() if line.startswith("WROTE")]
    assert wrote and all(line == f"WROTE /tmp/{MARK}" for line in wrote)  # its own /tmp only
    assert "write refused" in output
    protected = ["gradebook.db", "nbgrader_config.py", "course/grading/feedback.py", "source"]
    for path in [root / name for name in protected[:3]] + list((root / "source").rglob("*.*")):
        assert not path.exists() or MARK.encode() not in path.read_bytes(), path
    assert not list(root.rglob(MARK)) and not (Path("/tmp") / MARK).exists()


def test_the_kernel_cannot_read_the_course_or_another_student(attacked):
    output = autograded_output(attacked, "reads_course")
    assert "read refused" in output
    for secret in ["BEGIN HIDDEN TESTS", "torch.Generator().manual_seed(101)", "LimitOutputSize",
                   "HideHiddenTests", "def log_softmax"]:
        assert secret not in output


def test_the_kernel_has_no_network(attacked):
    output = autograded_output(attacked, "uses_network")
    assert "SENT" not in output and output.count("network refused") == 2
    assert "interfaces: ['lo'] routes: 0" in output
    assert attacked["tcp_connections"] == [] and attacked["udp_datagrams"] == []


def test_no_process_outlives_grading_or_reaches_a_later_kernel(attacked):
    assert attacked["leftover_processes"] == []
    assert sum(cell_scores(attacked["root"], LAB, "honest").values()) == 8


def test_resource_limits_stop_bombs_inside_the_sandbox(attacked):
    assert "memory refused after" in autograded_output(attacked, "memory_bomb")
    assert "fork refused after" in autograded_output(attacked, "fork_bomb")
    assert autograded_output(attacked, "fills_disk").count("disk refused in") == 3


def test_an_attack_run_finishes_in_bounded_time(attacked):
    # 12 students with a 5 s cell limit; the uninterruptible one costs each of its tests that
    # limit, the grace before the kill and one replay, never more.
    assert attacked["seconds"] < 300, attacked["seconds"]


# A student's binding of a locked in-kernel helper's name, in every form, after the locked cell.
HELPER_LAB = "04_additive_scoring"
BROKEN = "lambda *args, **kwargs: 1 / 0"
REBINDS_HELPER = {
    "def": "def set_parameters(*args, **kwargs):\n    return 1 / 0\n",
    "class": "class parameter_gradients:\n    pass\n",
    "import": "from math import pi as set_parameters\n",
    "for": f"for set_parameters in [{BROKEN}]:\n    pass\n",
    "with": "import contextlib\nwith contextlib.nullcontext(0) as parameter_gradients:\n    pass\n",
    "walrus": f"if (set_parameters := {BROKEN}):\n    pass\n",
    "except": "try:\n    1 / 0\nexcept ZeroDivisionError as set_parameters:\n    pass\n"
    "set_parameters = None\n",
    "tuple": f"set_parameters, (parameter_gradients, _) = {BROKEN}, ({BROKEN}, 0)\n",
    "module_attribute": f"import utils.grading\nutils.grading.set_parameters = {BROKEN}\n"
    f"utils.grading.parameter_gradients = {BROKEN}\n",
}


@pytest.fixture(scope="module")
def rebound_helpers(tmp_path_factory):
    """Lab 04 solved, with the helpers' names rebound by each binding form."""
    root = scratch_course(tmp_path_factory.mktemp("helpers"), [HELPER_LAB])
    release = notebooks.read(root / "release" / HELPER_LAB / paths.lab_filename(HELPER_LAB))
    answers = solution_cells(HELPER_LAB)
    for student, code in {"honest": "", **REBINDS_HELPER}.items():
        first = {"additive_score": answers["additive_score"] + "\n\n" + code}
        submit(root, HELPER_LAB, student, fill(release, {**answers, **first}))
    result = run_instructor(root, "autograde", HELPER_LAB)
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.mark.parametrize("form", REBINDS_HELPER)
def test_a_locked_helper_is_never_replaced_by_a_students_binding(rebound_helpers, form):
    honest = cell_scores(rebound_helpers, HELPER_LAB, "honest")
    assert sum(honest.values()) > 0
    assert cell_scores(rebound_helpers, HELPER_LAB, form) == honest


def test_autograde_refuses_to_grade_where_no_sandbox_can_be_made(tmp_path, monkeypatch, capsys):
    from course import instructor

    monkeypatch.setattr(sandbox, "probe", lambda: (False, "user namespaces are disabled"))
    with pytest.raises(SystemExit) as stopped:
        instructor.main(["autograde", LAB, "--root", str(tmp_path)])
    printed = capsys.readouterr().out
    assert stopped.value.code == 2
    assert "refuses to grade" in printed and "user namespaces are disabled" in printed
    assert "make autograde UNSANDBOXED=1" in printed
    assert not (tmp_path / "autograded").exists()


def test_an_unsandboxed_run_says_so_on_every_summary_line(tmp_path):
    root = scratch_course(tmp_path, [LAB])
    submit(root, LAB, "honest", fill(release_notebook(root), solution_cells(LAB)))
    result = run_instructor(root, "autograde", LAB, "--unsandboxed")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith("UNSANDBOXED: ") for line in lines), lines
    assert sum(cell_scores(root, LAB, "honest").values()) == 8


def test_an_output_over_64_mib_is_dropped_before_the_grader_reads_it(attacked):
    output = autograded_output(attacked, "prints_over_64_mib")
    assert "x" * 1000 not in output
    assert "one message was larger than 64 MiB" in output
    client = ForkingKernelManager().client()
    assert client.context.getsockopt(zmq.MAXMSGSIZE) == MAX_MESSAGE_BYTES


def test_a_module_planted_in_the_shared_tmp_never_runs_in_the_zygote(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the zygote's working folder
    planted = tmp_path / "pdb.py"  # a module the zygote imports
    planted.write_text(PLANTED.format(marker=str(tmp_path / "ran")))
    ours, theirs = socket.socketpair()
    process = zygote.start(theirs)
    theirs.close()
    ours.close()  # the zygote imports every module, then ends
    assert process.wait(120) == 0
    process.stdin.close()
    assert not (tmp_path / "ran").exists()


def test_a_module_planted_in_the_working_folder_never_runs_in_the_probe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "resource.py").write_text(PLANTED.format(marker=str(tmp_path / "ran")))
    assert sandbox.probe() == (True, "")
    assert not (tmp_path / "ran").exists()


# Kernels under the student's control (every cell runs) that answer the grader's requests
# about softmax with 60 MB of JSON lists, as the agent's reply text or as the comm message itself,
# that display 60 MB of them, or that print 60 MB thirty times in each call: the grader refuses
# what is over its budget unbuilt, keeps no backlog of messages, and only the tests that needed
# that value fail.
ANSWERS_SOFTMAX_WITH = """
manager = get_ipython().kernel.comm_manager
register = manager.register_target


def register_and_wrap(name, listen):
    answer_honestly = listen.__self__.run

    def answer(request):
        return {reply} if '"softmax"' in request else answer_honestly(request)

    listen.__self__.run = answer
    register(name, listen)


manager.register_target = register_and_wrap
"""
HOSTILE_REPLIES = {
    "replies_60_mb_of_lists": "'{\"value\": [' + '[], ' * 15_000_000 + '[]]}'",
    "sends_60_mb_of_lists": "[[]] * 15_000_000",
}
DISPLAYS_60_MB_OF_LISTS = """
from IPython.display import publish_display_data

publish_display_data({"application/json": [[]] * 15_000_000})
"""
PRINTS_60_MB_PER_CALL = """
import sys


def softmax(scores, dim=-1):
    for _ in range(30):
        print("x" * 60_000_000)
        sys.stdout.flush()
    return scores.softmax(dim)
"""
GRADER_MEMORY_LIMIT_MB = 1024  # the most a submission may add to the grader's peak memory


def grader_processes():
    """Process ids of this process's descendants that run outside any sandbox."""
    parents, uids = {}, {}
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if "PPid" in fields and "Uid" in fields:
            parents[int(entry.name)] = int(fields["PPid"])
            uids[int(entry.name)] = int(fields["Uid"].split()[0])
    found, frontier = [], [os.getpid()]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += [pid for pid in children if uids[pid] < sandbox.UID_BASE]
        frontier = children
    return found


def peak_memory_mb(pid):
    """The peak resident memory of process `pid` so far, in MB (0 once it has gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    lines = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(lines[0].split()[1]) / 1024 if lines else 0


def graded_with_peak_memory(folder, submissions):
    """`graded_course`, with the largest peak memory of its graders (MB)."""
    peak, done = [0.0], threading.Event()

    def sample():
        while not done.wait(0.1):
            peak[0] = max([peak[0], *map(peak_memory_mb, grader_processes())])

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        course = graded_course(folder, submissions)
    finally:
        done.set()
        sampler.join()
    return {**course, "peak_mb": peak[0]}


@pytest.fixture(scope="module")
def hostile_replies(tmp_path_factory):
    """Lab 01 graded for an honest student alone, then beside kernels that send 60 MB replies."""

    def honest_only(release, answers, root):
        return {"honest": {NOTEBOOK: fill(release, answers)}}

    def with_hostile_kernels(release, answers, root):
        def answered(softmax):
            return {NOTEBOOK: fill(release, {**answers, "softmax": softmax})}

        replies = {
            student: answered(answers["softmax"] + ANSWERS_SOFTMAX_WITH.format(reply=reply))
            for student, reply in HOSTILE_REPLIES.items()
        }
        displays = answered(answers["softmax"] + DISPLAYS_60_MB_OF_LISTS)
        prints = answered(PRINTS_60_MB_PER_CALL)
        return {
            **honest_only(release, answers, root),
            **replies,
            "displays_60_mb": displays,
            "prints_60_mb_per_call": prints,
            "prints_over_64_mib": answered(PRINTS_OVER_64_MIB),
        }

    honest = graded_with_peak_memory(tmp_path_factory.mktemp("honest"), honest_only)
    hostile = graded_with_peak_memory(tmp_path_factory.mktemp("replies"), with_hostile_kernels)
    return {"honest": honest, "hostile": hostile}


@pytest.mark.parametrize("student", HOSTILE_REPLIES)
def test_a_60_mb_reply_is_refused_and_costs_only_the_tests_that_read_it(hostile_replies, student):
    course = hostile_replies["hostile"]
    assert course["result"].returncode == 0, course["result"].stdout + course["result"].stderr
    cells = scores(course, student)
    assert all(cells[t] == 0 for t in SOFTMAX_TESTS), cells
    assert all(cells[t] > 0 for t in LOG_SOFTMAX_TESTS), cells
    output = autograded_output(course, student)
    assert "JSON text of more than 100000 values" in output


def test_60_mb_of_displayed_lists_are_refused_and_cost_no_point(hostile_replies):
    course = hostile_replies["hostile"]
    assert total(course, "displays_60_mb") == total(course, "honest") == 8
    assert "The autograder refused a message of this cell" in autograded_output(
        course, "displays_60_mb"
    )


FLOODS = {"prints_60_mb_per_call": "", "prints_over_64_mib": "one message was larger than 64 MiB"}


@pytest.mark.parametrize("student", FLOODS)
def test_floods_of_output_cost_only_their_own_tests(hostile_replies, student):
    course = hostile_replies["hostile"]
    cells = scores(course, student)
    assert all(cells[t] > 0 for t in LOG_SOFTMAX_TESTS), cells
    assert FLOODS[student] in autograded_output(course, student)


def test_the_graders_peak_memory_under_60_mb_replies_stays_bounded(hostile_replies):
    honest, hostile = hostile_replies["honest"]["peak_mb"], hostile_replies["hostile"]["peak_mb"]
    print(f"grader peak memory: {honest:.0f} MB honest alone, {hostile:.0f} MB with 60 MB replies")
    assert 0 < hostile < honest + GRADER_MEMORY_LIMIT_MB, (honest, hostile)


# A kernel that tries to leave links in its socket folder, and to swap a socket for one, then
# dies: the grader restarts it.
PLANTS_LINKS = """
import os
planted = []
for name in ("planted", "kernel.json.bak", "kernel-9"):
    try:
        os.symlink({target!r}, os.path.join({ipc_dir!r}, name))
        planted.append(name)
    except OSError:
        pass
try:
    os.rename(os.path.join({ipc_dir!r}, "kernel-1"), os.path.join({ipc_dir!r}, "moved"))
    planted.append("moved")
except OSError:
    pass
assert not planted, planted
"""


def run_in_kernel(client, code):
    """Run `code` through `client` (started) and wait for it to finish without an error."""
    run_sync(client.wait_for_ready)(timeout=60)
    reply = run_sync(client.execute_interactive)(code, timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]


def test_a_kernel_can_leave_no_link_in_its_socket_folder_nor_hand_over_a_file(tmp_path):
    precious = tmp_path / "gradebook.db"
    precious.write_text("grades")
    (tmp_path / "work").mkdir()
    manager = ForkingKernelManager()
    run_sync(manager.start_kernel)(cwd=str(tmp_path / "work"))
    ipc_dir = Path(manager.ipc_dir)
    plants = PLANTS_LINKS.format(target=str(precious), ipc_dir=str(ipc_dir))
    client = manager.client()  # kept across the restart, as nbclient keeps its own
    client.start_channels()
    try:
        run_in_kernel(client, plants)
        (ipc_dir / "left_before_the_restart").touch()
        run_sync(manager.restart_kernel)(now=True)  # as after the kernel killed itself
        run_in_kernel(client, plants)
        assert not (ipc_dir / "left_before_the_restart").exists()  # a fresh folder
        assert not Path(client.ip).is_relative_to(ipc_dir)  # the grader's own links, pinned
        assert all(descriptor >= 0 for descriptor in manager._pinned)
        assert precious.stat().st_uid == os.getuid() and precious.read_text() == "grades"
    finally:
        client.stop_channels()
        run_sync(manager.shutdown_kernel)(now=True)
    assert not ipc_dir.parent.exists()
