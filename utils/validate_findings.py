"""nbgrader's Validate, which also lists each cell's findings: a Jupyter server extension.

Validate runs the notebook and lists its failing tests, as nbgrader's own does. It then lists
each cell whose findings the grader will report to the instructor (`utils.review`), in the same
words as the note under the cell when it runs, so that nothing in a grade surprises the student.
No points depend on a finding; "Success!" shows only when no test fails and no cell has one.
Each entry shows its message first (a failed check's message and hint, or the note), wrapped
to the dialog's width, then the cell it is about.

Installed with `utils` (its configuration file turns nbgrader's own Validate handler off and
this one on); it needs nbgrader, as Validate does.
"""

import json
import re
import textwrap
from pathlib import Path

from jupyter_server.utils import url_path_join
from nbgrader.server_extensions.validate_assignment import handlers
from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler

from utils.review import finding_note, notebook_findings

NOT_A_FAILURE = "Not a failed test, and no points depend on it.\n"
WIDTH = 90  # characters a line of the dialog shows: it does not wrap lines
ANSI_CODE = re.compile(r"\x1b\[[0-9;]*m")
TRACEBACK_START = ("---", "Traceback")  # an error shown in full, its message on its last line


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
        failed = [message_first(entry["raw_error"], entry["source"])
                  for entry in result.get("failed", [])]  # fmt: skip
        notes = [message_first(NOT_A_FAILURE + finding_note(listed), source)
                 for _, source, listed in notebook_findings(notebook)]  # fmt: skip
        if failed or notes:
            result["failed"] = failed + notes
        return answer


def message_first(message, source):
    """A dialog entry that shows `message` (wrapped, in plain text) first, then the cell's code."""
    text = "\n".join(wrapped(message_lines(ANSI_CODE.sub("", message))))
    cell = escape(f"In this cell:\n\n{source.strip()}")
    return {"source": text, "error": cell, "raw_error": text}


def message_lines(text):
    """The lines of an error or a note, an error's message first when it is a whole traceback."""
    lines = text.strip().splitlines() or [""]
    if lines[0].startswith(TRACEBACK_START):
        return [lines[-1], "", *lines[:-1]]
    return lines


def wrapped(lines):
    """Each line cut to at most WIDTH characters, at spaces where it can be."""
    return [
        part
        for line in lines
        for part in (textwrap.wrap(line, WIDTH, subsequent_indent="  ", break_long_words=True,
                                   break_on_hyphens=False) or [""])
    ]  # fmt: skip


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
    # jupyter_server's kernel websockets wait three ping intervals for a pong by default, which
    # tornado 6.5 refuses with a warning at the first notebook opened: one interval, as tornado's.
    web_app.settings.setdefault("ws_ping_timeout", web_app.settings.get("ws_ping_interval", 30000))
    routes = [
        (pattern, ValidateWithFindings if handler is ValidateAssignmentHandler else handler)
        for pattern, handler in handlers.default_handlers
    ]
    base_url = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base_url, p), h) for p, h in routes])
