"""Where things live in the course directory."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "source"
RELEASE = ROOT / "release"
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
CONFIG = ROOT / "nbgrader_config.py"


def assignments(root=ROOT):
    """Names of the labs: the folders of source/ that hold a notebook, in order."""
    return sorted(p.name for p in (Path(root) / "source").iterdir() if any(p.glob("*.ipynb")))


def lab_filename(assignment):
    """File name of an assignment's lab notebook, e.g. 01_softmax_lab.ipynb."""
    return f"{assignment}_lab.ipynb"


def lecture_notebooks(root=ROOT):
    """Paths of the lecture notebooks, in order."""
    return sorted((Path(root) / "notebooks").glob("*.ipynb"))
