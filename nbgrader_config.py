"""nbgrader configuration for Attention, Step by Step. Run nbgrader from the repository root."""

import os
from pathlib import Path

from course.coursedir import paths
from course.grading.preprocessors import mathml

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = paths.COURSE_ID
# The local workflow needs no exchange (make collect reads the LMS's export): an empty one in the
# course folder (exchange/, ignored by git) keeps the formgrader from warning that nbgrader's
# default one is missing. A class on JupyterHub (deploy/) names its own in COURSE_EXCHANGE.
if "COURSE_EXCHANGE" not in os.environ:
    EXCHANGE = Path(__file__).parent / "exchange"
    EXCHANGE.mkdir(exist_ok=True)
    c.Exchange.root = str(EXCHANGE)
# The formgrader's Manage Assignments page shows no dump of the loaded configuration (it holds
# values JSON cannot show, and each view warned so).
c.FormgradeExtension.debug = False
# Student versions go to release/, which is committed; the gradebook is local (gradebook.db).
c.CourseDirectory.release_directory = "release"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A cell that runs longer than this is stopped and its test scores zero; the rest still runs.
# (JudgeExecute is nbgrader's Execute with kernels forked from a process that imported torch.)
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True

# The steps of grading are nbgrader preprocessors, one module each in course/grading/preprocessors/.
# Autograde: test cells are restored from the gradebook (nbgrader's OverwriteCells, which here
# reports putting hidden tests back as information: restore_tests.py), and each student cell is read
# for findings (findings.py: imports outside the lab's modules, forbidden calls, ...), listed for
# you beside the grade. Every cell runs as written.
c.Autograde.sanitize_preprocessors = [
    # The formgrader's log window: no DEBUG lines.
    "course.grading.preprocessors.autograde_log.QuietCapture",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "course.grading.preprocessors.restore_tests.RestoreTestCells",
    "nbgrader.preprocessors.CheckCellMetadata",
    "course.grading.preprocessors.findings.ListFindings",
]
# Every test cell runs in the grader's process, never in the student's kernel (judge.py).
# Student markdown and outputs keep only what a page shows without running anything; the rest
# is shown as text (pages.py). Every output beyond these limits is cut, so a
# submission that prints megabytes cannot bloat the autograded notebooks or the feedback.
c.Autograde.autograde_preprocessors = [
    "course.grading.preprocessors.judge.JudgeExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "course.grading.preprocessors.pages.CleanSubmission",
    "course.grading.preprocessors.output_limits.LimitOutputSize",
    # The formgrader's Autograde keeps hand grades.
    "course.grading.preprocessors.regrade.KeepManualGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
    # The log (the formgrader's window): each failed test and each finding.
    "course.grading.preprocessors.autograde_log.ReportOutcome",
]
c.LimitOutputSize.max_lines = 1000
c.LimitOutputSize.max_traceback = 100
c.LimitOutputSize.max_characters = 100_000
c.LimitOutputSize.max_cell_characters = 2_000_000  # all of a cell's outputs, figures included
c.LimitOutputSize.max_notebook_characters = 20_000_000  # all of a notebook's outputs

# The pages that show a submission, the formgrader's and the feedback, clean and cut it again
# (a notebook autograded before these steps existed), and sanitize any HTML left. A long code
# cell is shown cut, saying where the whole is, and unhighlighted (pages.MAX_SHOWN_CODE_CHARACTERS,
# pages.MAX_HIGHLIGHT_CHARACTERS).
c.HTMLExporter.preprocessors = [
    "course.grading.preprocessors.pages.CutLongCode",
    "course.grading.preprocessors.pages.CleanSubmission",
    "course.grading.preprocessors.pages.ShowFindings",
    "course.grading.preprocessors.output_limits.LimitOutputSize",
]
c.HTMLExporter.sanitize_html = True
# Their math is MathML made on the server (mathml.py): it renders offline, and the pages
# load no MathJax (the course's templates come before nbgrader's).
c.HTMLExporter.filters = {
    "strip_files_prefix": "course.grading.preprocessors.mathml.strip_files_prefix_with_mathml",
    "clean_html": "course.grading.preprocessors.mathml.clean_html_keeping_mathml",
    "highlight_code": "course.grading.preprocessors.pages.BoundedHighlight2HTML",
}
c.HTMLExporter.extra_template_basedirs = mathml.TEMPLATE_BASEDIRS

# Feedback shows which hidden test failed and its message, never the hidden tests' code.
c.GenerateFeedback.exporter_class = "course.grading.preprocessors.feedback.FeedbackExporter"
# A written answer not graded yet shows "to be graded", never 0; long lines wrap.
c.GenerateFeedback.preprocessors = [
    "course.grading.preprocessors.feedback.GetGradesToGrade",
    "course.grading.preprocessors.feedback.WrapLongLines",
    "course.grading.preprocessors.feedback.HideHiddenTests",
]
