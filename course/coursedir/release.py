"""Generate the student versions (release/) and executed solutions (solutions/) from source/.

Usage, from the repository root: ``python -m course.coursedir.release [--force] [ASSIGNMENT ...]``

A lab in release/ that was run or edited since it was generated (someone's work) is not
overwritten: the run stops and names it, unless --force is given, and then says what it replaced.
"""

import argparse
import sys
from pathlib import Path

from nbgrader.utils import compute_checksum

from course.coursedir import notebooks, paths
from course.coursedir.nbgrader_run import nbgrader


def changes_in_released_lab(path):
    """How the released lab at `path` differs from what nbgrader wrote: [reason, ...], [] if not.

    nbgrader gives every cell it writes a checksum, and writes no output and no new code cell.
    """
    if not Path(path).exists():
        return []
    changes = set()
    for cell in notebooks.read(path).cells:
        meta = notebooks.nbgrader_meta(cell)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count")):
            changes.add("it was run (its cells have outputs)")
        if "checksum" in meta and compute_checksum(cell) != meta["checksum"]:
            changes.add(f"its cell {meta.get('grade_id', '?')} was edited")
        elif cell.cell_type == "code" and not meta:
            changes.add("a code cell was added")
    return sorted(changes)


def changed_labs(course_root, assignments):
    """{released lab's path: its changes} of the assignments whose released lab was changed."""
    found = {}
    for assignment in assignments:
        path = Path(course_root) / "release" / assignment / paths.lab_filename(assignment)
        if changes := changes_in_released_lab(path):
            found[path] = changes
    return found


def changed_labs_text(changed):
    """One line per changed lab: its path and how it changed."""
    return "\n".join(f"  {path}: {'; '.join(changes)}" for path, changes in changed.items())


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


class ChangedLabError(RuntimeError):
    """A released lab holds changes that a new release would overwrite."""


def build(course_root, assignments=None, force=False):
    """Generate release/ and solutions/ for the given assignments (all by default).

    ChangedLabError, before anything is written, if a released lab was run or edited, unless
    `force`; returns {path: changes} of the changed labs it overwrote.
    """
    assignments = assignments or paths.assignments(course_root)
    changed = changed_labs(course_root, assignments)
    if changed and not force:
        raise ChangedLabError(
            "these released labs were run or edited since they were generated; a release would "
            f"overwrite them:\n{changed_labs_text(changed)}\nCopy the work elsewhere (students "
            "work in the student edition, make edition), or release again with --force "
            "(make release FORCE=1)."
        )
    for assignment in assignments:
        generate_release(course_root, assignment)
        generate_solution(course_root, assignment)
    return changed


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", help="assignment names (default: all)")
    parser.add_argument("--force", action="store_true",
                        help="overwrite released labs that were run or edited")
    args = parser.parse_args(argv)
    try:
        overwritten = build(paths.ROOT, args.assignments, force=args.force)
    except ChangedLabError as error:
        sys.exit(f"make release: {error}")
    if overwritten:
        print(f"overwrote these run or edited labs (--force):\n{changed_labs_text(overwritten)}")
    for assignment in args.assignments or paths.assignments():
        print(f"released {assignment}")


if __name__ == "__main__":
    main()
