"""The labs and their catalogues of typical mistakes and of correct answers in other styles."""

import runpy
from dataclasses import dataclass
from pathlib import Path

from course.coursedir import paths

MISTAKES_DIR = Path(__file__).parent / "mistakes"
IDIOMATIC_DIR = Path(__file__).parent / "idiomatic"
ASSIGNMENTS = paths.assignments()


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer: `code` replaces the solution cell `cell`; `message` must be shown."""

    name: str
    cell: str
    code: str
    message: str


def with_replacements(code, *replacements):
    """`code` with each text `old` of the pairs (old, new) replaced by `new`; each old once."""
    for old, new in zip(replacements[::2], replacements[1::2], strict=True):
        if code.count(old) != 1:
            raise ValueError(f"{old!r} is not exactly once in the code")
        code = code.replace(old, new)
    return code


@dataclass(frozen=True)
class Variant:
    """A correct answer in another style: `code` replaces the solution cell `cell`."""

    name: str
    cell: str
    code: str


def catalogued(folder, assignment, listing):
    """The list `listing` of a lab's catalogue file in `folder`, or [] when it has none."""
    path = folder / f"{assignment}.py"
    return runpy.run_path(str(path))[listing] if path.exists() else []


def bases(assignment):
    """grade_id -> each correct answer that a lab's catalogued mistakes change ({} if none)."""
    return dict(catalogued(MISTAKES_DIR, assignment, "BASES"))


def mistakes(assignment):
    """The catalogued mistakes of a lab, or [] when it has no catalogue."""
    return catalogued(MISTAKES_DIR, assignment, "MISTAKES")


def idiomatic(assignment):
    """The catalogued idiomatic correct variants of a lab, or [] when it has none."""
    return catalogued(IDIOMATIC_DIR, assignment, "VARIANTS")
