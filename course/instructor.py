"""The instructor's grading cycle, run from the repository root.

python -m course.instructor autograde [ASSIGNMENT]   grade submitted/ (every lab by default)
python -m course.instructor feedback [ASSIGNMENT]    write feedback/ HTML for each student
python -m course.instructor grades                   write grades.csv, one row per student
"""

import argparse
import csv
import shutil
import statistics
import sys
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from course import notebooks, paths
from course.collect import unreadable_files
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


def discard_unfinished(assignment, students, root=paths.ROOT):
    """Remove autograded folders that a stopped run left unexecuted or without their notebook.

    nbgrader writes the sanitized notebook first and the executed one at the end, and skips a
    student whose folder exists: a folder left by a killed run would never be graded.
    """
    notebook = paths.lab_filename(assignment)
    for student in students:
        folder = Path(root) / "autograded" / student / assignment
        if folder.is_dir() and not executed(folder / notebook):
            shutil.rmtree(folder)


def executed(path):
    """True when the notebook at `path` exists and was executed."""
    if not path.exists():
        return False
    try:
        nb = notebooks.read(path)
    except Exception:  # noqa: BLE001 - a half-written file counts as not executed
        return False
    return any(cell.get("execution_count") for cell in nb.cells if cell.cell_type == "code")


def autograde(assignment, root=paths.ROOT):
    """Autograde every new or unfinished submission of one lab; return (ok, summary)."""
    students = submitted_students(assignment, root)
    if not students:
        return True, f"{assignment}: no submissions in submitted/"
    ensure_in_gradebook(assignment, root)
    discard_unfinished(assignment, students, root)
    result = nbgrader(["autograde", assignment], root, check=False)
    lines = [summary(assignment, students, root)]
    notebook = paths.lab_filename(assignment)
    for student in students:
        folder = Path(root) / "submitted" / student / assignment
        if not (folder / notebook).exists():
            found = ", ".join(sorted(p.name for p in folder.glob("*.ipynb"))) or "no notebook"
            lines.append(f"  {student}: not graded, no {notebook} in {folder} (found: {found})")
        elif not executed(Path(root) / "autograded" / student / assignment / notebook):
            lines.append(
                f"  {student}: not graded, the notebook could not be run to the end "
                "(the kernel died or nbgrader failed: see its log below); scores 0"
            )
    if len(lines) > 1:
        errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
        lines.extend(["nbgrader errors:", *errors[-20:]])
    return result.returncode == 0 and len(lines) == 1, "\n".join(lines)


def summary(assignment, students, root):
    """Students graded and their mean score for one lab."""
    notebook = paths.lab_filename(assignment)
    graded = [
        s for s in students if (Path(root) / "autograded" / s / assignment / notebook).exists()
    ]
    with gradebook(root) as book:
        maximum = book.find_assignment(assignment).max_score
        scores = [book.find_submission(assignment, s).score for s in graded]
    mean = statistics.mean(scores) if scores else 0.0
    return (
        f"{assignment}: {len(graded)} students graded, mean score {mean:.2f} / {maximum:g}, "
        f"{len(students) - len(graded)} not graded"
    )


def collect(assignment, root=paths.ROOT):
    """Extract downloaded/<assignment>/archive/*.zip into submitted/; (ok, message)."""
    if not (Path(root) / "downloaded" / assignment / "archive").is_dir():
        return False, f"{assignment}: put the downloaded zips in downloaded/{assignment}/archive/"
    result = nbgrader(["zip_collect", assignment, "--force"], root, check=False)
    if result.returncode != 0:
        return False, f"{assignment}: nbgrader zip_collect failed:\n{result.stderr[-3000:]}"
    unreadable = unreadable_files(Path(root) / "downloaded" / assignment / "extracted")
    collected = len(submitted_students(assignment, root))
    message = f"{assignment}: {collected} students in submitted/"
    if unreadable:
        listing = "\n  ".join(unreadable)
        return False, (
            f"{message}; NOT collected, no student id in the file name "
            f"(expected <anything>_<student>_attempt_<YYYY-MM-DD-hh-mm-ss>_<file>.ipynb):"
            f"\n  {listing}"
        )
    return True, message


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
    parser.add_argument("command", choices=["collect", "autograde", "feedback", "grades"])
    parser.add_argument("assignment", nargs="?", default="", help="one lab (default: every lab)")
    parser.add_argument("--root", default=str(paths.ROOT), help="course directory")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.command == "grades":
        print(grades(root))
        return
    if args.command == "collect":
        if not args.assignment:
            parser.error("collect needs an assignment, e.g. make collect ASSIGNMENT=01_softmax")
        ok, message = collect(args.assignment, root)
        print(message)
        sys.exit(0 if ok else 1)
    all_ok = True
    for assignment in [args.assignment] if args.assignment else paths.assignments(root):
        if args.command == "autograde":
            ok, message = autograde(assignment, root)
            all_ok = all_ok and ok
            print(message, flush=True)
        else:
            print(feedback(assignment, root), flush=True)
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
