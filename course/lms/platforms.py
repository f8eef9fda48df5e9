"""The learning-management systems (LMS) the course reads and writes files for: one record each.

Which LMS a file comes from is decided once (an export's file names in `course.lms.names`, a
gradebook's header here); from then on the code asks the LMS's record, never its name: its
gradebook's layout, the feedback zip it reads, how it writes a student's name. Adding an LMS
is adding a member and a record. Imports nothing of the course.
"""

import re
from dataclasses import dataclass
from enum import StrEnum


class Platform(StrEnum):
    """An LMS, by the name the course's records (the collect manifest) keep it under."""

    CANVAS = "canvas"
    MOODLE = "moodle"
    BLACKBOARD = "blackboard"

    @property
    def label(self):
        """The LMS's own name: Canvas, Moodle, Blackboard."""
        return RECORDS[self].label

    @property
    def gradebook(self):
        """The layout of the gradebook CSV the LMS exports (a Gradebook), None when none is read."""
        return RECORDS[self].gradebook

    @property
    def feedback(self):
        """What the LMS's feedback zip holds for each student (a Feedback), None: no zip."""
        return RECORDS[self].feedback

    @property
    def full_names(self):
        """True when the LMS writes a student's name as "First Last" (False: one word, or none)."""
        return RECORDS[self].full_names


class Feedback(StrEnum):
    """What an LMS's feedback zip holds for each student."""

    NOTEBOOK = "the autograded notebook, under the name it was downloaded as"
    PAGE = "the feedback page, in the student's folder"


@dataclass(frozen=True)
class Gradebook:
    """How an LMS's gradebook CSV is laid out."""

    marks: frozenset  # the header's columns that tell this LMS's gradebook
    id_column: str  # the student's LMS id
    name_column: str  # the student's name, for reports
    grade_column: str | None  # the lab's grade; None: a column per assignment, found by title
    comment_column: str | None  # where the grader's comments go, None when nowhere
    id_pattern: re.Pattern  # the LMS id in an id cell: group 1 ("Participant 101" -> "101")

    def row_id(self, cells, index):
        """The LMS id of a row whose id is in column `index`; "" for rows of no student."""
        value = cells[index].strip() if index < len(cells) else ""
        match = self.id_pattern.search(value)
        return match.group(1) if match else ""


@dataclass(frozen=True)
class Record:
    """What the course knows of one LMS."""

    label: str
    gradebook: Gradebook | None
    feedback: Feedback | None
    full_names: bool


RECORDS = {
    Platform.CANVAS: Record(
        "Canvas",
        Gradebook(frozenset({"Student", "ID", "SIS User ID"}), "ID", "Student", None, None,
                  re.compile(r"^(.+)$")),  # fmt: skip
        Feedback.NOTEBOOK,
        full_names=False,
    ),
    Platform.MOODLE: Record(
        "Moodle",
        Gradebook(frozenset({"Identifier", "Grade"}), "Identifier", "Full name", "Grade",
                  "Feedback comments", re.compile(r"(\d+)$")),  # fmt: skip
        Feedback.PAGE,
        full_names=True,
    ),
    Platform.BLACKBOARD: Record("Blackboard", None, None, full_names=False),
}


def gradebook_platform(header):
    """The Platform whose gradebook CSV has this header; None when none has."""
    for platform in Platform:
        if platform.gradebook and platform.gradebook.marks <= set(header):
            return platform
    return None


def described(platforms):
    """The LMSs named in a report: "Canvas + Moodle", "no LMS" when none."""
    return " + ".join(Platform(name).label for name in sorted(platforms)) or "no LMS"
