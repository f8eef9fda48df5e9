"""The gradebook CSV that Canvas or Moodle exports, given back with one lab's scores filled in.

Canvas's gradebook has a column per assignment, matched to the lab by its title (or named with
LMS_COLUMN); Moodle's grading worksheet has one Grade column. The file written back is the
exported one, byte for byte, except the lab's cells of the students graded.
"""

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from course.coursedir import gradebook_db, paths, submissions
from course.lms.collect import read_manifest
from course.lms.names import UPLOAD, simplify
from course.lms.platforms import gradebook_platform

GRADES_HELD_BACK = (
    "  (make grades ... PROVISIONAL=1 fills them now, the answers to grade counted as 0)"
)


def split_records(text):
    """A CSV text cut into records, each with its own line ending (quoted newlines kept).

    Not a csv.reader round trip, on purpose: the records are kept as the LMS wrote them, so that
    every byte of its file except the changed cells (quoting, spacing, line endings) goes back.
    """
    records, current = [], ""
    for line in text.splitlines(keepends=True):
        current += line
        if current.count('"') % 2 == 0:
            records.append(current)
            current = ""
    if current:
        records.append(current)
    return records


def parse_record(record):
    """The cells of one CSV record."""
    return next(csv.reader(io.StringIO(record.rstrip("\r\n"), newline="")), [])


def field_spans(record):
    """(start, end) of each field of a CSV record in its text, quotes included."""
    body = record.rstrip("\r\n")
    spans, start, quoted = [], 0, False
    for index, char in enumerate(body):
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            spans.append((start, index))
            start = index + 1
    return [*spans, (start, len(body))]


def with_cells(record, changes):
    """`record` with the cells in `changes` (index -> value) replaced, every other byte kept.

    A cell the LMS quoted is written quoted, one it left bare is quoted only where CSV needs it,
    so the file differs from the export in the changed cells alone.
    """
    spans = field_spans(record)
    for index in sorted(changes, reverse=True):
        start, end = spans[index]
        value = str(changes[index])
        needs_quotes = record[start:end].startswith('"') or any(c in value for c in ',"\r\n')
        text = '"' + value.replace('"', '""') + '"' if needs_quotes else value
        record = record[:start] + text + record[end:]
    return record


def canvas_column(header, assignment, wanted=""):
    """Index of the lab's column in a Canvas gradebook; ValueError with the candidates if unsure."""
    titles = [re.sub(r"\s*\(\d+\)$", "", title) for title in header]
    if wanted:
        hits = [i for i, title in enumerate(header) if wanted in (title, titles[i])]
    else:
        number = re.match(r"\d+", assignment)
        lab = rf"\blab\s*0*{int(number.group())}\b" if number else r"(?!)"
        name = simplify(assignment)
        hits = [
            i
            for i, title in enumerate(titles)
            if i >= 5
            and re.search(r"\(\d+\)$", header[i])
            and (name in simplify(title) or re.search(lab, title, re.IGNORECASE))
        ]
    if len(hits) != 1:
        choices = ", ".join(f'"{title}"' for title in header[5:] if re.search(r"\(\d+\)$", title))
        found = "several columns" if hits else "no column"
        raise ValueError(
            f"{found} of the Canvas gradebook match {wanted or assignment}; name the lab's "
            f'column with LMS_COLUMN="..." (its assignment columns: {choices})'
        )
    return hits[0]


def format_score(score):
    """A score as the LMS reads it: at most two decimals, no trailing zeros."""
    return f"{round(score, 2):g}"


def fill_gradebook(text, assignment, scores, column="", not_graded=(), held=(), comments=None):
    """Put `scores` (LMS id -> score) in the lab's column of an LMS gradebook CSV, and into its
    comment column (Moodle's "Feedback comments") the grader's `comments` (LMS id -> text) of
    each student scored.

    Returns (new text, LMS name, report lines). Only the lab's cells of matched students change;
    every other cell, the quoting and the line endings are kept. `not_graded` are the LMS ids of
    collected submissions that could not be graded, `held` those whose written answers are still
    to grade: their rows are left blank and reported apart.
    """
    records = split_records(text)
    header = parse_record(records[0]) if records else []
    platform = gradebook_platform(header)
    if platform is None:
        raise ValueError(
            "not a Canvas gradebook (columns Student, ID, SIS User ID, ...) nor a Moodle grading "
            "worksheet (columns Identifier, Grade, ...)"
        )
    columns = Columns.of(platform.gradebook, header, assignment, column)
    out, rows = fill_rows(records, columns, scores, comments or {})
    report = fill_report(rows, header[columns.grade], scores, not_graded, held)
    return "".join(out), platform.label, report


