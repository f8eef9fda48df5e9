"""The class on a shared machine: JupyterHub, the LTI launch, the exchange, setting a class up.

Loaded by path, not as a package: the hub's configuration puts deploy/ on `sys.path`, Jupyter
Server finds its extensions (`lti_lab`, `lti_grades_page`) and nbgrader its exchange
(`course_exchange`) by module name, and the modules import one another by bare name
(tests/deploy/test_deploy_imports.py checks which may import which). Of the course they import
only `course.coursedir` (paths, safe copies), `course.lms` (names, the launch record, the grades
sender) and the sandbox's `course.grading.kernels.cgroups` and `policy`: never the grader's
pool, queue or steps, the instructor's commands, the benches or `utils` (pyproject.toml's
import contracts).
"""
