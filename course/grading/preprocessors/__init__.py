"""The steps of grading that nbgrader_config.py names, in the order they run on a submission.

`autograde_log` keeps the run's log to what the instructor needs, `restore_tests` restores the
test cells, `findings` lists what each student cell uses, `judge` runs the notebook (test cells
in the grader, against the kernel), `pages` cleans what a page shows, `output_limits` cuts every
output, `regrade` keeps hand grades, and `autograde_log` reports each failed test and finding;
`feedback` writes the feedback page (with `mathml`'s math and `templates/`); `execute` is the
base of `judge`, nbgrader's Execute with forked, sandboxed kernels. Imports `course.coursedir`,
`channels`, `kernels` and `remote`.
"""
