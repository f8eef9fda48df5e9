"""Generate the student versions (release/) and executed solutions (solutions/) from source/.

Usage, from the repository root: ``python -m course.coursedir.release [ASSIGNMENT ...]``
"""

import argparse
from pathlib import Path

from course.coursedir import notebooks, paths
from course.coursedir.nbgrader_run import nbgrader


def generate_release(course_root, assignment, release_directory=None):
    """Write release/<assignment>/ with nbgrader (and register the assignment in the gradebook).

    With `release_directory`, the student version goes there instead of release/.
    """
    args = ["generate_assignment", assignment, "--force"]
    if release_directory is not None:
        args.append(f"--CourseDirectory.release_directory={release_directory}")
    result = nbgrader(args, course_root, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment {assignment} failed:\n{result.stderr}")


def solution_notebook(source_path):
    """Solution version of a source notebook: no delimiters, hidden tests, outputs or lab policy.

    (Without its policy, a lab's `show_findings` shows nothing: a solution's cells, tests
    included, are the instructor's.)
    """
    nb = notebooks.read(source_path)
    for cell in nb.cells:
        cell.source = notebooks.remove_hidden_tests(notebooks.strip_solution_markers(cell.source))
        cell.metadata.pop("nbgrader", None)
    nb.metadata.pop("nbgrader", None)
    nb.metadata.pop("course", None)
    return notebooks.clear_outputs(nb)


def generate_solution(course_root, assignment):
    """Write solutions/<assignment>/<lab>.ipynb, executed with its outputs stored."""
    filename = paths.lab_filename(assignment)
    target_dir = Path(course_root) / "solutions" / assignment
    target_dir.mkdir(parents=True, exist_ok=True)
    nb = solution_notebook(paths.source_lab(assignment, course_root))
    notebooks.write(nb, target_dir / filename)  # what its cells find beside them as they run
    notebooks.execute(nb, cwd=target_dir)
    notebooks.write(nb, target_dir / filename)


def build(course_root, assignments=None):
    """Generate release/ and solutions/ for the given assignments (all by default)."""
    for assignment in assignments or paths.assignments(course_root):
        generate_release(course_root, assignment)
        generate_solution(course_root, assignment)


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", help="assignment names (default: all)")
    args = parser.parse_args(argv)
    build(paths.ROOT, args.assignments)
    for assignment in args.assignments or paths.assignments():
        print(f"released {assignment}")


if __name__ == "__main__":
    main()
