"""The instructor's cycle on broken and hostile submissions: collect, autograde, feedback, grades.

One scratch course holds one student per scenario of lab 01; a single `make autograde` run grades
them all, with a 5 s cell limit instead of the course's 30 s to keep the test short. A second
course shows that the grader's verdicts hold when a submission controls its whole kernel (every
student cell runs as written; the review of the code only lists findings). A third attacks the
machine from the kernel: its files, its network, other students' kernels and its resources. The
sandbox must stop each attack, and no attack may earn a point it did not compute. The attacks
are data, in tests/attacks/: each says what it tries and what its graded notebook must show.
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

import psutil
import pytest
import zmq
from attacks import (
    EXERCISES,
    SOLUTION,
    WRONG_SOFTMAX,
    grade_ids,
    on_the_checks,
    on_the_grader,
    on_the_helpers,
)
from attacks.on_the_machine import ATTACKS as ON_THE_MACHINE
from attacks.on_the_machine import MARK, PLANTED, PLANTS_LINKS
from autograded import cell_scores
from catalogue import mistakes
from jupyter_core.utils import run_sync
from nbgrader.api import Gradebook

from course.coursedir import notebooks, paths
from course.coursedir.nbgrader_run import instructor as run_instructor
from course.coursedir.nbgrader_run import nbgrader_environment
from course.coursedir.scratch import fill, solution_cells, submit
from course.grading.channels import MAX_MESSAGE_BYTES
from course.grading.kernels import cgroups, probe, sandbox, zygote
from course.grading.kernels.provisioner import ForkingKernelManager
from course.grading.preprocessors import judge
from course.grading.remote.client import INTERRUPT_GRACE_SECONDS, WALL_FACTOR

pytestmark = pytest.mark.slow  # grades hostile submissions in sandboxed kernels

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
SOFTMAX_TESTS, LOG_SOFTMAX_TESTS, TEMPERATURE_TESTS = (grade_ids([name]) for name in EXERCISES)
CELL_LIMIT_SECONDS = 5
CALLS_BUILTIN = """
def softmax(scores, dim=-1):
    return torch.softmax(scores, dim=dim)
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
    checks = on_the_checks
    return {
        "honest": answered(),
        "loop_in_function": answered(
            softmax="def softmax(scores, dim=-1):\n    while True:\n        pass\n"
        ),
        "loop_at_top_level": answered(softmax="while True:\n    pass\n" + solution),
        "imports_os": answered(softmax="import os\nos._exit(1)\n" + solution),
        "input_transformer": answered(softmax=checks.BLANKS_TEST_CELLS + WRONG_SOFTMAX),
        "calls_torch_in_later_cells": answered(
            softmax=checks.CALLS_TORCH_IN_LATER_CELLS + WRONG_SOFTMAX
        ),
        "calls_builtin": answered(softmax=CALLS_BUILTIN),
        "edited_tests": {NOTEBOOK: with_edited_tests(release)},
        "patches_directly": answered(softmax=checks.PATCHES_DIRECTLY + WRONG_SOFTMAX),
        "patches_through_aliases": answered(softmax=checks.PATCHES_THROUGH_ALIASES),
        "huge_output": answered(softmax=on_the_grader.HUGE_OUTPUT.replace(SOLUTION, solution)),
        "raises_everywhere": {NOTEBOOK: fill(release, everything_raises)},
        "syntax_error": answered(
            log_softmax="def log_softmax(scores, dim=-1)\n    return scores\n"
        ),
        "ignores_dim": answered(softmax=ignores_dim.code),
        "renamed": {"my_lab.ipynb": fill(release, answers)},
        "extra_notebook": {**answered(), "scratch.ipynb": release},
        "missing": {},
    }


def answered_with(release, answers, attacks, **fields):
    """Map student -> notebooks: each attack's softmax cell beside the other solutions."""
    codes = {attack.name: attack.cell(answers["softmax"], **fields) for attack in attacks}
    return {name: {NOTEBOOK: fill(release, {**answers, "softmax": c})} for name, c in codes.items()}


def honest_only(release, answers):
    """Map student -> notebooks for one honest student."""
    return {"honest": {NOTEBOOK: fill(release, answers)}}


def kernel_attacks(release, answers):
    """Map student -> notebooks for the attacks on the checks, beside an honest student."""
    return {
        **honest_only(release, answers),
        **answered_with(release, answers, on_the_checks.ATTACKS),
    }


def limited_course(course_copy, name):
    """A course of one's own with lab 01 released and the cell limit of these tests."""
    return limited_course_of(course_copy, LAB, name)


