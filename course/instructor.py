"""The instructor's grading cycle, run from the repository root.

python -m course.instructor autograde [ASSIGNMENT]   grade submitted/ (every lab by default),
                                                     on every core (--jobs N: N workers), each
                                                     kernel in a sandbox (--unsandboxed: not);
                                                     --share K/N: only the K-th of N shares
                                                     of the students (several machines)
python -m course.instructor collect ASSIGNMENT       collect an LMS export into submitted/
python -m course.instructor feedback [ASSIGNMENT]    feedback/ HTML and the LMS's feedback zip
python -m course.instructor grades                   write grades.csv, one row per student
python -m course.instructor grades ASSIGNMENT --lms-gradebook CSV
                                                     fill the lab's column of an LMS gradebook CSV
"""

import argparse
import csv
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from nbgrader.api import MissingEntry

from course.build import gradebook_db, notebooks, paths
from course.build.nbgrader_run import nbgrader
from course.build.release import generate_release
from course.grading import cgroups, findings, sandbox
from course.grading import pool as grading_pool
from course.lms import formats
from course.lms.collect import collect_export, read_manifest

UNSANDBOXED_MARK = "UNSANDBOXED: "
NO_SANDBOX = """make autograde refuses to grade: it cannot sandbox each student's kernel here.
Reason: {reason}
Student code is untrusted. Grade on a Linux machine (or a VM, or a container allowed to create
namespaces) where you are root or unprivileged user namespaces are enabled
(sysctl kernel.unprivileged_userns_clone=1, or user.max_user_namespaces > 0).
To grade without a sandbox anyway, with your own rights: make autograde UNSANDBOXED=1"""
GRADES_CSV = "grades.csv"
UPLOAD = "upload"  # what goes back to the LMS: upload/<assignment>/


def gradebook(root=paths.ROOT):
    """Open the course's gradebook: gradebook.db, or the database nbgrader_config.py names."""
    return gradebook_db.open_gradebook(root)


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
    if not known:  # generate_assignment records it; the student version goes to a scratch folder
        with tempfile.TemporaryDirectory() as scratch:
            generate_release(root, assignment, release_directory=scratch)


def discard_unfinished(assignment, students, root=paths.ROOT):
    """Remove autograded folders that a stopped run left unexecuted or without their notebook.

    nbgrader writes the sanitized notebook first and the executed one at the end, and skips a
    student whose folder exists: a folder left by a killed run would never be graded.
    """
    notebook = paths.lab_filename(assignment)
    for student in students:
        folder = paths.autograded(root, student, assignment)
        if folder.is_dir() and not executed(folder / notebook):
            shutil.rmtree(folder)


def executed_notebook(path):
    """The notebook at `path` if it exists and was executed, else None."""
    if not path.exists():
        return None
    try:
        nb = notebooks.read(path)
    except Exception:  # noqa: BLE001 - a half-written file counts as not executed
        return None
    ran = any(cell.get("execution_count") for cell in nb.cells if cell.cell_type == "code")
    return nb if ran else None


def executed(path):
    """True when the notebook at `path` exists and was executed."""
    return executed_notebook(path) is not None


def autograde(
    assignment, root=paths.ROOT, sandboxed=True, jobs=None, progress_stream=None, share=None
):
    """Autograde every new or unfinished submission of one lab on `jobs` workers; (ok, summary).

    The summary and the review lines depend on the submissions only, never on `jobs`. With
    `share` (K, N), only the students of share K of N are graded and reported.
    """
    students = submitted_students(assignment, root)
    if share is not None:
        students = grading_pool.students_of_share(students, *share)
    if not students:
        where = f"share {share[0]}/{share[1]} of submitted/" if share else "submitted/"
        return True, f"{assignment}: no submissions in {where}"
    ensure_in_gradebook(assignment, root)
    discard_unfinished(assignment, students, root)
    environment = {} if sandboxed else {"COURSE_UNSANDBOXED": "1"}
    progress = grading_pool.Progress(assignment, len(students), progress_stream)
    outcomes = grading_pool.grade_class(
        assignment, students, root, environment, jobs, progress=progress
    )
    lines = [summary(assignment, students, root)]
    notebook = paths.lab_filename(assignment)
    for student in students:
        folder = paths.submitted(root, student, assignment)
        if not (folder / notebook).exists():
            found = ", ".join(sorted(p.name for p in folder.glob("*.ipynb"))) or "no notebook"
            lines.append(f"  {student}: not graded, no {notebook} in {folder} (found: {found})")
        elif not executed(paths.autograded(root, student, assignment) / notebook):
            lines.append(
                f"  {student}: not graded, the notebook could not be run to the end "
                "(the kernel died or nbgrader failed: see its log below); scores 0"
            )
    ok = all(outcome.success for outcome in outcomes.values()) and len(lines) == 1
    review = reviewed(assignment, students, root)
    if not ok:
        review.extend(["nbgrader errors:", *error_lines(outcomes)[-20:]])
    limits = [f"  {cgroups.mode().describe()}"] if sandboxed else []
    return ok, "\n".join(lines + limits + review)


