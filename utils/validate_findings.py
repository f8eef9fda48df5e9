"""nbgrader's Validate, which also lists each cell's findings: a Jupyter server extension.

Validate runs the notebook and lists its failing tests, as nbgrader's own does. It then lists
each cell whose findings the grader will report to the instructor (`utils.review`), in the same
words as the note under the cell when it runs, so that nothing in a grade surprises the student.
No points depend on a finding; "Success!" shows only when no test fails and no cell has one.

Installed with `utils` (its configuration file turns nbgrader's own Validate handler off and
this one on); it needs nbgrader, as Validate does.
"""

import json
from pathlib import Path

from jupyter_server.utils import url_path_join
from nbgrader.server_extensions.validate_assignment import handlers
from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler

from utils.review import finding_note, notebook_findings

NOT_A_FAILURE = "Not a failed test, and no points depend on it.\n"  # the dialog does not wrap lines


class ValidateWithFindings(ValidateAssignmentHandler):
    """Validate a notebook as nbgrader does, then list the findings of its cells."""

    def validate_notebook(self, path):
        """nbgrader's answer, with a "failed" entry for each cell that has findings."""
        answer = super().validate_notebook(path)
        result = answer.get("value")
        if not answer.get("success") or not isinstance(result, dict):
            return answer
        if "type_changed" in result or "changed" in result:
            return answer  # nbgrader shows these alone; the findings come once they are fixed
        notebook = json.loads((Path(self.root_dir) / path).read_text(encoding="utf-8"))
        entries = [finding_entry(source, listed) for _, source, listed in
                   notebook_findings(notebook)]
        if entries:
            result["failed"] = [*result.get("failed", []), *entries]
        return answer


def finding_entry(source, listed):
    """What the Validate dialog shows for one cell with findings: its code, then the note."""
    note = NOT_A_FAILURE + finding_note(listed)
    return {"source": source.strip(), "error": escape(note), "raw_error": note}


def escape(text):
    """Text made safe to show as HTML (the dialog shows an error as HTML)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _jupyter_server_extension_points():
    """This module is a Jupyter server extension."""
    return [{"module": "utils.validate_findings"}]


def _load_jupyter_server_extension(server):
    """Serve Validate (and nbgrader's version check) with the findings of each cell."""
    web_app = server.web_app
    web_app.settings["root_dir"] = server.root_dir
    routes = [
        (pattern, ValidateWithFindings if handler is ValidateAssignmentHandler else handler)
        for pattern, handler in handlers.default_handlers
    ]
    base_url = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base_url, p), h) for p, h in routes])
