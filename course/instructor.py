"""The instructor's grading cycle, run from the repository root.

python -m course.instructor autograde [ASSIGNMENT]   grade submitted/ (every lab by default),
                                                     on every core (--jobs N: N workers), each
                                                     kernel in a sandbox (--unsandboxed: not);
                                                     --share K/N: only the K-th of N shares
                                                     of the students (several machines)
python -m course.instructor collect ASSIGNMENT       collect an LMS export into submitted/
python -m course.instructor feedback [ASSIGNMENT]    feedback/ HTML and the LMS's feedback zip,
                                                     for submissions graded in full (--provisional:
                                                     also those with written answers to grade)
python -m course.instructor grades                   write grades.csv, one row per student
python -m course.instructor grades ASSIGNMENT --lms-gradebook CSV
                                                     fill the lab's column of an LMS gradebook CSV
                                                     (--provisional: also scores not final yet)
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
PROVISIONAL_COLUMN = "provisional"  # grades.csv: the labs whose score counts answers to grade as 0
UPLOAD = "upload"  # what goes back to the LMS: upload/<assignment>/
FEEDBACK = "feedback"
HELD_BACK = (
    "  no feedback yet, written answers to grade in the formgrader first: {students}\n"
    '  (make feedback PROVISIONAL=1 hands it out now, those answers marked "to be graded")'
)
GRADES_HELD_BACK = (
    "  (make grades ... PROVISIONAL=1 fills them now, the answers to grade counted as 0)"
)


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


def autograded_notebook(root, student, assignment):
    """Where a student's autograded notebook of a lab is (when it was autograded)."""
    return paths.autograded(root, student, assignment) / paths.lab_filename(assignment)


def summary(assignment, students, root):
    """Students graded, their mean score, the written answers to grade and late work of a lab."""
    graded = [s for s in students if autograded_notebook(root, s, assignment).exists()]
    with gradebook(root) as book:
        lab = book.find_assignment(assignment)
        submissions = [book.find_submission(assignment, s) for s in graded]
        scores = [score_after_penalty(submission) for submission in submissions]
        waiting = sum(len(answers_to_grade(submission, root)) for submission in submissions)
        late = late_lines(lab, submissions, read_manifest(root, assignment) or {})
    mean = statistics.mean(scores) if scores else 0.0
    to_grade = (
        f"; {waiting} written answers to grade by hand in the formgrader (counted as 0 until then)"
        if waiting
        else ""
    )
    first = (
        f"{assignment}: {len(graded)} students graded, mean score {mean:.2f} / {lab.max_score:g}, "
        f"{len(students) - len(graded)} not graded{to_grade}"
    )
    return "\n".join([first, *late])


def score_after_penalty(submission):
    """A submission's score less its late penalty (nbgrader's gradebook keeps them apart)."""
    return submission.score - (submission.late_submission_penalty or 0)


def answers_to_grade(submission, root=paths.ROOT):
    """Names of the cells of a submission (nbgrader's SubmittedAssignment) to grade by hand.

    [] when its notebook was not autograded (missing from the submission): nothing to grade.
    """
    if not autograded_notebook(root, submission.student.id, submission.assignment.name).exists():
        return []
    return [
        grade.name
        for notebook in submission.notebooks
        for grade in notebook.grades
        if grade.needs_manual_grade
    ]


def late_lines(lab, submissions, manifest):
    """A line per late submission: its penalty, or that there is none without a due date."""
    lines = []
    for submission in submissions:
        student = submission.student.id
        if lab.duedate is None and manifest.get(student, {}).get("late"):
            lines.append(f"  {student}: late, no penalty: no due date set")
        elif submission.total_seconds_late > 0:
            hours = submission.total_seconds_late / 3600
            penalty = submission.late_submission_penalty or 0
            lines.append(f"  {student}: late by {hours:.1f} h, penalty {penalty:g} points")
    return lines


def collect(assignment, root=paths.ROOT):
    """Collect the LMS export in downloaded/<assignment>/archive/ into submitted/; (ok, message)."""
    result = collect_export(root, assignment)
    if result.names:
        with gradebook(root) as book:
            for student, (first, last) in result.names.items():
                book.update_or_create_student(student, first_name=first, last_name=last)
    return result.ok, result.message


def feedback(assignment, root=paths.ROOT, provisional=False):
    """Write the feedback HTML of one lab, and the LMS's feedback zip when it was collected.

    A submission with written answers still to grade gets none (any earlier one is removed)
    unless `provisional`: then its feedback says "to be graded" for them and for the total.
    """
    graded, to_grade = students_to_grade(assignment, root)
    held = [] if provisional else to_grade
    for student in held:
        shutil.rmtree(Path(root) / FEEDBACK / student / assignment, ignore_errors=True)
    if set(graded) - set(held):
        exclude = [f"--CourseDirectory.student_id_exclude={','.join(held)}"] if held else []
        nbgrader(["generate_feedback", assignment, "--force", *exclude], root)
    lines = [f"{assignment}: feedback of {len(graded) - len(held)} students written to feedback/"]
    if held:
        lines.append(HELD_BACK.format(students=", ".join(held)))
    elif to_grade:
        lines.append(f"  provisional, written answers to be graded: {', '.join(to_grade)}")
    manifest = read_manifest(root, assignment)
    if manifest:
        lines += lms_feedback(assignment, manifest, root, held)
    return "\n".join(lines)