def error_lines(outcomes):
    """nbgrader's ERROR lines for every student, in the order of the students' ids."""
    return [
        line
        for student in sorted(outcomes)
        for line in outcomes[student].log.splitlines()
        if "ERROR" in line
    ]


def reviewed(assignment, students, root):
    """Lines naming, per student, the findings about their cells (course/grading/findings.py)."""
    lines = []
    notebook = paths.lab_filename(assignment)
    for student in students:
        nb = executed_notebook(paths.autograded(root, student, assignment) / notebook)
        if nb is not None:
            listed = nb.metadata.get(findings.FINDINGS_KEY, [])
            lines.extend(f"  {student}: {finding}" for finding in listed)
    if lines:
        lines.insert(0, "findings to review (every cell ran; no points depend on them):")
    return lines


def summary(assignment, students, root):
    """Students graded and their mean score for one lab."""
    notebook = paths.lab_filename(assignment)
    graded = [s for s in students if (paths.autograded(root, s, assignment) / notebook).exists()]
    with gradebook(root) as book:
        maximum = book.find_assignment(assignment).max_score
        scores = [book.find_submission(assignment, s).score for s in graded]
    mean = statistics.mean(scores) if scores else 0.0
    return (
        f"{assignment}: {len(graded)} students graded, mean score {mean:.2f} / {maximum:g}, "
        f"{len(students) - len(graded)} not graded"
    )


def collect(assignment, root=paths.ROOT):
    """Collect the LMS export in downloaded/<assignment>/archive/ into submitted/; (ok, message)."""
    result = collect_export(root, assignment)
    if result.names:
        with gradebook(root) as book:
            for student, (first, last) in result.names.items():
                names = {"first_name": first, "last_name": last}
                book.update_or_create_student(student, **{k: v for k, v in names.items() if v})
    return result.ok, result.message


def feedback(assignment, root=paths.ROOT):
    """Generate the feedback HTML of one lab, and the LMS's feedback zip when it was collected."""
    nbgrader(["generate_feedback", assignment, "--force"], root)
    message = f"{assignment}: feedback written to feedback/"
    manifest = read_manifest(root, assignment)
    if not manifest:
        return message
    return "\n".join([message, *lms_feedback(assignment, manifest, root)])


def lms_feedback(assignment, manifest, root=paths.ROOT):
    """Write upload/<assignment>/feedback_<lms>.zip for Canvas and Moodle; report lines."""
    lines = []
    for name in sorted({record["lms"] for record in manifest.values()}):
        students = {s: r for s, r in manifest.items() if r["lms"] == name}
        if name not in ("canvas", "moodle"):
            label = formats.LMS_NAMES[name]
            lines.append(f"  {label}: no feedback zip, hand out feedback/ yourself")
            continue
        entries, missing = [], []
        for student, record in sorted(students.items()):
            found = formats.feedback_entries(
                student, record, root, assignment, cell_grades(assignment, student, root)
            )
            entries.extend(found)
            if not found:
                missing.append(student)
        path = Path(UPLOAD) / assignment / f"feedback_{name}.zip"
        formats.write_zip(Path(root) / path, entries)
        lines.append(f"  {formats.LMS_NAMES[name]}: {len(entries)} students' feedback in {path}")
        if missing:
            lines.append(f"    no feedback (not graded): {', '.join(missing)}")
    return lines


def cell_grades(assignment, student, root=paths.ROOT):
    """(grade id, score or None when still to grade by hand, maximum) of each graded cell."""
    notebook = Path(paths.lab_filename(assignment)).stem
    with gradebook(root) as book:
        try:
            found = book.find_submission_notebook(notebook, assignment, student)
        except MissingEntry:
            return []
        return [
            (grade.name, None if grade.needs_manual_grade else grade.score, grade.max_score)
            for grade in found.grades
        ]


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


