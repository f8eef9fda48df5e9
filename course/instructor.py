"""The instructor's grading cycle, run from the repository root.

python -m course.instructor autograde [ASSIGNMENT]   grade submitted/ (every lab by default),
                                                     on every core (--jobs N: N workers), each
                                                     kernel in a sandbox (--unsandboxed: not)
                                                     bounded as a whole by a control group
                                                     (--per-process-limits: rlimits alone);
                                                     --regrade ID[,ID...]: grade those afresh.
                                                     With a PostgreSQL gradebook, the same
                                                     command on several machines shares the
                                                     class through its work queue
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
import functools
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path

from nbgrader.api import MissingEntry

from course.coursedir import gradebook_db, paths
from course.coursedir.gradebook_db import open_gradebook
from course.coursedir.nbgrader_run import nbgrader
from course.coursedir.notebooks import executed_notebook
from course.coursedir.release import generate_release
from course.coursedir.submissions import find_state, is_graded, lab_states, student_label
from course.coursedir.words import counted
from course.grading import pool as grading_pool
from course.grading import queue as grading_queue
from course.grading.preprocessors import findings
from course.lms.collect import collect_export, read_manifest, record_names
from course.lms.feedback_zip import lms_feedback
from course.lms.gradebook_csv import lms_grades

UNSANDBOXED_MARK = "UNSANDBOXED: "
NO_SANDBOX = """make autograde refuses to grade: it cannot sandbox each student's kernel here.
Reason: {reason}
Student code is untrusted. Grade on a Linux machine (or a VM, or a container allowed to create
namespaces) where you are root or unprivileged user namespaces are enabled
(sysctl kernel.unprivileged_userns_clone=1, or user.max_user_namespaces > 0).
To grade without a sandbox anyway, with your own rights: make autograde UNSANDBOXED=1"""
NO_GROUP = """make autograde refuses to grade: no control group can bound each sandbox as a whole.
Reason: {reason}
Each sandbox would then have only per-process limits (rlimits): a student's processes together
could hold many times one process's memory. Grade as root, or from a server started in a control
group delegated to you (the hub's config does this, see SECURITY.md "What each mode bounds").
To grade with per-process limits anyway: make autograde PER_PROCESS=1"""
REFUSALS = {grading_pool.CANNOT_SANDBOX: NO_SANDBOX, grading_pool.NO_CONTROL_GROUP: NO_GROUP}
GRADES_CSV = "grades.csv"
PROVISIONAL_FEEDBACK = 'also for submissions with written answers to grade ("to be graded")'
PROVISIONAL_GRADES = "also the scores that count written answers still to grade as 0"
PROVISIONAL_COLUMN = "provisional"  # grades.csv: the labs whose score counts answers to grade as 0
FEEDBACK = "feedback"
HELD_BACK = (
    "  no feedback yet, written answers to grade in the formgrader first: {students}\n"
    '  (make feedback PROVISIONAL=1 hands it out now, those answers marked "to be graded")'
)


def submitted_students(assignment, root=paths.ROOT):
    """Students with a submission of `assignment` in submitted/."""
    return sorted(
        p.parent.name for p in (Path(root) / "submitted").glob(f"*/{assignment}") if p.is_dir()
    )


def ensure_in_gradebook(assignment, root=paths.ROOT):
    """Record the lab's notebooks and tests in the gradebook if they are not there yet."""
    with open_gradebook(root) as book:
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
    for student in students:
        folder = paths.autograded(root, student, assignment)
        if folder.is_dir() and not is_graded(root, student, assignment):
            shutil.rmtree(folder)


def autograde(
    assignment,
    root=paths.ROOT,
    sandboxed=True,
    jobs=None,
    progress_stream=None,
    regrade=(),
    limits=None,
):
    """Autograde every new or unfinished submission of one lab on `jobs` workers; (ok, summary).

    The summary and the review lines depend on the submissions only, never on `jobs`. The
    students of `regrade` are graded afresh. With a PostgreSQL gradebook the submissions come
    from its work queue, which graders on other machines may share (`grade_shared`). `limits` is
    the summary's line of sandbox limits (`Machine.limits`; by default, asked of the pool).
    """
    students = submitted_students(assignment, root)
    if not students:
        return True, f"{assignment}: no submissions in submitted/"
    url = gradebook_db.connection_url(root)
    if grading_queue.is_shared(url):
        grade = functools.partial(grade_shared, url=url)
    else:
        grade = grade_here
    outcomes = grade(assignment, students, root, sandboxed, jobs, progress_stream, regrade)
    if not sandboxed:
        limits = ""
    elif limits is None:
        limits = grading_pool.sandbox_limits()
    return class_report(assignment, students, root, outcomes, limits)


def grade_here(assignment, students, root, sandboxed, jobs, progress_stream, regrade):
    """Grade the class on this machine alone (a SQLite gradebook); {student: Outcome}."""
    ensure_in_gradebook(assignment, root)
    for student in set(regrade) & set(students):
        shutil.rmtree(paths.autograded(root, student, assignment), ignore_errors=True)
    discard_unfinished(assignment, students, root)
    progress = grading_pool.Progress(assignment, len(students), progress_stream)
    return grading_pool.grade_class(
        assignment, students, root, jobs, progress=progress, sandboxed=sandboxed
    )


def grade_shared(assignment, students, root, sandboxed, jobs, progress_stream, regrade, url):
    """Grade what the gradebook's work queue hands this machine, until the class is graded."""
    queue = grading_queue.Queue(url, assignment)
    try:
        with queue.setting_up():  # graders that start at once record the lab once
            ensure_in_gradebook(assignment, root)
        queued = queue.rows()
        new = [student for student in students if student not in queued]
        queue.enqueue(new, {student for student in new if is_graded(root, student, assignment)})
        queue.request_regrade(set(regrade) & set(students))
        progress = grading_pool.Progress(assignment, queue.unfinished(), progress_stream)
        return grading_pool.grade_queue(
            assignment,
            queue,
            root,
            jobs,
            progress=progress,
            sandboxed=sandboxed,
            prepare=lambda claim: prepare_claim(assignment, claim, root),
            graded=lambda student: is_graded(root, student, assignment),
        )
    finally:
        queue.close()


def prepare_claim(assignment, claim, root):
    """Clear a claimed submission's autograded folder if a regrade, or left unfinished."""
    if claim.regrade:
        shutil.rmtree(paths.autograded(root, claim.student, assignment), ignore_errors=True)
    else:
        discard_unfinished(assignment, [claim.student], root)


def class_report(assignment, students, root, outcomes, limits=""):
    """(ok, summary): the lab's summary, the students not graded, `limits`, review and errors."""
    lines = [lab_summary(assignment, students, root)]
    notebook = paths.lab_filename(assignment)
    labels = student_labels(students, root)
    for student in students:
        folder = paths.submitted(root, student, assignment)
        if not (folder / notebook).exists():
            found = ", ".join(sorted(p.name for p in folder.glob("*.ipynb"))) or "no notebook"
            lines.append(
                f"  {labels[student]}: not graded, no {notebook} in {folder} (found: {found})"
            )
        elif not is_graded(root, student, assignment):
            lines.append(
                f"  {labels[student]}: not graded, the notebook could not be run to the end "
                "(the kernel died or nbgrader failed: see its log below); scores 0"
            )
    ok = all(outcome.success for outcome in outcomes.values()) and len(lines) == 1
    review = reviewed(assignment, students, root)
    if not ok:
        review.extend(["nbgrader errors:", *error_lines(outcomes)[-20:]])
    limits_line = [f"  {limits}"] if limits else []
    return ok, "\n".join(lines + limits_line + review)


def error_lines(outcomes):
    """nbgrader's ERROR lines for every student, in the order of the students' ids."""
    return [
        line
        for student in sorted(outcomes)
        for line in outcomes[student].log.splitlines()
        if "ERROR" in line
    ]


def reviewed(assignment, students, root):
    """Lines naming, per student, the findings about their cells (`findings`)."""
    lines = []
    notebook = paths.lab_filename(assignment)
    labels = student_labels(students, root)
    for student in students:
        nb = executed_notebook(paths.autograded(root, student, assignment) / notebook)
        if nb is not None:
            listed = nb.metadata.get(findings.FINDINGS_KEY, [])
            lines.extend(f"  {labels[student]}: {finding}" for finding in listed)
    if lines:
        lines.insert(0, "findings to review (every cell ran; no points depend on them):")
    return lines


def student_labels(students, root):
    """Student id -> the id and name that commands print (`submissions.student_label`)."""
    with open_gradebook(root) as book:
        return {student: student_label(book, student) for student in students}


def lab_summary(assignment, students, root):
    """Students graded, their mean score, the written answers to grade and late work of a lab."""
    with open_gradebook(root) as book:
        lab = book.find_assignment(assignment)
        states = [find_state(book, assignment, student, root) for student in students]
        graded = [state for state in states if state is not None and state.graded]
        submissions = [book.find_submission(assignment, state.student) for state in graded]
        late = late_lines(book, lab, submissions, read_manifest(root, assignment) or {})
    mean = statistics.mean(state.score for state in graded) if graded else 0.0
    waiting = sum(len(state.to_grade) for state in graded)
    to_grade = (
        f"; {counted(waiting, 'written answer')} to grade by hand in the formgrader "
        "(counted as 0 until then)"
        if waiting
        else ""
    )
    first = (
        f"{assignment}: {counted(len(graded), 'student')} graded, mean score {mean:.2f} / "
        f"{lab.max_score:g}, {len(students) - len(graded)} not graded{to_grade}"
    )
    return "\n".join([first, *late])


def late_lines(book, lab, submissions, manifest):
    """A line per late submission: its penalty, or that there is none without a due date."""
    lines = []
    for submission in submissions:
        student = submission.student.id
        label = student_label(book, student)
        if lab.duedate is None and manifest.get(student, {}).get("late"):
            lines.append(f"  {label}: late, no penalty: no due date set")
        elif submission.total_seconds_late > 0:
            hours = submission.total_seconds_late / 3600
            penalty = submission.late_submission_penalty or 0
            lines.append(f"  {label}: late by {hours:.1f} h, penalty {penalty:g} points")
    return lines


def feedback(assignment, root=paths.ROOT, provisional=False):
    """Write the feedback HTML of one lab, and the LMS's feedback zip when it was collected.

    A submission with written answers still to grade gets none (any earlier one is removed)
    unless `provisional`: then its feedback says "to be graded" for them and for the total.
    """
    with open_gradebook(root) as book:
        states = lab_states(book, assignment, root)
        graded = [state for state in states if state.graded]
        labels = {state.student: student_label(book, state.student) for state in graded}
    to_grade = [state.student for state in graded if state.provisional]
    held = [] if provisional else to_grade
    for student in held:
        shutil.rmtree(Path(root) / FEEDBACK / student / assignment, ignore_errors=True)
    if len(graded) > len(held):
        exclude = [f"--CourseDirectory.student_id_exclude={','.join(held)}"] if held else []
        nbgrader(["generate_feedback", assignment, "--force", *exclude], root)
    written = counted(len(graded) - len(held), "student")
    lines = [f"{assignment}: feedback of {written} written to feedback/"]
    if held:
        lines.append(HELD_BACK.format(students=", ".join(labels[s] for s in held)))
    elif to_grade:
        names = ", ".join(labels[s] for s in to_grade)
        lines.append(f"  provisional, written answers to be graded: {names}")
    manifest = read_manifest(root, assignment)
    if manifest:
        by_student = {state.student: state for state in states}
        lines += lms_feedback(assignment, manifest, by_student, root, held)
    return "\n".join(lines)


def grades(root=paths.ROOT, output=GRADES_CSV):
    """Write a CSV with one row per student, one column per lab (total score), and the labs
    whose score is provisional (written answers still to grade, counted as 0); report lines.
    """
    labs = paths.assignments(root)
    with open_gradebook(root) as book:
        rows, waiting = [], []
        for student in sorted(book.students, key=lambda s: s.id):
            row = {"student": student.id, PROVISIONAL_COLUMN: []}
            for lab in labs:
                state = find_state(book, lab, student.id, root)
                row[lab] = "" if state is None else state.score
                if state is not None and state.provisional:
                    row[PROVISIONAL_COLUMN].append(lab)
                    waiting.append(f"{student_label(book, student.id)} ({lab})")
            row[PROVISIONAL_COLUMN] = " ".join(row[PROVISIONAL_COLUMN])
            rows.append(row)
    with open(Path(root) / output, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["student", *labs, PROVISIONAL_COLUMN])
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"{counted(len(rows), 'student')} written to {output}"]
    if waiting:
        lines.append(
            f"  provisional (column {PROVISIONAL_COLUMN}), written answers to grade in the "
            f"formgrader, counted as 0: {', '.join(waiting)}"
        )
    return "\n".join(lines)