def limited_course_of(course_copy, lab, name):
    """A course of one's own with `lab` released and the cell limit of these tests."""
    return course_copy(lab, config_lines=[f"c.Execute.timeout = {CELL_LIMIT_SECONDS}"], name=name)


def graded_course(root, submissions):
    """The course at `root` with these submissions, autograded once by `make autograde`."""
    for student, files in submissions(release_notebook(root), solution_cells(LAB)).items():
        paths.submitted(root, student, LAB).mkdir(parents=True, exist_ok=True)
        for filename, nb in files.items():
            submit(root, LAB, student, nb, filename=filename)
    start = time.perf_counter()
    with own_sandboxes() as seen:
        result = run_instructor(root, "autograde", LAB)
    seconds = time.perf_counter() - start
    return {"root": root, "result": result, "seconds": seconds, "leftover": running(seen)}


@contextlib.contextmanager
def own_sandboxes():
    """A set, filled while the block runs, of the sandboxed processes below this process.

    Other runs on the same machine (other tests, other graders) have sandboxes of their own: only
    those of this test's runs are its to account for.
    """
    seen, done = set(), threading.Event()

    def sample():
        while not done.wait(0.1):
            seen.update(own_sandbox_processes())

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        yield seen
    finally:
        done.set()
        sampler.join()


def own_sandbox_processes():
    """The ids of the processes below this one that run as a sandbox's user."""
    found = set()
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if child.uids().effective >= sandbox.UID_BASE:
                    found.add(child.pid)
    return found


def running(pids):
    """Those of `pids` still running (neither ended nor a zombie)."""
    found = set()
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                found.add(pid)
    return found


@pytest.fixture(scope="module")
def course(course_copy):
    """Every scenario, graded with the course's own configuration."""
    return graded_course(limited_course(course_copy, "hostile"), scenarios)


@pytest.fixture(scope="module")
def open_kernel(course_copy):
    """The attacks on the checks, graded with the course's own configuration."""
    return graded_course(limited_course(course_copy, "open"), kernel_attacks)


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


def printed_output(course, student):
    """What the cells of a student's autograded notebook printed themselves (no tracebacks)."""
    path = paths.autograded(course["root"], student, LAB) / NOTEBOOK
    return "".join(
        output.text
        for cell in notebooks.read(path).cells
        for output in cell.get("outputs", [])
        if output.output_type == "stream"
    )


def assert_refused(course, attack, **fields):
    """The attack's notebook shows why it earned nothing, and it cost the tests it names only."""
    shown, printed = autograded_output(course, attack.name), printed_output(course, attack.name)
    for text in attack.shows:
        assert text in shown, f"{attack.name} ({attack.why}): {text!r} not in\n{shown[-3000:]}"
    for text in attack.printed(**fields):
        assert text in printed, f"{attack.name} ({attack.why}) did not print {text!r}:\n{printed}"
    cells, honest = scores(course, attack.name), scores(course, "honest")
    assert sum(honest.values()) == 8
    assert all(cells[grade_id] == 0 for grade_id in grade_ids(attack.loses)), cells
    assert all(cells[grade_id] == honest[grade_id] for grade_id in grade_ids(attack.keeps)), cells


def attack_name(attack):
    """A test id: the attack's student."""
    return attack.name


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
    with Gradebook(paths.default_gradebook_url(course["root"])) as gradebook:
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


@pytest.mark.parametrize("attack", on_the_checks.ATTACKS, ids=attack_name)
def test_a_kernel_under_the_students_control_cannot_forge_a_pass(open_kernel, attack):
    assert_refused(open_kernel, attack)


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
    url = paths.default_gradebook_url(course["root"])
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


def test_autograde_killed_midway_resumes_without_losing_or_repeating(lab_01_course):
    root = lab_01_course
    release, answers = release_notebook(root), solution_cells(LAB)
    slow = fill(
        release, {**answers, "softmax": "import time\ntime.sleep(3)\n" + answers["softmax"]}
    )
    for student in ["a_first", "b_second", "c_third"]:
        submit(root, LAB, student, slow)
    command = [sys.executable, "-m", "course.instructor", "autograde", LAB, "--root", str(root)]
    with own_sandboxes() as seen:
        process = subprocess.Popen(
            command,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=nbgrader_environment(),
        )
        second = paths.autograded(root, "b_second", LAB) / NOTEBOOK
        deadline = time.monotonic() + 120
        # The second started (and the first with it, or done), and a kernel of this run runs.
        while not (second.exists() and running(seen)) and time.monotonic() < deadline:
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGKILL)
        killed = time.monotonic()
        process.wait()
    assert second.exists() and seen, "no kernel of the autograde ran when it was killed"
    # The kernels of this run only: other runs on a busy machine have sandboxes of their own.
    while (processes_working_in(root) or running(seen)) and time.monotonic() < killed + 30:
        time.sleep(0.1)
    print(f"the killed autograde's kernels ended {time.monotonic() - killed:.1f} s after it")
    assert not processes_working_in(root), "processes outlived the killed autograde"
    assert not running(seen), "sandboxed kernels outlived the killed autograde"
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


