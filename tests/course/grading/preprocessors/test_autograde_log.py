"""The log of an autograde: INFO and above, a regrade said as one, each failure and finding."""

import io
import logging
from types import SimpleNamespace

from nbformat.v4 import new_code_cell, new_notebook, new_output

from course.grading.preprocessors.autograde_log import QuietCapture, ReportOutcome
from course.grading.preprocessors.findings import FINDINGS_KEY


def captured(steps):
    """What a capture of nbgrader's log holds after `steps(log)` ran."""
    log = logging.getLogger("course.test_autograde_log")
    log.setLevel(logging.DEBUG)
    capture = logging.StreamHandler(io.StringIO())
    capture.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    log.addHandler(capture)
    try:
        steps(log)
    finally:
        log.removeHandler(capture)
    return capture.stream.getvalue()


def test_the_captured_log_keeps_info_and_above():
    def steps(log):
        log.debug("Student: ada")
        log.info("Sanitizing")
        QuietCapture(log=log).preprocess(SimpleNamespace(cells=[]), {})
        log.debug("msg_type: status")
        log.warning("The kernel did not answer")

    assert captured(steps) == "[INFO] Sanitizing\n[WARNING] The kernel did not answer\n"


def test_grading_again_is_said_as_information():
    def steps(log):
        log.warning("Removing existing assignment: autograded/ada/01_softmax")
        QuietCapture(log=log).preprocess(SimpleNamespace(cells=[]), {})

    assert captured(steps) == "[INFO] Grading again; replacing autograded/ada/01_softmax\n"


def test_the_log_lists_each_failed_test_and_finding():
    failed = new_code_cell("check_softmax(softmax)", outputs=[new_output(
        "error", ename="AssertionError", evalue="rows do not sum to 1 along dim=-1\nHint: ...",
        traceback=[])])  # fmt: skip
    failed.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "test_softmax"}
    passed = new_code_cell("check(1)")
    passed.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "test_other"}
    nb = new_notebook(cells=[failed, passed])
    nb.metadata[FINDINGS_KEY] = ["cell softmax, line 2: it imports os"]

    def steps(log):
        ReportOutcome(log=log).preprocess(nb, {})

    assert captured(steps) == (
        "[WARNING] Failed test test_softmax: AssertionError: rows do not sum to 1 along dim=-1\n"
        "[WARNING] Finding: cell softmax, line 2: it imports os\n"
    )