@dataclass(frozen=True)
class Columns:
    """Where a gradebook keeps what is filled in: indexes of its columns (comment None: none)."""

    layout: object  # the LMS's platforms.Gradebook
    header: list
    id: int
    grade: int
    comment: int | None

    @classmethod
    def of(cls, layout, header, assignment, column=""):
        """The columns of `header` for the lab `assignment` (or the Canvas column `column`)."""
        if layout.grade_column is None:
            grade = canvas_column(header, assignment, column)
        else:
            grade = header.index(layout.grade_column)
        comment = layout.comment_column
        comment = header.index(comment) if comment in header else None
        return cls(layout, header, header.index(layout.id_column), grade, comment)

    def name(self, cells):
        """The student's name in a row, for reports."""
        column = self.layout.name_column
        index = self.header.index(column) if column in self.header else 0
        return cells[index] if index < len(cells) else ""


def fill_rows(records, columns, scores, comments):
    """(the records with the scores and comments written in, {LMS id: the row's name for
    reports} of each student's row, filled or not)."""
    out, rows = [records[0]], {}
    for record in records[1:]:
        cells = parse_record(record)
        lms_id = columns.layout.row_id(cells, columns.id)
        if lms_id:
            rows[lms_id] = columns.name(cells)
        if lms_id not in scores:
            out.append(record)
            continue
        changes = {columns.grade: format_score(scores[lms_id])}
        if columns.comment is not None and comments.get(lms_id):
            changes[columns.comment] = comments[lms_id]
        out.append(with_cells(record, changes))
    return out, rows


def fill_report(rows, title, scores, not_graded, held):
    """The report lines of a filled gradebook: what was written, and each row left as it was."""
    filled = [lms_id for lms_id in rows if lms_id in scores]
    left = [lms_id for lms_id in rows if lms_id not in scores]

    def listed(ids):
        return ", ".join(f"{lms_id} ({rows[lms_id]})" for lms_id in ids)

    report = [f'{len(filled)} grades written in column "{title}"']
    blank = [lms_id for lms_id in left if lms_id in not_graded]
    waiting = [lms_id for lms_id in left if lms_id not in not_graded and lms_id in held]
    unmatched = [lms_id for lms_id in left if lms_id not in not_graded and lms_id not in held]
    if blank:
        report.append("not graded (see make autograde), left blank: " + listed(blank))
    if waiting:
        report.append(
            "written answers to grade in the formgrader first, left blank: " + listed(waiting)
        )
    if unmatched:
        report.append("rows left unchanged, no submission in this export: " + listed(unmatched))
    missing = sorted(set(scores) - set(filled))
    if missing:
        report.append("graded but not in the LMS gradebook: " + ", ".join(missing))
    return report


def read_text(path):
    """(text, BOM) of a CSV file; the byte-order mark some exports start with is kept apart."""
    raw = Path(path).read_bytes()
    bom = b"\xef\xbb\xbf" if raw.startswith(b"\xef\xbb\xbf") else b""
    return raw[len(bom) :].decode("utf-8"), bom


def lms_grades(assignment, lms_gradebook, root=paths.ROOT, column="", provisional=False):
    """Write upload/<assignment>/grades_<lms>.csv: the LMS's gradebook with the lab filled in.

    A score that still counts written answers to grade as 0 is left blank unless `provisional`.
    """
    manifest = read_manifest(root, assignment)
    if not manifest:
        return False, f"{assignment}: collect it first (make collect ASSIGNMENT={assignment})"
    if not Path(lms_gradebook).is_file():
        return False, f"{assignment}: no file {lms_gradebook} (the LMS's gradebook CSV)"
    scores, not_graded, to_grade, comments = lms_scores(assignment, manifest, root)
    held = set() if provisional else {manifest[student]["lms_id"] for student in to_grade}
    scores = {lms_id: score for lms_id, score in scores.items() if lms_id not in held}
    text, bom = read_text(lms_gradebook)
    try:
        filled, name, report = fill_gradebook(
            text, assignment, scores, column, not_graded, held, comments
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
    """(LMS id -> score if graded, LMS ids not graded, students with answers still to grade,
    LMS id -> the grader's comments as one text)."""
    scores, not_graded, to_grade, comments = {}, set(), [], {}
    with gradebook_db.open_gradebook(root) as book:
        for student, record in sorted(manifest.items()):
            state = submissions.find_state(book, assignment, student, root)
            if state is None or not state.graded:
                not_graded.add(record["lms_id"])
                continue
            scores[record["lms_id"]] = state.score
            comments[record["lms_id"]] = submissions.comments_text(
                submissions.cell_comments(book, assignment, student)
            )
            if state.provisional:
                to_grade.append(student)
    return scores, not_graded, to_grade, comments
