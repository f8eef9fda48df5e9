"""The feedback that goes back to the LMS: a zip Canvas or Moodle hands out to each student.

Canvas gets each student's autograded notebook, cleaned and cut as the feedback pages are, under
the name it was downloaded as; Moodle gets each student's feedback page in the folder its "upload
multiple feedback files in a zip" reads. Blackboard gets no zip: hand out its students' feedback/
pages yourself.
"""

import zipfile
from pathlib import Path, PurePosixPath

import nbformat
from nbgrader.api import MissingEntry

from course.coursedir import gradebook_db, notebooks, paths, submissions
from course.coursedir.words import counted
from course.grading.preprocessors.feedback import HideHiddenTests
from course.grading.preprocessors.output_limits import LimitOutputSize
from course.grading.preprocessors.pages import CleanSubmission
from course.lms.gradebook_csv import format_score
from course.lms.names import UPLOAD, Download, moodle_folder
from course.lms.platforms import Feedback, Platform


def feedback_notebook(autograded_path, grades, assignment, comments=None):
    """The autograded notebook, cleaned and cut as feedback pages are, with the scores on top
    and the grader's comment on each answer below it.

    `grades` are (grade id, score or None when still to grade, maximum, comment) per graded cell;
    `comments` (cell id -> text) adds those on cells that are not graded themselves: a code
    answer, whose points come from the tests below it.
    """
    nb = notebooks.read(autograded_path)
    for step in (CleanSubmission(), LimitOutputSize(), HideHiddenTests()):
        nb, _ = step.preprocess(nb, {})
    order = [notebooks.nbgrader_meta(cell).get("grade_id") for cell in nb.cells]
    grades = sorted(grades, key=lambda grade: order.index(grade[0]) if grade[0] in order else 0)
    lines = [f"# Feedback on {assignment}", "", "| cell | points |", "|---|---|"]
    lines += [
        f"| {name} | {'to be graded' if score is None else format_score(score)} / {top:g} |"
        for name, score, top, _ in grades
    ]
    total = sum(score or 0 for _, score, _, _ in grades)
    maximum = sum(top for _, _, top, _ in grades)
    pending = " (written answers still to be graded)" if None in [g[1] for g in grades] else ""
    lines += ["", f"**Total: {format_score(total)} / {maximum:g}**{pending}"]
    on_grades = {name: comment for name, _, _, comment in grades if comment}
    add_comments(nb, {**(comments or {}), **on_grades})
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("\n".join(lines)))
    return nb


def add_comments(nb, comments):
    """Insert, below each cell named in `comments` (grade id -> text), a cell with its comment."""
    for index in reversed(range(len(nb.cells))):
        name = notebooks.nbgrader_meta(nb.cells[index]).get("grade_id")
        if name in comments:
            text = f"**Comment on {name}:**\n\n{comments[name]}"
            nb.cells.insert(index + 1, nbformat.v4.new_markdown_cell(text))


def feedback_entries(state, record, root, assignment, grades):
    """(name in the LMS's feedback zip, bytes) for one collected student, whose SubmissionState
    is `state`; [] without feedback (not graded, or no page written)."""
    if not record["collected_as"] or state is None or not state.graded:
        return []
    lab, platform = Path(record["collected_as"]), Platform(record["lms"])
    if platform.feedback is Feedback.NOTEBOOK:
        autograded = paths.autograded(root, state.student, assignment) / lab.name
        with gradebook_db.open_gradebook(root) as book:
            comments = submissions.cell_comments(book, assignment, state.student)
        nb = feedback_notebook(autograded, grades, assignment, comments)
        name = PurePosixPath(record["download"]).name
        return [(name, nbformat.writes(nb).encode())]
    if platform.feedback is Feedback.PAGE:
        html = Path(root) / "feedback" / state.student / assignment / f"{lab.stem}.html"
        if not html.exists():
            return []
        download = Download(platform, record["lms_id"], record["name"], "", record["download"])
        return [(f"{moodle_folder(download)}/{html.name}", html.read_bytes())]
    return []


def write_zip(path, entries):
    """Write (name, bytes) entries to a zip, names flagged as UTF-8."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, data in entries:
            bundle.writestr(name, data)


def lms_feedback(assignment, manifest, states, root=paths.ROOT, held=()):
    """Write upload/<assignment>/feedback_<lms>.zip for Canvas and Moodle; report lines.

    `states` (student -> SubmissionState) are the lab's submissions, as `course.coursedir.
    submissions` decides them: only a graded one gets feedback in the zip. The students `held`
    (answers still to grade) get none either.
    """
    lines = []
    for platform in sorted({Platform(record["lms"]) for record in manifest.values()}):
        students = {s: r for s, r in manifest.items() if r["lms"] == platform}
        if platform.feedback is None:
            lines.append(f"  {platform.label}: no feedback zip, hand out feedback/ yourself")
            continue
        entries, missing = [], []
        for student, record in sorted(students.items()):
            if student in held:
                continue
            state = states.get(student)
            graded = state is not None and state.graded
            grades = cell_grades(assignment, student, root) if graded else []
            found = feedback_entries(state, record, root, assignment, grades)
            entries.extend(found)
            if not found:
                missing.append(student)
        path = Path(UPLOAD) / assignment / f"feedback_{platform}.zip"
        write_zip(Path(root) / path, entries)
        students = counted(len(entries), "student")
        lines.append(f"  {platform.label}: feedback of {students} in {path}")
        if missing:
            lines.append(f"    no feedback (not graded): {', '.join(missing)}")
    return lines


def cell_grades(assignment, student, root=paths.ROOT):
    """(grade id, score or None when still to grade by hand, maximum, comment) of each graded cell.

    The comment is the grader's on the cell's answer ("" when none).
    """
    notebook = Path(paths.lab_filename(assignment)).stem
    with gradebook_db.open_gradebook(root) as book:
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

