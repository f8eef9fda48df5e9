"""Where things live in the course directory."""

import re
from pathlib import Path

COURSE_ID = "attention-step-by-step"  # nbgrader's course id, and the course's folder on the hub
LAB_NAME = re.compile(r"^\d{2}_[a-z0-9_]+$")  # a lab's name: 01_softmax, 10_tiny_gpt

ROOT = Path(__file__).resolve().parents[2]  # course/coursedir/paths.py -> the repository
SOURCE = ROOT / "source"
RELEASE = ROOT / "release"
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
NOTATION = "00_notation.ipynb"  # the notation and glossary page beside the lectures
CONFIG = ROOT / "nbgrader_config.py"


def assignments(root=ROOT):
    """Names of the labs: the folders of source/ that hold a notebook, in order."""
    return sorted(p.name for p in (Path(root) / "source").iterdir() if any(p.glob("*.ipynb")))


def lab_filename(assignment):
    """File name of an assignment's lab notebook, e.g. 01_softmax_lab.ipynb."""
    return f"{assignment}_lab.ipynb"


def source_lab(assignment, root=ROOT):
    """Path of the instructor version of a lab: source/<assignment>/<assignment>_lab.ipynb."""
    return Path(root) / "source" / assignment / lab_filename(assignment)


def lecture_notebooks(root=ROOT):
    """Paths of the lecture notebooks, in order (not the notation page)."""
    found = (Path(root) / "notebooks").glob("[0-9][0-9]_*.ipynb")
    return sorted(path for path in found if path.name != NOTATION)


def default_gradebook_url(root=ROOT):
    """nbgrader's default database URL: SQLite's gradebook.db at the course root."""
    return f"sqlite:///{Path(root) / 'gradebook.db'}"


def submitted(root, student, assignment):
    """The folder nbgrader reads a student's collected submission of a lab from."""
    return Path(root) / "submitted" / student / assignment


def autograded(root, student, assignment):
    """The folder nbgrader writes a student's autograded lab to."""
    return Path(root) / "autograded" / student / assignment
