"""A student's server: fetch, submit and feedback (nbgrader's Assignments), no formgrader."""

c = get_config()  # noqa: F821 - provided by Jupyter Server when it loads this file

c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
    # Validate lists each cell's findings too, as the grader will (utils/validate_findings.py).
    "nbgrader.server_extensions.validate_assignment": False,
    "utils.validate_findings": True,
}
