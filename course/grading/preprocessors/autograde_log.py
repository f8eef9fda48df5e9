"""What nbgrader's log of an autograde says: the run's outcome for the instructor, no noise.

nbgrader captures the log of a run for its caller (the formgrader's log window after its
*Autograde* button, a grading worker's answer). Here:

- `QuietCapture`, run first, keeps that capture to INFO and above, and says "grading again" in
  place of nbgrader's warning that it removes the earlier autograded copy: a normal regrade;
- `ReportOutcome`, run after the notebook has run, lists each failed test with the first line
  of its message, and each finding about the student's cells, as the summary of `make
  autograde` does.
"""

import io
import logging

from nbgrader.preprocessors import NbGraderPreprocessor

from course.grading.preprocessors.findings import FINDINGS_KEY

REGRADE_WARNINGS = {  # nbgrader's warning when it grades again -> what it means here
    "[WARNING] Removing existing assignment: ": "[INFO] Grading again; replacing ",
    "[WARNING] Removing existing notebook: ": "[INFO] Grading again; replacing ",
}


class QuietCapture(NbGraderPreprocessor):
    """Keep nbgrader's capture of this run's log to INFO and above, from the start of the run."""

    def preprocess(self, nb, resources):
        """Raise the level of the log's captures; drop the DEBUG lines they already hold."""
        for handler in filter(is_capture, self.log.handlers):
            handler.setLevel(logging.INFO)
            rewrite_captured(handler.stream)
        return nb, resources


def is_capture(handler):
    """True for a handler that writes a log to a string (nbgrader's `capture_log`)."""
    return isinstance(handler, logging.StreamHandler) and isinstance(handler.stream, io.StringIO)


def rewrite_captured(stream):
    """Drop the DEBUG lines of nbgrader's capture `stream`, and reword a regrade's warnings."""
    kept = [reworded(line) for line in stream.getvalue().splitlines(keepends=True)
            if not line.startswith("[DEBUG]")]  # fmt: skip
    stream.seek(0)
    stream.truncate()
    stream.writelines(kept)


def reworded(line):
    """A captured line, with nbgrader's warning about grading again said as what it is."""
    for warning, said in REGRADE_WARNINGS.items():
        if line.startswith(warning):
            return said + line[len(warning) :]
    return line


class ReportOutcome(NbGraderPreprocessor):
    """Log each failed test (its first message line) and each finding, after the run."""

    def preprocess(self, nb, resources):
        """Write the outcome of the run into the log its caller shows."""
        failed = [failure_line(cell) for cell in nb.cells if failure_line(cell)]
        for line in failed:
            self.log.warning("Failed test %s", line)
        for finding in nb.metadata.get(FINDINGS_KEY) or []:
            self.log.warning("Finding: %s", finding)
        if not failed:
            self.log.info("Every test passed")
        return nb, resources


def failure_line(cell):
    """'<grade id>: <first line of its error>' for a test cell that failed, else ''."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if cell.get("cell_type") != "code" or not meta.get("grade") or meta.get("solution"):
        return ""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            message = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
            return f"{meta.get('grade_id', '?')}: {message.splitlines()[0][:300]}"
    return ""
