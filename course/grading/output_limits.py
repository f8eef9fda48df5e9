"""An autograde step: cut the outputs of a submission to a size the notebooks and feedback hold."""

from nbgrader.preprocessors import LimitOutput
from traitlets import Integer


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
