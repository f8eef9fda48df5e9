"""The feedback students see: hidden tests show results, not code; no script from a CDN.

`GetGradesToGrade`, `WrapLongLines` and `HideHiddenTests` are the feedback's preprocessors.
`FeedbackExporter` writes the feedback HTML (templates/feedback.html.j2): a written answer not
graded yet shows "to be graded", never a score of 0, and so does the total. It loads no script:
its math is MathML made as the page is written (`mathml`), drawn offline.
"""

from pathlib import Path

from jinja2 import FileSystemLoader
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import GetGrades, NbGraderPreprocessor
from traitlets import default

from course.coursedir.notebooks import HIDDEN_TESTS, nbgrader_meta
from course.grading.preprocessors.pages import bounded_highlight

HIDDEN_PLACEHOLDER = "# (hidden tests: the code is not shown; {result})\n"
HIDDEN_RESULTS = {
    "failed": "the error it raised is below",
    "passed": "they passed",
    "not run": "the cell did not run",
}
TEMPLATES = Path(__file__).parent / "templates"  # feedback.html.j2, the feedback page
WRAP_CSS = """
div.output_area pre, div.input_area pre {
  white-space: pre-wrap;
  word-break: normal;
  overflow-wrap: anywhere;
}
"""


def hidden_tests_result(cell):
    """ "failed", "passed" or "not run": what a test cell's outputs say of its tests."""
    if any(output.output_type == "error" for output in cell.get("outputs", [])):
        return "failed"
    return "passed" if cell.get("execution_count") else "not run"


class GetGradesToGrade(GetGrades):
    """nbgrader's GetGrades, which also marks each answer still to grade by hand (to_grade)."""

    def preprocess(self, nb, resources):
        """Scores and comments from the gradebook; resources' nbgrader.to_grade counts answers."""
        nb, resources = super().preprocess(nb, resources)
        marked = [nbgrader_meta(cell).get("to_grade", False) for cell in nb.cells]
        resources["nbgrader"]["to_grade"] = sum(marked)
        return nb, resources

    def _get_score(self, cell, resources):
        """The cell's score, its maximum, and whether it waits for hand grading."""
        grade = self.gradebook.find_grade(
            cell.metadata.nbgrader["grade_id"],
            self.notebook_id,
            self.assignment_id,
            self.student_id,
        )
        cell.metadata.nbgrader["score"] = grade.score
        cell.metadata.nbgrader["points"] = grade.max_score
        cell.metadata.nbgrader["to_grade"] = bool(grade.needs_manual_grade)


class WrapLongLines(CSSHTMLHeaderPreprocessor):
    """The page's CSS, plus wrapping of long lines of code and outputs (no sideways scrolling)."""

    @default("enabled")
    def _enabled_default(self):
        return True  # nbgrader runs only the preprocessors enabled by default or by configuration

    def preprocess(self, nb, resources):
        """nbconvert's CSS for the page, then the course's."""
        nb, resources = super().preprocess(nb, resources)
        resources["inlining"]["css"].append(WRAP_CSS)
        return nb, resources


class HideHiddenTests(NbGraderPreprocessor):
    """Replace hidden-test code with a placeholder; keep the error message and the score.

    A traceback quotes the lines around the failure, so an error's traceback is reduced to
    its last line (the exception and its message).
    """

    def preprocess_cell(self, cell, resources, index):
        """Hide the hidden-test code of one cell."""
        if cell.cell_type == "code" and "BEGIN HIDDEN TESTS" in cell.source:
            result = HIDDEN_RESULTS[hidden_tests_result(cell)]
            placeholder = HIDDEN_PLACEHOLDER.format(result=result)
            cell.source = HIDDEN_TESTS.sub(lambda _: placeholder, cell.source)
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback page, with answers to grade shown as such, without MathJax."""

    @default("extra_loaders")
    def _extra_loaders_default(self):
        return [FileSystemLoader(str(TEMPLATES))]

    @default("template_file")
    def _template_file_default(self):
        return "feedback.html.j2"

    def from_notebook_node(self, nb, resources=None, **kw):
        """The page, where a code cell too long to highlight is shown as plain text."""
        configured = self.filters
        self.filters = {**configured, "highlight_code": bounded_highlight(self, nb)}
        try:
            return super().from_notebook_node(nb, resources, **kw)
        finally:
            self.filters = configured
