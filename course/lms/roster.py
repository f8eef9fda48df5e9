"""The optional roster.csv: which student of the course each LMS account is."""

import csv
from pathlib import Path

from course.lms.names import simplify
from course.lms.platforms import Platform


def read_roster(path):
    """Rows of roster.csv (student_id, first_name, last_name, lms_id), or [] without one."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8-sig") as handle:
        rows = [
            {key.strip(): (value or "").strip() for key, value in row.items() if key}
            for row in csv.DictReader(handle)
        ]
    missing = {"student_id", "first_name", "last_name", "lms_id"} - set(rows[0] if rows else {})
    if rows and missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    return [row for row in rows if row["student_id"]]


def roster_entry(roster, download):
    """The roster row of a download: by LMS id, else by a name that only one row has."""
    by_id = [row for row in roster if row["lms_id"] and row["lms_id"] == download.lms_id]
    if by_id:
        return by_id[0]
    wanted = simplify(download.name)
    if not wanted:
        return None
    by_name = [
        row
        for row in roster
        if wanted
        in {
            simplify(f"{row['first_name']} {row['last_name']}"),
            simplify(f"{row['last_name']} {row['first_name']}"),
        }
    ]
    return by_name[0] if len(by_name) == 1 else None


def split_name(download):
    """(first name, last name) for the gradebook, from what the LMS wrote.

    A name the LMS writes as one word (Canvas's "lovelaceada") is kept whole as the last name,
    with an empty first name: the formgrader shows "lovelaceada, ", never "lovelaceada, None".
    """
    if Platform(download.lms).full_names and " " in download.name:
        first, last = download.name.split(" ", 1)
        return first, last
    return "", download.name or download.lms_id
