"""A failed check in the student's own kernel shows its message and hint first, briefly."""

import pytest
from catalogue import mistakes
from test_autograde import MAX_ERROR_LINES, MESSAGE_WITHIN, error_lines

from course.coursedir import notebooks, paths
from course.coursedir.scratch import fill, solution_cells

pytestmark = pytest.mark.slow  # each catalogued mistake, run in a Jupyter kernel
LAB = "01_softmax"
SHOWN = ["naive_softmax_overflows", "softmax_ignores_dim", "temperature_inverse_returned"]


@pytest.mark.parametrize("name", SHOWN)
def test_a_failed_visible_test_shows_the_message_first_in_jupyter(name, tmp_path):
    mistake = next(m for m in mistakes(LAB) if m.name == name)
    release = notebooks.read(paths.RELEASE / LAB / paths.lab_filename(LAB))
    nb = fill(release, {**solution_cells(LAB), mistake.cell: mistake.code})
    notebooks.execute(nb, cwd=tmp_path, allow_errors=True)
    shown = list(error_lines(nb, mistake.message))
    assert shown, f"{mistake.message!r} not shown:\n{notebooks.output_text(nb)[-2000:]}"
    for lines in shown:
        first = next(number for number, line in enumerate(lines) if mistake.message in line)
        assert len(lines) <= MAX_ERROR_LINES and first < MESSAGE_WITHIN, "\n".join(lines)
        assert "utils/grading.py" not in "\n".join(lines)
        assert any(line.startswith("(failed at line") for line in lines), "\n".join(lines)
