"""The feedback page and the LMS's feedback notebook on their own: answers still to grade by
hand show "to be graded", hidden tests say whether they passed, a grader's comment is kept.

Unit tests of `course.grading.preprocessors.feedback` and
`course.lms.feedback_zip.feedback_notebook`; the LMS round trip (tests/course/lms/test_lms.py)
takes the same through the instructor's commands.
"""

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from course.coursedir import notebooks
from course.grading.preprocessors.feedback import FeedbackExporter, HideHiddenTests, WrapLongLines
from course.grading.preprocessors.pages import MAX_HIGHLIGHT_CHARACTERS
from course.lms import feedback_zip

LAB = "01_softmax"
HIDDEN = "check(1)\n### BEGIN HIDDEN TESTS\nsecret_check(2)\n### END HIDDEN TESTS\n"


def hidden_test_cell(outputs, execution_count=1):
    """A test cell with hidden tests, as autograded."""
    cell = new_code_cell(HIDDEN, execution_count=execution_count, outputs=outputs)
    cell.metadata.nbgrader = {"grade": True, "grade_id": "test_hidden", "points": 2}
    return cell


def written_answer(to_grade, score=0.0):
    """A written answer as GetGradesToGrade leaves it."""
    cell = new_markdown_cell("The largest score is subtracted first.")
    cell.metadata.nbgrader = {
        "grade": True,
        "solution": True,
        "grade_id": "written_stability",
        "points": 2,
        "score": score,
        "to_grade": to_grade,
    }
    return cell


@pytest.mark.parametrize(
    ("outputs", "execution_count", "line"),
    [
        ([new_output("error", ename="AssertionError", evalue="wrong")], 1, "error it raised"),
        ([new_output("stream", text="ok\n")], 1, "they passed"),
        ([], None, "the cell did not run"),
    ],
)
def test_the_hidden_test_line_says_what_happened(outputs, execution_count, line):
    nb = new_notebook(cells=[hidden_test_cell(outputs, execution_count)])
    nb, _ = HideHiddenTests().preprocess(nb, {})
    source = nb.cells[0].source
    assert "secret_check" not in source
    assert source.startswith("check(1)\n# (hidden tests: the code is not shown; ")
    assert line in source


def feedback_page(nb, config, to_grade, score=3.0):
    """The feedback page of `nb` with the course's configuration and long lines wrapped."""
    exporter = FeedbackExporter(config=config)
    exporter.register_preprocessor(WrapLongLines)  # as nbgrader does: not enabled by the call
    nbgrader_resources = {"score": score, "max_score": 10, "late_penalty": 0, "to_grade": to_grade}
    resources = {"nbgrader": {"notebook": f"{LAB}_lab", **nbgrader_resources}}
    return exporter.from_notebook_node(nb, resources=resources)[0]


def test_an_answer_to_grade_shows_to_be_graded_never_zero(feedback_config):
    html = feedback_page(new_notebook(cells=[written_answer(True)]), feedback_config, to_grade=1)
    assert "Written response</a> (Score: to be graded / 2.0)" in html
    assert "Score: to be graded / 2.0 <a" in html
    assert "(Score: to be graded, 3.0 / 10.0 so far, 1 written answer still to grade)" in html
    assert "Score: 0.0" not in html and "Score: 3.0 / 10.0" not in html


def test_a_graded_answer_shows_its_score_and_the_total_is_final(feedback_config):
    nb = new_notebook(cells=[written_answer(False, 1.5)])
    html = feedback_page(nb, feedback_config, to_grade=0, score=4.5)
    assert "Written response</a> (Score: 1.5 / 2.0)" in html
    assert "(Score: 4.5 / 10.0)" in html
    assert "to be graded" not in html


def test_long_lines_of_code_and_outputs_wrap(feedback_config):
    html = feedback_page(new_notebook(cells=[written_answer(False)]), feedback_config, to_grade=0)
    assert "div.output_area pre, div.input_area pre {\n  white-space: pre-wrap;" in html


def test_the_lms_feedback_notebook_has_the_comment_below_its_answer(tmp_path):
    cells = [new_markdown_cell("# Lab"), written_answer(False), new_markdown_cell("The end.")]
    path = tmp_path / "lab.ipynb"
    notebooks.write(new_notebook(cells=cells), path)
    grades = [("written_stability", 1.5, 2, "Right idea; say *why* it is exact.")]
    nb = feedback_zip.feedback_notebook(path, grades, LAB)
    sources = [cell.source for cell in nb.cells]
    assert "| written_stability | 1.5 / 2 |" in sources[0]
    below = sources.index(cells[1].source) + 1
    assert (
        sources[below] == "**Comment on written_stability:**\n\nRight idea; say *why* it is exact."
    )
    assert sources[-1] == "The end."


def test_the_lms_feedback_notebook_has_the_comment_on_a_code_answer_below_it(tmp_path):
    answer = new_code_cell("def softmax(x):\n    return x.exp() / x.exp().sum(-1, keepdim=True)")
    answer.metadata.nbgrader = {"grade": False, "solution": True, "grade_id": "softmax"}
    cells = [answer, written_answer(False)]
    path = tmp_path / "lab.ipynb"
    notebooks.write(new_notebook(cells=cells), path)
    grades = [("written_stability", 1.5, 2, "Say why.")]
    comments = {"softmax": "Subtract the maximum first."}
    sources = [c.source for c in feedback_zip.feedback_notebook(path, grades, LAB, comments).cells]
    assert sources[sources.index(answer.source) + 1] == (
        "**Comment on softmax:**\n\nSubtract the maximum first."
    )
    assert sources[-1] == "**Comment on written_stability:**\n\nSay why."


def test_a_code_cell_too_long_to_highlight_is_shown_as_plain_text(feedback_config):
    huge = "CONSTANTS = [" + "1, " * (MAX_HIGHLIGHT_CHARACTERS // 3) + "]  # <b>&</b>\n"
    nb = new_notebook(cells=[new_code_cell("x = 1  # small"), new_code_cell(huge)])
    html = feedback_page(nb, feedback_config, to_grade=0)
    assert '<span class="n">x</span>' in html  # a small cell is highlighted
    assert "CONSTANTS = [1, 1, 1," in html and "# &lt;b&gt;&amp;&lt;/b&gt;" in html
    assert html.count('<span class="mi">1</span>') == 1  # the small cell's: the long one is plain
