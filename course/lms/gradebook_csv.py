"""The gradebook CSV that Canvas or Moodle exports, given back with one lab's scores filled in.

Canvas's gradebook has a column per assignment, matched to the lab by its title (or named with
LMS_COLUMN); Moodle's grading worksheet has one Grade column. The file written back is the
exported one, byte for byte, except the lab's cells of the students graded.
"""

import csv
import io
import re
from pathlib import Path

from course.coursedir import gradebook_db, paths, submissions
from course.lms.collect import read_manifest
from course.lms.names import LMS_NAMES, UPLOAD, simplify

MOODLE_COMMENTS = "Feedback comments"
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


def gradebook_format(header):
    """ "canvas" or "moodle" from a gradebook CSV's header; None when neither."""
    if {"Student", "ID", "SIS User ID"} <= set(header):
        return "canvas"
    if {"Identifier", "Grade"} <= set(header):
        return "moodle"
    return None


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
    """Put `scores` (LMS id -> score) in the lab's column of an LMS gradebook CSV, and into
    Moodle's "Feedback comments" the grader's `comments` (LMS id -> text) of each student scored.

    Returns (new text, LMS name, report lines). Only the lab's cells of matched students change;
    every other cell, the quoting and the line endings are kept. `not_graded` are the LMS ids of
    collected submissions that could not be graded, `held` those whose written answers are still
    to grade: their rows are left blank and reported apart.
    """
    records = split_records(text)
    header = parse_record(records[0]) if records else []
    lms = gradebook_format(header)
    if lms is None:
        raise ValueError(
            "not a Canvas gradebook (columns Student, ID, SIS User ID, ...) nor a Moodle grading "
            "worksheet (columns Identifier, Grade, ...)"
        )
    comment_index = None
    if lms == "canvas":
        id_index, grade_index = header.index("ID"), canvas_column(header, assignment, column)
    else:
        id_index, grade_index = header.index("Identifier"), header.index("Grade")
        if MOODLE_COMMENTS in header:
            comment_index = header.index(MOODLE_COMMENTS)
    out, filled = [records[0]], set()
    unmatched, blank, held_rows = [], [], []
    for record in records[1:]:
        cells = parse_record(record)
        lms_id = lms_row_id(lms, cells, id_index)
        if not lms_id:
            out.append(record)
            continue
        if lms_id not in scores:
            listing = blank if lms_id in not_graded else held_rows if lms_id in held else unmatched
            listing.append(f"{lms_id} ({row_name(lms, header, cells)})")
            out.append(record)
            continue
        changes = {grade_index: format_score(scores[lms_id])}
        if comment_index is not None and (comments or {}).get(lms_id):
            changes[comment_index] = comments[lms_id]
        filled.add(lms_id)
        out.append(with_cells(record, changes))
    report = [f'{len(filled)} grades written in column "{header[grade_index]}"']
    if blank:
        report.append("not graded (see make autograde), left blank: " + ", ".join(blank))
    if held_rows:
        report.append(
            "written answers to grade in the formgrader first, left blank: " + ", ".join(held_rows)
        )
    if unmatched:
        report.append("rows left unchanged, no submission in this export: " + ", ".join(unmatched))
    missing = sorted(set(scores) - filled)
    if missing:
        report.append("graded but not in the LMS gradebook: " + ", ".join(missing))
    return "".join(out), LMS_NAMES[lms], report


def lms_row_id(lms, cells, id_index):
    """The LMS id of a gradebook row ("" for Canvas's "Points Possible" and blank rows)."""
    if id_index >= len(cells):
        return ""
    value = cells[id_index].strip()
    if lms == "moodle":
        match = re.search(r"(\d+)$", value)
        return match.group(1) if match else ""
    return value


def row_name(lms, header, cells):
    """The student's name in a gradebook row, for reports."""
    column = "Student" if lms == "canvas" else "Full name"
    index = header.index(column) if column in header else 0
    return cells[index] if index < len(cells) else ""


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
