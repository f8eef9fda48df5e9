"""Collect submissions downloaded from a learning-management system into submitted/.

Each student's zip holds files named ``<anything>_<student>_attempt_<time>_<file>.ipynb`` (the
Blackboard/Moodle pattern), e.g. ``lab1_ada_attempt_2026-10-01-14-30-05_01_softmax_lab.ipynb``.
Put the zips in ``downloaded/<assignment>/archive/`` and run ``make collect ASSIGNMENT=...``.
"""

import re
from pathlib import Path

from nbgrader.plugins import FileNameCollectorPlugin

SUBMISSION_FILE = (
    r"^(?P<anything>.*?)_(?P<student_id>[A-Za-z0-9.\-]+)_attempt_"
    r"(?P<timestamp>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})_(?P<file_id>[^/]+\.ipynb)$"
)
ATTEMPT_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})-(\d{2})-(\d{2})-(\d{2})")


def parse_submission_name(filename):
    """(student_id, timestamp, file_id) of a submission file name, or None if unreadable."""
    match = re.match(SUBMISSION_FILE, Path(filename).name)
    if not match:
        return None
    timestamp = ATTEMPT_TIME.sub(r"\1 \2:\3:\4", match["timestamp"])
    return match["student_id"], timestamp, match["file_id"]


class CourseCollector(FileNameCollectorPlugin):
    """nbgrader collector for the course's file-name rule, with a readable timestamp."""

    def collect(self, submitted_file):
        """Student id, file id and timestamp of one extracted file; None when unreadable."""
        if Path(submitted_file).suffix not in self.valid_ext:
            return None
        parsed = parse_submission_name(submitted_file)
        if parsed is None:
            self.log.error(
                "Cannot read a student id from %s: expected "
                "<anything>_<student>_attempt_<YYYY-MM-DD-hh-mm-ss>_<file>.ipynb",
                submitted_file,
            )
            return None
        student_id, timestamp, file_id = parsed
        return {"student_id": student_id, "timestamp": timestamp, "file_id": file_id}


def unreadable_files(extracted_directory):
    """Notebook files under `extracted_directory` whose names give no student id."""
    return sorted(
        str(path)
        for path in Path(extracted_directory).rglob("*.ipynb")
        if parse_submission_name(path.name) is None
    )
