"""The feedback students see: hidden tests show results, not code; no script from a CDN.

`HideHiddenTests` is an nbgrader preprocessor. `FeedbackExporter` writes the feedback HTML
without MathJax, whose script would come from a CDN: math shows as its TeX source.
"""

from pathlib import Path

from jinja2 import FileSystemLoader
from nbconvert.exporters import HTMLExporter
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import default

from course.build.notebooks import HIDDEN_TESTS

HIDDEN_PLACEHOLDER = "# (hidden tests: the code is not shown; their result is below)\n"
TEMPLATES = Path(__file__).parent / "templates"  # a MathJax macro that loads nothing


class HideHiddenTests(NbGraderPreprocessor):
    """Replace hidden-test code with a placeholder; keep the error message and the score.

    A traceback quotes the lines around the failure, so an error's traceback is reduced to
    its last line (the exception and its message).
    """

    def preprocess_cell(self, cell, resources, index):
        """Hide the hidden-test code of one cell."""
        if cell.cell_type == "code" and "BEGIN HIDDEN TESTS" in cell.source:
            cell.source = HIDDEN_TESTS.sub(HIDDEN_PLACEHOLDER, cell.source)
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback page without MathJax."""

    @default("extra_loaders")
    def _extra_loaders_default(self):
        return [FileSystemLoader(str(TEMPLATES))]