def jobs_argument(text):
    """JOBS as a positive whole number of workers; argparse's usage error otherwise."""
    try:
        return grading_pool.checked_jobs(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"JOBS must be a positive whole number of workers, got {text!r}"
        ) from None


def students_argument(text):
    """REGRADE as a list of student ids (comma-separated); argparse's usage error otherwise."""
    students = [part.strip() for part in text.split(",")]
    if not all(students):
        raise argparse.ArgumentTypeError(
            f"REGRADE must be student ids separated by commas, got {text!r}"
        )
    return students


def main(argv=None):
    """Run the sub-command that `argv` (by default the command line) names; exit with its status."""
    args = command_line().parse_args(argv)
    sys.exit(args.func(args))


def command_line():
    """The parser of the four sub-commands, each with its options and the function it runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=paths.ROOT, help="course directory")
    commands = parser.add_subparsers(dest="command", required=True)
    lab_command(commands, "collect", run_collect, "collect an LMS export into submitted/", "a lab")
    grading = lab_command(commands, "autograde", run_autograde, "grade submitted/")
    grading.add_argument(
        "--unsandboxed", action="store_true", help="autograde without a sandbox (not advised)"
    )
    grading.add_argument(
        "--per-process-limits",
        action="store_true",
        help="grade where no control group can be made, each sandbox bounded per process only",
    )
    grading.add_argument(
        "--jobs", type=jobs_argument, default=None, help="autograde workers (default: every core)"
    )
    grading.add_argument(
        "--regrade", type=students_argument, default=(), help="ID[,ID...]: grade these afresh"
    )
    pages = lab_command(commands, "feedback", run_feedback, "feedback/ and the LMS's feedback zip")
    pages.add_argument("--provisional", action="store_true", help=PROVISIONAL_FEEDBACK)
    sheets = lab_command(commands, "grades", run_grades, "grades.csv, or an LMS gradebook CSV")
    sheets.add_argument("--lms-gradebook", default="", help="gradebook CSV exported by the LMS")
    sheets.add_argument("--lms-column", default="", help="the lab's column in a Canvas gradebook")
    sheets.add_argument("--provisional", action="store_true", help=PROVISIONAL_GRADES)
    return parser


def lab_command(commands, name, run, summary, lab="one lab (default: every lab)"):
    """A sub-command taking an ASSIGNMENT and --root, that runs `run(args)` -> exit status."""
    command = commands.add_parser(name, help=summary, description=summary)
    command.add_argument("assignment", nargs="?", default="", help=lab)
    command.add_argument("--root", type=Path, default=argparse.SUPPRESS, help="course directory")
    command.set_defaults(func=run, usage_error=command.error)
    return command


def run_collect(args):
    """`collect`: a lab's LMS export into submitted/, the students' names into the gradebook."""
    if not args.assignment:
        args.usage_error("collect needs an assignment, e.g. make collect ASSIGNMENT=01_softmax")
    result = collect_export(args.root, args.assignment)
    record_names(args.root, result.names)
    print(result.message)
    return 0 if result.ok else 1


def run_autograde(args):
    """`autograde`: one lab's or every lab's new submissions; refused where no sandbox works,
    and where no control group bounds a sandbox as a whole unless --per-process-limits says so.

    SIGTERM (a batch scheduler's cancel or time limit) stops it as Ctrl-C does: the submissions
    it holds in a shared gradebook's queue go back at once, for the other graders.
    """
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    limits = ""
    if not args.unsandboxed:
        machine = grading_pool.prepare_machine(args.per_process_limits)
        if not machine.ok:
            print(REFUSALS[machine.refusal].format(reason=machine.reason))
            return 2
        limits = machine.limits
    return for_each_lab(args, functools.partial(print_autograde, limits=limits))


def print_autograde(assignment, args, limits=""):
    """Autograde one lab and print its summary (with the `limits` line); True if all was graded."""
    ok, message = autograde(
        assignment, args.root, not args.unsandboxed, args.jobs, sys.stdout, args.regrade, limits
    )
    if args.unsandboxed:
        message = "\n".join(UNSANDBOXED_MARK + line for line in message.splitlines())
    print(message, flush=True)
    return ok


def run_feedback(args):
    """`feedback`: the feedback of one lab or of every lab."""
    return for_each_lab(args, print_feedback)


def print_feedback(assignment, args):
    """Write one lab's feedback and print what was written; True."""
    print(feedback(assignment, args.root, args.provisional), flush=True)
    return True


def for_each_lab(args, run_lab):
    """`run_lab(assignment, args)` for the lab named or every lab; exit status (130: stopped)."""
    labs = [args.assignment] if args.assignment else paths.assignments(args.root)
    try:
        results = [run_lab(assignment, args) for assignment in labs]
    except KeyboardInterrupt:
        print(f"stopped: run `make {args.command}` again to finish", flush=True)
        return 130
    return 0 if all(results) else 1


def run_grades(args):
    """`grades`: grades.csv, or with --lms-gradebook the LMS's gradebook with the lab's column."""
    if not args.lms_gradebook:
        print(grades(args.root))
        return 0
    if not args.assignment:
        args.usage_error("LMS_GRADEBOOK needs an assignment, e.g. ASSIGNMENT=01_softmax")
    exported = Path(args.lms_gradebook).expanduser()
    ok, message = lms_grades(
        args.assignment, exported, args.root, args.lms_column, args.provisional
    )
    print(message)
    return 0 if ok else 1


if __name__ == "__main__":
    main()
