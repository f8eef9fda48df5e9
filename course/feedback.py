"""nbgrader preprocessors for autograded notebooks and the feedback students see."""

from nbgrader.preprocessors import LimitOutput, NbGraderPreprocessor
from traitlets import Integer

from course.notebooks import HIDDEN_TESTS

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


class LimitOutputSize(LimitOutput):
    """nbgrader's line limit, plus a limit on the characters of each text output."""

    max_characters = Integer(100_000, help="Longest text output kept, in characters").tag(
        config=True
    )

    def preprocess_cell(self, cell, resources, index):
        """Cut the outputs of one cell to the line and character limits."""
        cell, resources = super().preprocess_cell(cell, resources, index)
        for output in cell.get("outputs", []):
            if output.output_type == "stream" and len(output.text) > self.max_characters:
                cut = len(output.text) - self.max_characters
                output.text = output.text[: self.max_characters] + f"\n... ({cut} characters cut)\n"
        return cell, resources