def test_collect_reads_lms_file_names_and_reports_unreadable_ones(lab_01_course):
    root = lab_01_course
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


@pytest.fixture(scope="module")
def attacked(course_copy):
    """The attacks on the machine, graded with listeners on loopback."""
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    for listener in (tcp, udp):
        listener.setblocking(False)
    root = limited_course(course_copy, "attacked")
    (root / "course").mkdir()  # a stand-in for the instructor's tools beside the course
    (root / "course" / "feedback.py").write_text("# the instructor's code\n")
    fields = {
        "root": root,
        "mark": MARK,
        "tcp_port": tcp.getsockname()[1],
        "udp_port": udp.getsockname()[1],
        "course_package": paths.ROOT / "course",
    }

    def submissions(release, answers):
        return {
            **answered_with(release, answers, ON_THE_MACHINE, **fields),
            **answered_with(release, answers, on_the_grader.BESIDE_THE_MACHINE),
            **honest_only(release, answers),
        }

    try:
        course = graded_course(root, submissions)
        course["fields"] = fields
        course["tcp_connections"], course["udp_datagrams"] = [], []
        with contextlib.suppress(BlockingIOError):
            course["tcp_connections"].append(tcp.accept())
        with contextlib.suppress(BlockingIOError):
            course["udp_datagrams"].append(udp.recv(100))
        yield course
    finally:
        tcp.close()
        udp.close()


@pytest.mark.parametrize("attack", ON_THE_MACHINE, ids=attack_name)
def test_an_attack_on_the_machine_is_refused_and_earns_nothing(attacked, attack):
    assert_refused(attacked, attack, **attacked["fields"])


@pytest.mark.parametrize("attack", on_the_grader.BESIDE_THE_MACHINE, ids=attack_name)
def test_an_attack_on_the_grader_is_stopped_and_earns_nothing(attacked, attack):
    assert_refused(attacked, attack)


def test_the_kernel_cannot_write_the_course_or_outside_its_sandbox(attacked):
    root = attacked["root"]
    output = autograded_output(attacked, "writes_course")
    wrote = [line for line in output.splitlines() if line.startswith("WROTE")]
    assert wrote and all(line == f"WROTE /tmp/{MARK}" for line in wrote)  # its own /tmp only
    protected = ["gradebook.db", "nbgrader_config.py", "course/grading/preprocessors/feedback.py"]
    for path in [root / name for name in protected] + list((root / "source").rglob("*.*")):
        assert not path.exists() or MARK.encode() not in path.read_bytes(), path
    assert not list(root.rglob(MARK)) and not (Path("/tmp") / MARK).exists()


def test_the_kernel_cannot_read_the_course_or_another_student(attacked):
    output = autograded_output(attacked, "reads_course")
    for secret in ["BEGIN HIDDEN TESTS", "torch.Generator().manual_seed(101)", "LimitOutputSize",
                   "HideHiddenTests", "def log_softmax"]:
        assert secret not in output


def test_the_kernel_has_no_network(attacked):
    output = autograded_output(attacked, "uses_network")
    assert "SENT" not in output and output.count("network refused") == 2
    assert attacked["tcp_connections"] == [] and attacked["udp_datagrams"] == []


def test_no_process_outlives_grading_or_reaches_a_later_kernel(attacked):
    assert attacked["leftover"] == set()
    assert sum(cell_scores(attacked["root"], LAB, "honest").values()) == 8


RESTART_SECONDS = 10


def grading_seconds(course, student):
    """How long the student's notebook was graded: from its copy in autograded/ to its verdicts."""
    folder = paths.autograded(course["root"], student, LAB)
    return (folder / NOTEBOOK).stat().st_mtime - folder.stat().st_mtime


