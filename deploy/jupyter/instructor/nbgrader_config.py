"""nbgrader settings of the instructor: the course's own configuration, in their copy of it."""

import class_settings

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

course = class_settings.course_folder()
c.CourseDirectory.root = str(course)
if (course / "nbgrader_config.py").exists():  # the grading steps (course/grading/)
    load_subconfig(str(course / "nbgrader_config.py"))  # noqa: F821 - provided by traitlets
