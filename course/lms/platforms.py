"""The learning-management systems (LMS) the course reads and writes files for: one record each.

Which LMS a file comes from is decided once (an export's file names in `course.lms.names`, a
gradebook's header here); from then on the code asks the LMS's record, never its name: its
gradebook's layout, the feedback zip it reads, how it writes a student's name. Adding an LMS
is adding a member. Imports nothing of the course.
"""

import re
from dataclasses import dataclass
from enum import StrEnum


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


CANVAS_GRADEBOOK = Gradebook(frozenset({"Student", "ID", "SIS User ID"}), "ID", "Student", None,
                             None, re.compile(r"^(.+)$"))  # fmt: skip
MOODLE_GRADEBOOK = Gradebook(frozenset({"Identifier", "Grade"}), "Identifier", "Full name",
                             "Grade", "Feedback comments", re.compile(r"(\d+)$"))  # fmt: skip


class Platform(StrEnum):
    """An LMS, by the name the course's records (the collect manifest) keep it under, with what
    the course knows of it: its own name, its gradebook CSV's layout (None when none is read),
    what its feedback zip holds (None: no zip), and whether it writes a student's name as
    "First Last"."""

    CANVAS = ("canvas", "Canvas", CANVAS_GRADEBOOK, Feedback.NOTEBOOK, False)
    MOODLE = ("moodle", "Moodle", MOODLE_GRADEBOOK, Feedback.PAGE, True)
    BLACKBOARD = ("blackboard", "Blackboard", None, None, False)

    def __new__(cls, name, label, gradebook, feedback, full_names):
        """A member whose value is `name`, with the LMS's record as attributes."""
        member = str.__new__(cls, name)
        member._value_ = name
        member.label, member.gradebook = label, gradebook
        member.feedback, member.full_names = feedback, full_names
        return member


def gradebook_platform(header):
    """The Platform whose gradebook CSV has this header; None when none has."""
    for platform in Platform:
        if platform.gradebook and platform.gradebook.marks <= set(header):
            return platform
    return None


def described(platforms):
    """The LMSs named in a report: "Canvas + Moodle", "no LMS" when none."""
    return " + ".join(Platform(name).label for name in sorted(platforms)) or "no LMS"
