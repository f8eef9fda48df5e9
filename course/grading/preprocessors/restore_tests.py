"""Test cells put back as the instructor wrote them: hidden tests restored are news, not alarms.

nbgrader's OverwriteCells restores every locked cell from the gradebook and warns that a test
cell's checksum "has changed!" whenever it puts its hidden tests back, which it does for every
submission (the student's copy never had them). `RestoreTestCells` says that as information, and
warns only about a cell the student changed.
"""

from nbgrader.preprocessors import OverwriteCells

from course.coursedir.notebooks import remove_hidden_tests


class RestoreTestCells(OverwriteCells):
    """nbgrader's OverwriteCells: hidden tests put back are news, a changed cell a warning."""

    def preprocess_cell(self, cell, resources, index):
        """Restore one cell as the instructor wrote it; remember what the student had in it."""
        self.submitted_source = cell.source
        return super().preprocess_cell(cell, resources, index)

    def report_change(self, name, attr, old, new):
        """Report a locked cell given back its hidden tests as information; any other change."""
        if attr != "checksum":
            super().report_change(name, attr, old, new)
            return
        source = self.gradebook.find_source_cell(name, self.notebook_id, self.assignment_id).source
        if remove_hidden_tests(source).strip() == self.submitted_source.strip():
            self.log.info("Restored the hidden tests of cell %s", name)
        else:
            self.log.warning("Cell %s was changed by the student; restored as released", name)
