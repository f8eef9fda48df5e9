"""The steps of grading that nbgrader_config.py names, in the order they run on a submission.

`regrade` restores the test cells and keeps hand grades, `findings` lists what each student
cell uses, `judge` runs the notebook (test cells in the grader, against the kernel), `pages`
cleans what a page shows, `output_limits` cuts every output, `feedback` writes the feedback page
(with `mathml`'s math and `templates/`). Imports `course.coursedir`, `kernels` and `remote`.
"""
