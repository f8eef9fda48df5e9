"""nbgrader preprocessor for the feedback students see: hidden tests show results, not code."""

from nbgrader.preprocessors import NbGraderPreprocessor

from course.build.notebooks import HIDDEN_TESTS

HIDDEN_PLACEHOLDER = "# (hidden tests: the code is not shown; their result is below)\n"


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