def students_to_grade(assignment, root=paths.ROOT):
    """(students autograded, those of them with written answers still to grade by hand)."""
    with gradebook(root) as book:
        try:
            submissions = book.assignment_submissions(assignment)
        except MissingEntry:
            return [], []
        graded = sorted(
            s.student.id
            for s in submissions
            if autograded_notebook(root, s.student.id, assignment).exists()
        )
        waiting = {s.student.id for s in submissions if answers_to_grade(s, root)}
    return graded, [student for student in graded if student in waiting]


def lms_feedback(assignment, manifest, root=paths.ROOT, held=()):
    """Write upload/<assignment>/feedback_<lms>.zip for Canvas and Moodle; report lines.

    The students `held` (answers still to grade) get no feedback in the zip.
    """
    lines = []
    for name in sorted({record["lms"] for record in manifest.values()}):
        students = {s: r for s, r in manifest.items() if r["lms"] == name}
        if name not in ("canvas", "moodle"):
            label = formats.LMS_NAMES[name]
            lines.append(f"  {label}: no feedback zip, hand out feedback/ yourself")
            continue
        entries, missing = [], []
        for student, record in sorted(students.items()):
            if student in held:
                continue
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
    """(grade id, score or None when still to grade by hand, maximum, comment) of each graded cell.

    The comment is the grader's on the cell's answer ("" when none).
    """
    notebook = Path(paths.lab_filename(assignment)).stem
    with gradebook(root) as book:
        try:
            found = book.find_submission_notebook(notebook, assignment, student)
        except MissingEntry:
            return []
        comments = {comment.name: comment.comment or "" for comment in found.comments}
        return [
            (
                grade.name,
                None if grade.needs_manual_grade else grade.score,
                grade.max_score,
                comments.get(grade.name, ""),
            )
            for grade in found.grades
        ]


def grades(root=paths.ROOT, output=GRADES_CSV):
    """Write a CSV with one row per student, one column per lab (total score), and the labs
    whose score is provisional (written answers still to grade, counted as 0); report lines.
    """
    labs = paths.assignments(root)
    with gradebook(root) as book:
        rows, waiting = [], []
        for student in sorted(book.students, key=lambda s: s.id):
            row = {"student": student.id, PROVISIONAL_COLUMN: []}
            for lab in labs:
                try:
                    submission = book.find_submission(lab, student.id)
                except MissingEntry:
                    row[lab] = ""
                    continue
                row[lab] = score_after_penalty(submission)
                if answers_to_grade(submission, root):
                    row[PROVISIONAL_COLUMN].append(lab)
                    waiting.append(f"{student.id} ({lab})")
            row[PROVISIONAL_COLUMN] = " ".join(row[PROVISIONAL_COLUMN])
            rows.append(row)
    with open(Path(root) / output, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["student", *labs, PROVISIONAL_COLUMN])
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"{len(rows)} students written to {output}"]
    if waiting:
        lines.append(
            f"  provisional (column {PROVISIONAL_COLUMN}), written answers to grade in the "
            f"formgrader, counted as 0: {', '.join(waiting)}"
        )
    return "\n".join(lines)


def lms_grades(assignment, lms_gradebook, root=paths.ROOT, column="", provisional=False):
    """Write upload/<assignment>/grades_<lms>.csv: the LMS's gradebook with the lab filled in.

    A score that still counts written answers to grade as 0 is left blank unless `provisional`.
    """
    manifest = read_manifest(root, assignment)
    if not manifest:
        return False, f"{assignment}: collect it first (make collect ASSIGNMENT={assignment})"
    if not Path(lms_gradebook).is_file():
        return False, f"{assignment}: no file {lms_gradebook} (the LMS's gradebook CSV)"
    scores, not_graded, to_grade = lms_scores(assignment, manifest, root)
    held = set() if provisional else {manifest[student]["lms_id"] for student in to_grade}
    scores = {lms_id: score for lms_id, score in scores.items() if lms_id not in held}
    text, bom = formats.read_text(lms_gradebook)
    try:
        filled, name, report = formats.fill_gradebook(
            text, assignment, scores, column, not_graded, held
        )
    except ValueError as error:
        return False, f"{assignment}: {lms_gradebook}: {error}"
    path = Path(UPLOAD) / assignment / f"grades_{name.lower()}.csv"
    (Path(root) / path).parent.mkdir(parents=True, exist_ok=True)
    (Path(root) / path).write_bytes(bom + filled.encode("utf-8"))
    lines = [f"{assignment}: {name} gradebook with the lab's grades in {path}"]
    lines += [f"  {line}" for line in report]
    if held:
        lines.append(GRADES_HELD_BACK)
    elif to_grade:
        lines.append(
            f"  provisional, written answers not graded yet (counted as 0), see the formgrader: "
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
            scores[record["lms_id"]] = score_after_penalty(submission)
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
        "--provisional",
        action="store_true",
        help="feedback and LMS grades also for submissions with written answers still to grade",
    )
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
        ok, message = lms_grades(args.assignment, exported, root, args.lms_column, args.provisional)
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
            print(feedback(assignment, root, args.provisional), flush=True)
    return all_ok


if __name__ == "__main__":
    main()
