"""The instructor's grading cycle, run from the repository root.

python -m course.instructor autograde [ASSIGNMENT]   grade submitted/ (every lab by default)
python -m course.instructor feedback [ASSIGNMENT]    write feedback/ HTML for each student
python -m course.instructor grades                   write grades.csv, one row per student
"""

import argparse
import csv
import statistics
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from course import paths
from course.release import generate_release, nbgrader

GRADES_CSV = "grades.csv"


def gradebook(root=paths.ROOT):
    """Open the course's SQLite gradebook (gradebook.db at the course root)."""
    return Gradebook(f"sqlite:///{Path(root) / 'gradebook.db'}")


def submitted_students(assignment, root=paths.ROOT):
    """Students with a submission of `assignment` in submitted/."""
    return sorted(
        p.parent.name for p in (Path(root) / "submitted").glob(f"*/{assignment}") if p.is_dir()
    )


def ensure_in_gradebook(assignment, root=paths.ROOT):
    """Record the lab's notebooks and tests in the gradebook if they are not there yet."""
    with gradebook(root) as book:
        try:
            known = bool(book.find_assignment(assignment).notebooks)
        except MissingEntry:
            known = False
    if not known:
        generate_release(root, assignment)


def autograde(assignment, root=paths.ROOT):
    """Autograde every submission of one lab; return a one-line summary."""
    students = submitted_students(assignment, root)
    if not students:
        return f"{assignment}: no submissions in submitted/"
    ensure_in_gradebook(assignment, root)
    result = nbgrader(["autograde", assignment], root, check=False)
    failures = [line for line in result.stderr.splitlines() if "| ERROR]" in line]
    return summary(assignment, root, failures)


def summary(assignment, root, failures):
    """Students graded, mean autograded score and number of errors for one lab."""
    with gradebook(root) as book:
        maximum = book.find_assignment(assignment).max_score
        scores = [s.score for s in book.assignment_submissions(assignment)]
    mean = statistics.mean(scores) if scores else 0.0
    return (
        f"{assignment}: {len(scores)} students graded, mean score {mean:.2f} / {maximum:g}, "
        f"{len(failures)} errors reported by nbgrader"
    )


def feedback(assignment, root=paths.ROOT):
    """Generate the feedback HTML of one lab for every graded student."""
    nbgrader(["generate_feedback", assignment, "--force"], root)
    return f"{assignment}: feedback written to feedback/"


def grades(root=paths.ROOT, output=GRADES_CSV):
    """Write a CSV with one row per student and one column per lab (total score)."""
    labs = paths.assignments(root)
    with gradebook(root) as book:
        rows = []
        for student in sorted(book.students, key=lambda s: s.id):
            row = {"student": student.id}
            for lab in labs:
                try:
                    row[lab] = book.find_submission(lab, student.id).score
                except MissingEntry:
                    row[lab] = ""
            rows.append(row)
    with open(Path(root) / output, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["student", *labs])
        writer.writeheader()
        writer.writerows(rows)
    return f"{len(rows)} students written to {output}"


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["autograde", "feedback", "grades"])
    parser.add_argument("assignment", nargs="?", default="", help="one lab (default: every lab)")
    args = parser.parse_args(argv)
    if args.command == "grades":
        print(grades())
        return
    for assignment in [args.assignment] if args.assignment else paths.assignments():
        print(autograde(assignment) if args.command == "autograde" else feedback(assignment))


if __name__ == "__main__":
    main()