def lms_grades(assignment, lms_gradebook, root=paths.ROOT, column=""):
    """Write upload/<assignment>/grades_<lms>.csv: the LMS's gradebook with the lab filled in."""
    manifest = read_manifest(root, assignment)
    if not manifest:
        return False, f"{assignment}: collect it first (make collect ASSIGNMENT={assignment})"
    if not Path(lms_gradebook).is_file():
        return False, f"{assignment}: no file {lms_gradebook} (the LMS's gradebook CSV)"
    scores, not_graded, to_grade = lms_scores(assignment, manifest, root)
    text, bom = formats.read_text(lms_gradebook)
    try:
        filled, name, report = formats.fill_gradebook(text, assignment, scores, column, not_graded)
    except ValueError as error:
        return False, f"{assignment}: {lms_gradebook}: {error}"
    path = Path(UPLOAD) / assignment / f"grades_{name.lower()}.csv"
    (Path(root) / path).parent.mkdir(parents=True, exist_ok=True)
    (Path(root) / path).write_bytes(bom + filled.encode("utf-8"))
    lines = [f"{assignment}: {name} gradebook with the lab's grades in {path}"]
    lines += [f"  {line}" for line in report]
    if to_grade:
        lines.append(
            f"  written answers not graded yet (counted as 0), see the formgrader: "
            f"{', '.join(to_grade)}"
        )
    return True, "\n".join(lines)


def lms_scores(assignment, manifest, root=paths.ROOT):
    """(LMS id -> score if graded, LMS ids not graded, students with answers still to grade)."""
    notebook = paths.lab_filename(assignment)
    scores, not_graded, to_grade = {}, set(), []
    with gradebook(root) as book:
        for student, record in sorted(manifest.items()):
            try:
                submission = book.find_submission(assignment, student)
            except MissingEntry:
                submission = None
            graded = paths.autograded(root, student, assignment) / notebook
            if submission is None or not executed(graded):
                not_graded.add(record["lms_id"])
                continue
            scores[record["lms_id"]] = submission.score
            if submission.needs_manual_grade:
                to_grade.append(student)
    return scores, not_graded, to_grade


def jobs_argument(text):
    """JOBS as a positive whole number of workers; argparse's usage error otherwise."""
    try:
        return grading_pool.checked_jobs(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"JOBS must be a positive whole number of workers, got {text!r}"
        ) from None


def share_argument(text):
    """SHARE as (K, N); argparse's usage error otherwise."""
    try:
        return grading_pool.parse_share(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["collect", "autograde", "feedback", "grades"])
    parser.add_argument("assignment", nargs="?", default="", help="one lab (default: every lab)")
    parser.add_argument("--root", default=str(paths.ROOT), help="course directory")
    parser.add_argument("--lms-gradebook", default="", help="gradebook CSV exported by the LMS")
    parser.add_argument("--lms-column", default="", help="the lab's column in a Canvas gradebook")
    parser.add_argument(
        "--unsandboxed", action="store_true", help="autograde without a sandbox (not advised)"
    )
    parser.add_argument(
        "--jobs", type=jobs_argument, default=None, help="autograde workers (default: every core)"
    )
    parser.add_argument(
        "--share", type=share_argument, default=None, help="K/N: grade share K (0..N-1) of N"
    )
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.command == "grades" and args.lms_gradebook:
        if not args.assignment:
            parser.error("LMS_GRADEBOOK needs an assignment, e.g. ASSIGNMENT=01_softmax")
        exported = Path(args.lms_gradebook).expanduser()
        ok, message = lms_grades(args.assignment, exported, root, args.lms_column)
        print(message)
        sys.exit(0 if ok else 1)
    if args.command == "grades":
        print(grades(root))
        return
    if args.command == "collect":
        if not args.assignment:
            parser.error("collect needs an assignment, e.g. make collect ASSIGNMENT=01_softmax")
        ok, message = collect(args.assignment, root)
        print(message)
        sys.exit(0 if ok else 1)
    if args.command == "autograde" and not args.unsandboxed:
        available, reason = sandbox.probe()
        if not available:
            print(NO_SANDBOX.format(reason=reason))
            sys.exit(2)
    try:
        all_ok = run_each_lab(args, root)
    except KeyboardInterrupt:
        print(f"stopped: run `make {args.command}` again to finish", flush=True)
        sys.exit(130)
    sys.exit(0 if all_ok else 1)


def run_each_lab(args, root):
    """Autograde, or write the feedback of, the lab named in `args` or every lab; True if ok."""
    all_ok = True
    for assignment in [args.assignment] if args.assignment else paths.assignments(root):
        if args.command == "autograde":
            ok, message = autograde(
                assignment, root, not args.unsandboxed, args.jobs, sys.stdout, args.share
            )
            all_ok = all_ok and ok
            if args.unsandboxed:
                message = "\n".join(UNSANDBOXED_MARK + line for line in message.splitlines())
            print(message, flush=True)
        else:
            print(feedback(assignment, root), flush=True)
    return all_ok


if __name__ == "__main__":
    main()