@pytest.mark.parametrize("attack", on_the_grader.BESIDE_THE_MACHINE, ids=attack_name)
def test_an_attack_on_the_grader_holds_its_worker_a_bounded_time(attacked, attack):
    # Each wait on a kernel ends at most 4 times the 5 s limit after it began, then 5 s for the
    # interrupt and a second for the kill; a kernel is killed at most MAX_KILLS times, and each
    # restart starts a kernel (RESTART_SECONDS, generously) and replays the cells in about the
    # time an honest notebook takes on this machine, however busy (it is graded beside them).
    wait = WALL_FACTOR * CELL_LIMIT_SECONDS + INTERRUPT_GRACE_SECONDS + 1
    honest = grading_seconds(attacked, "honest")
    seconds = grading_seconds(attacked, attack.name)
    print(f"{attack.name}: graded in {seconds:.0f} s, the honest student in {honest:.0f} s")
    bound = judge.MAX_KILLS * (wait + RESTART_SECONDS + honest) + honest
    assert seconds < bound, (seconds, honest)


@pytest.fixture(scope="module")
def rebound_helpers(course_copy):
    """Lab 04 solved, with the helpers' names rebound by each binding form."""
    lab = on_the_helpers.LAB
    root = course_copy(lab, name="helpers")
    release = notebooks.read(root / "release" / lab / paths.lab_filename(lab))
    answers = solution_cells(lab)
    for student, code in {"honest": "", **on_the_helpers.REBINDS_HELPER}.items():
        first = {"additive_score": answers["additive_score"] + "\n\n" + code}
        submit(root, lab, student, fill(release, {**answers, **first}))
    result = run_instructor(root, "autograde", lab)
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.mark.parametrize("form", on_the_helpers.REBINDS_HELPER)
def test_a_locked_helper_is_never_replaced_by_a_students_binding(rebound_helpers, form):
    honest = cell_scores(rebound_helpers, on_the_helpers.LAB, "honest")
    assert sum(honest.values()) > 0
    assert cell_scores(rebound_helpers, on_the_helpers.LAB, form) == honest


def test_a_kernel_that_drops_the_pin_of_a_helper_is_graded_as_far_as_it_got(course_copy):
    lab = on_the_helpers.LAB
    root = limited_course_of(course_copy, lab, "pins")
    release = notebooks.read(root / "release" / lab / paths.lab_filename(lab))
    answers = solution_cells(lab)
    first = {"additive_score": answers["additive_score"] + on_the_grader.DROPS_PINS}
    submit(root, lab, "honest", fill(release, answers))
    submit(root, lab, "drops_pins", fill(release, {**answers, **first}))
    start = time.perf_counter()
    result = run_instructor(root, "autograde", lab)
    print(f"lab 04 with a kernel that drops pins: graded in {time.perf_counter() - start:.0f} s")
    assert result.returncode == 0, result.stdout + result.stderr
    honest, dropped = (cell_scores(root, lab, name) for name in ("honest", "drops_pins"))
    kept, lost = grade_ids(["additive"]), grade_ids(["multi_hop"])  # before and after the pin
    assert all(dropped[t] == honest[t] > 0 for t in kept), dropped
    assert all(honest[t] > 0 and dropped[t] == 0 for t in lost), dropped
    path = paths.autograded(root, "drops_pins", lab) / paths.lab_filename(lab)
    shown = notebooks.output_text(notebooks.read(path))
    stopped = "the kernel stopped answering the grader (it did not hand over the test helper"
    assert stopped in shown and f"The autograder did not run this cell: {stopped}" in shown, shown


def test_autograde_refuses_to_grade_where_no_sandbox_can_be_made(tmp_path, monkeypatch, capsys):
    from course import instructor

    monkeypatch.setattr(probe, "probe", lambda: (False, "user namespaces are disabled"))
    with pytest.raises(SystemExit) as stopped:
        instructor.main(["autograde", LAB, "--root", str(tmp_path)])
    printed = capsys.readouterr().out
    assert stopped.value.code == 2
    assert "refuses to grade" in printed and "user namespaces are disabled" in printed
    assert "make autograde UNSANDBOXED=1" in printed
    assert not (tmp_path / "autograded").exists()


def test_autograde_refuses_per_process_limits_alone_unless_asked_by_name(
    tmp_path, monkeypatch, capsys
):
    from course import instructor

    monkeypatch.setattr(probe, "probe", lambda: (True, ""))
    without_group = cgroups.Mode(cgroups.RLIMITS, "no control group is delegated to you")
    monkeypatch.setattr(cgroups, "mode", lambda: without_group)
    with pytest.raises(SystemExit) as stopped:
        instructor.main(["autograde", LAB, "--root", str(tmp_path)])
    printed = capsys.readouterr().out
    assert stopped.value.code == 2
    assert "no control group can bound each sandbox as a whole" in printed, printed
    assert "no control group is delegated to you" in printed
    assert "make autograde PER_PROCESS=1" in printed
    assert not (tmp_path / "autograded").exists()
    arguments = instructor.command_line().parse_args(["autograde", LAB, "--per-process-limits"])
    assert arguments.per_process_limits


