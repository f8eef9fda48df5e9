"""Build synthetic submissions and autograde them in a scratch copy of the course.

The tests use this to prove that the autograder gives full marks to the solution, zero to the
blank release and partial marks, with a targeted message, to each catalogued mistake; the
benchmarks, to time a lab's solution and a class's autograde.
"""

import shutil
from pathlib import Path

from course.coursedir import notebooks, paths
from course.coursedir.nbgrader_run import nbgrader
from course.coursedir.release import generate_release
from utils.bindings import defined_names


def solution_cells(assignment, root=paths.ROOT, cell_types=("code", "markdown")):
    """Map grade_id -> instructor answer (delimiters removed) for every solution cell."""
    nb = notebooks.read(paths.source_lab(assignment, root))
    return {
        notebooks.nbgrader_meta(cell)["grade_id"]: notebooks.strip_solution_markers(cell.source)
        for cell in nb.cells
        if notebooks.is_solution(cell) and cell.cell_type in cell_types
    }


def cell_source(assignment, grade_id, root=paths.ROOT):
    """The source of the cell `grade_id` in a lab's instructor version."""
    cells = notebooks.read(paths.source_lab(assignment, root)).cells
    return next(c.source for c in cells if notebooks.nbgrader_meta(c).get("grade_id") == grade_id)


def setup_imports(assignment, root=paths.ROOT):
    """The import statements of a lab's setup cell, as source code (its seeding left out)."""
    return notebooks.import_statements(cell_source(assignment, "setup", root))


def load_solution(assignment, root=paths.ROOT):
    """A fresh namespace in which a lab's setup imports and every solution code cell that
    defines a function or class have run (an ungraded cell that only uses them is left out)."""
    namespace = {"__name__": f"{assignment}_solution"}
    exec(
        compile(setup_imports(assignment, root), f"<{assignment} setup imports>", "exec"), namespace
    )
    for grade_id, source in solution_cells(assignment, root, cell_types=("code",)).items():
        if defined_names(source):
            exec(compile(source, f"<{assignment} solution cell {grade_id}>", "exec"), namespace)
    return namespace


def fill(release_nb, answers):
    """A copy of the release notebook with the given solution cells replaced by `answers`."""
    nb = notebooks.read_copy(release_nb)
    unknown = set(answers) - {notebooks.nbgrader_meta(c).get("grade_id") for c in nb.cells}
    if unknown:
        raise ValueError(f"no solution cell with grade_id {sorted(unknown)}")
    for cell in nb.cells:
        grade_id = notebooks.nbgrader_meta(cell).get("grade_id")
        if notebooks.is_solution(cell) and grade_id in answers:
            cell.source = answers[grade_id]
    return nb


def scratch_course(directory, assignments, config_lines=()):
    """Copy the configuration (plus `config_lines`) and the given sources, and release them."""
    directory = Path(directory)
    shutil.copy(paths.CONFIG, directory / "nbgrader_config.py")
    if config_lines:
        with open(directory / "nbgrader_config.py", "a") as config:
            config.write("\n" + "\n".join(config_lines) + "\n")
    for assignment in assignments:
        shutil.copytree(paths.SOURCE / assignment, directory / "source" / assignment)
        generate_release(directory, assignment)
    return directory


def submit(course_root, assignment, student, nb, filename=None):
    """Place a notebook where nbgrader expects a collected submission."""
    folder = paths.submitted(course_root, student, assignment)
    notebooks.write(nb, folder / (filename or paths.lab_filename(assignment)))


def autograde_scratch(course_root, assignment):
    """Autograde every submission of `assignment` in `course_root`; return nbgrader's log."""
    result = nbgrader(["autograde", assignment, "--force"], course_root, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader autograde {assignment} failed:\n{result.stderr[-5000:]}")
    return result.stderr

