"""The labs and their catalogues of typical mistakes (tests/mistakes/<assignment>.py)."""

import runpy
from pathlib import Path

from course.build import paths

MISTAKES_DIR = Path(__file__).parent / "mistakes"
ASSIGNMENTS = paths.assignments()


def mistakes(assignment):
    """The catalogued mistakes of a lab, or [] when it has no catalogue."""
    path = MISTAKES_DIR / f"{assignment}.py"
    return runpy.run_path(str(path))["MISTAKES"] if path.exists() else []
