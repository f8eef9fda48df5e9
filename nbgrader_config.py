"""nbgrader configuration for Attention, Step by Step. Run nbgrader from the repository root."""

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "attention-step-by-step"
# Student versions go to release/, which is committed; the gradebook is local (gradebook.db).
c.CourseDirectory.release_directory = "release"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A cell that runs longer than this is stopped and its test scores zero.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
