"""Autograde round trip: solutions get every point, blank work none, each typical mistake some.

For each lab, a scratch copy of the course is released with nbgrader, then one submission per
case (solution, blank release, each catalogued mistake, each correct answer in another style) is
autograded in one run of the course's own `autograde`, on a worker per core, as an instructor's.
"""

import ast
import re
from collections import Counter

import pytest
from autograded import autograded_scores, autograded_text
from catalogue import ASSIGNMENTS, bases, idiomatic, mistakes

from course.coursedir import notebooks, paths
from course.coursedir.nbgrader_run import instructor
from course.coursedir.scratch import fill, solution_cells, submit

MISTAKE_CASES = [
    (assignment, mistake) for assignment in ASSIGNMENTS for mistake in mistakes(assignment)
]
VARIANT_CASES = [
    (assignment, variant) for assignment in ASSIGNMENTS for variant in idiomatic(assignment)
]


def student_id(mistake):
    """The synthetic student who submits a mistake."""
    return f"mistake_{mistake.name}"


def variant_student_id(variant):
    """The synthetic student who submits a correct answer in another style."""
    return f"variant_{variant.name}"


def grade_every_case(root, assignment):
    """Submit every synthetic case of a lab to the course at `root`, autograde them; the scores."""
    release = notebooks.read(root / "release" / assignment / paths.lab_filename(assignment))
    answers = solution_cells(assignment)
    submit(root, assignment, "solution", fill(release, answers))
    submit(root, assignment, "blank", release)
    if bases(assignment):  # the correct answers the catalogue's mistakes are changes of
        submit(root, assignment, "bases", fill(release, {**answers, **bases(assignment)}))
    for mistake in mistakes(assignment):
        submission = fill(release, {**answers, mistake.cell: mistake.code})
        submit(root, assignment, student_id(mistake), submission)
    for variant in idiomatic(assignment):
        submission = fill(release, {**answers, variant.cell: variant.code})
        submit(root, assignment, variant_student_id(variant), submission)
    result = instructor(root, "autograde", assignment, timeout=3600)
    assert result.returncode == 0, f"{result.stdout[-5000:]}\n{result.stderr[-3000:]}"
    return autograded_scores(root, assignment)


class GradedLabs(dict):
    """lab -> (course root, scores) of every synthetic case, autograded once on first use."""

    def __init__(self, course_copy):
        super().__init__()
        self.course_copy = course_copy

    def __missing__(self, assignment):
        root = self.course_copy(assignment, name=assignment)
        self[assignment] = (root, grade_every_case(root, assignment))
        return self[assignment]


@pytest.fixture(scope="module")
def graded(course_copy):
    """Each lab's synthetic cases, autograded in a course of their own: lab -> (root, scores)."""
    return GradedLabs(course_copy)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_gets_every_point(assignment, graded):
    _, scores = graded[assignment]
    score, maximum = scores["solution"]
    assert maximum > 0
    assert score == maximum, f"the solution scored {score} of {maximum}"


@pytest.mark.parametrize(
    ("assignment", "variant"), VARIANT_CASES, ids=[f"{a}-{v.name}" for a, v in VARIANT_CASES]
)
def test_correct_answer_in_another_style_gets_every_point(assignment, variant, graded):
    root, scores = graded[assignment]
    score, maximum = scores[variant_student_id(variant)]
    text = autograded_text(root, assignment, variant_student_id(variant))
    assert score == maximum, f"{variant.name} scored {score} of {maximum}:\n{text[-3000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", [a for a in ASSIGNMENTS if bases(a)])
def test_the_answers_the_mistakes_change_get_every_point(assignment, graded):
    root, scores = graded[assignment]
    score, maximum = scores["bases"]
    text = autograded_text(root, assignment, "bases")
    assert score == maximum, f"the catalogue's bases scored {score} of {maximum}:\n{text[-3000:]}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_blank_release_gets_zero(assignment, graded):
    _, scores = graded[assignment]
    assert scores["blank"][0] == 0


@pytest.mark.parametrize(
    ("assignment", "mistake"), MISTAKE_CASES, ids=[f"{a}-{m.name}" for a, m in MISTAKE_CASES]
)
def test_mistake_loses_points_and_is_named(assignment, mistake, graded):
    root, scores = graded[assignment]
    score, maximum = scores[student_id(mistake)]
    assert 0 < score < maximum, f"{mistake.name} scored {score} of {maximum}"
    text = autograded_text(root, assignment, student_id(mistake))
    assert mistake.message in text, (
        f"{mistake.message!r} not shown; the output was:\n{text[-3000:]}"
    )
    path = paths.autograded(root, student_id(mistake), assignment) / paths.lab_filename(assignment)
    lines = next(error_lines(notebooks.read(path), mistake.message))
    first = next(number for number, line in enumerate(lines) if mistake.message in line)
    assert len(lines) <= MAX_ERROR_LINES and first < MESSAGE_WITHIN, "\n".join(lines)


MAX_ERROR_LINES, MESSAGE_WITHIN = 15, 8
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def error_lines(nb, message):
    """The lines (without colours) of each error output of a notebook that contains `message`."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                lines = ANSI.sub("", "\n".join(output.traceback)).splitlines()
                if any(message in line for line in lines):
                    yield lines


def defines(code):
    """True for an answer that defines a function or a class, which the tests grade."""
    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in ast.parse(code).body)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_catalogue_has_three_mistakes_per_graded_function(assignment):
    code_cells = solution_cells(assignment, cell_types=("code",))
    counts = Counter(mistake.cell for mistake in mistakes(assignment))
    for grade_id in (grade_id for grade_id, code in code_cells.items() if defines(code)):
        assert counts[grade_id] >= 3, (
            f"{assignment}: only {counts[grade_id]} mistakes for {grade_id}"
        )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_cell_with_mistakes_has_its_correct_answer_in_bases(assignment):
    missing = {mistake.cell for mistake in mistakes(assignment)} - set(bases(assignment))
    assert not missing, f"{assignment}: no correct answer in BASES for {sorted(missing)}"