def test_an_unsandboxed_run_says_so_on_every_summary_line(lab_01_course, lab_01_work):
    root = lab_01_course
    submit(root, LAB, "honest", lab_01_work["solution"])
    result = run_instructor(root, "autograde", LAB, "--unsandboxed")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith("UNSANDBOXED: ") for line in lines), lines
    assert sum(cell_scores(root, LAB, "honest").values()) == 8


def test_an_output_over_64_mib_is_dropped_before_the_grader_reads_it(attacked):
    output = autograded_output(attacked, "prints_over_64_mib")
    assert "x" * 1000 not in output
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


def graded_with_peak_memory(root, submissions):
    """`graded_course`, with the largest peak memory of its graders (MB)."""
    peak, done = [0.0], threading.Event()

    def sample():
        while not done.wait(0.1):
            peak[0] = max([peak[0], *map(peak_memory_mb, grader_processes())])

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        course = graded_course(root, submissions)
    finally:
        done.set()
        sampler.join()
    return {**course, "peak_mb": peak[0]}


@pytest.fixture(scope="module")
def hostile_replies(course_copy):
    """Lab 01 graded for an honest student alone, then beside kernels that flood the grader."""

    def with_hostile_kernels(release, answers):
        return {
            **honest_only(release, answers),
            **answered_with(release, answers, on_the_grader.REPLIES),
        }

    honest = graded_with_peak_memory(limited_course(course_copy, "honest"), honest_only)
    hostile = graded_with_peak_memory(
        limited_course(course_copy, "replies"), with_hostile_kernels
    )
    return {"honest": honest, "hostile": hostile}


@pytest.mark.parametrize("attack", on_the_grader.REPLIES, ids=attack_name)
def test_a_flood_is_refused_and_costs_only_the_tests_that_needed_it(hostile_replies, attack):
    course = hostile_replies["hostile"]
    assert course["result"].returncode == 0, course["result"].stdout + course["result"].stderr
    assert_refused(course, attack)


def test_the_graders_peak_memory_under_60_mb_replies_stays_bounded(hostile_replies):
    honest, hostile = hostile_replies["honest"]["peak_mb"], hostile_replies["hostile"]["peak_mb"]
    print(f"grader peak memory: {honest:.0f} MB honest alone, {hostile:.0f} MB with 60 MB replies")
    assert 0 < hostile < honest + GRADER_MEMORY_LIMIT_MB, (honest, hostile)



LARGE_CELL_LIMIT_MB = 256  # the most a cell too large to be read may add to the grader's peak


@pytest.fixture(scope="module")
def large_cell(course_copy):
    """Lab 01 graded for an honest student alone, then beside one whose cell holds 4 MB."""

    def with_a_large_cell(release, answers):
        return {
            **honest_only(release, answers),
            **answered_with(release, answers, [on_the_grader.LARGE_CELL]),
        }

    honest = graded_with_peak_memory(limited_course(course_copy, "honest_for_4_mb"), honest_only)
    large = graded_with_peak_memory(limited_course(course_copy, "large_cell"), with_a_large_cell)
    return {"honest": honest, "large": large}


def test_a_cell_of_4_mb_is_graded_listed_as_too_large_and_costs_the_grader_little(large_cell):
    course, attack = large_cell["large"], on_the_grader.LARGE_CELL
    output = course["result"].stdout + course["result"].stderr
    assert course["result"].returncode == 0, output
    assert_refused(course, attack)  # every point kept
    assert f"{attack.name}: softmax, line 1: it is too large to be read" in output, output
    honest, large = large_cell["honest"]["peak_mb"], course["peak_mb"]
    print(f"grader peak memory: {honest:.0f} MB honest alone, {large:.0f} MB with a 4 MB cell")
    assert 0 < large < honest + LARGE_CELL_LIMIT_MB, (honest, large)

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
    ipc_dir = Path(manager.provisioner.ipc_dir)
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
        assert all(descriptor >= 0 for descriptor in manager.provisioner.pinned)
        assert precious.stat().st_uid == os.getuid() and precious.read_text() == "grades"
    finally:
        client.stop_channels()
        run_sync(manager.shutdown_kernel)(now=True)
    assert not ipc_dir.parent.exists()
