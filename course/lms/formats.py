"""Canvas, Moodle and Blackboard: read their submission exports, write back grades and feedback.

Each learning-management system (LMS) names the files of a "download all submissions" export
its own way; the format is read from the names, so nothing needs configuring:

* Canvas: ``<lastfirst>_[LATE_]<user id>_<file id>_<uploaded name>``, all in one folder. The
  name is the student's sortable name, lower case, without spaces or punctuation; ``LATE`` marks a
  late submission; a file uploaded again under the same name gets ``-1``, ``-2`` before its
  extension. Anonymous grading writes ``anon_<code>`` instead of the name and user id.
* Moodle: ``<Full Name>_<participant id>_assignsubmission_file_<uploaded name>``, or with
  "download submissions in folders" a folder ``<Full Name>_<participant id>_assignsubmission_file``
  (``..._file_`` before Moodle 4.1) holding the uploaded files under their own names.
* Blackboard: ``<assignment>_<username>_attempt_<YYYY-MM-DD-hh-mm-ss>_<uploaded name>``, one
  entry per attempt.
"""

import csv
import io
import re
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import nbformat

from course.build import notebooks, paths
from course.grading.feedback import HideHiddenTests
from course.grading.output_limits import LimitOutputSize
from course.grading.pages import CleanSubmission

LMS_NAMES = {"canvas": "Canvas", "moodle": "Moodle", "blackboard": "Blackboard"}
BLACKBOARD = re.compile(
    r"^(?P<anything>.*?)_(?P<id>[A-Za-z0-9.\-]+)_attempt_"
    r"(?P<attempt>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})(?:_(?P<original>.+)|\.txt)$"
)
MOODLE_FILE = re.compile(
    r"^(?P<name>[^_/]+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<original>.+)$"
)
MOODLE_FOLDER = re.compile(r"^(?P<name>[^_/]+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
CANVAS = re.compile(
    r"^(?P<name>.+?)_(?P<late>LATE_)?(?P<id>\d+)_(?P<file_id>\d+)_(?P<original>.+)$"
)
CANVAS_ANONYMOUS = re.compile(
    r"^(?P<late>LATE_)?(?P<id>anon_[A-Za-z0-9]+)_(?P<file_id>\d+)_(?P<original>.+)$"
)
ATTEMPT_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})-(\d{2})-(\d{2})-(\d{2})")
VALID_STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")
UTF8_NAMES = 0x800  # zip flag: the entry's name is UTF-8


@dataclass(frozen=True)
class Download:
    """One file of an LMS export, as its name describes it."""

    lms: str  # "canvas", "moodle" or "blackboard"
    lms_id: str  # Canvas user id, Moodle participant id or Blackboard username
    name: str  # the student's name as the LMS wrote it ("" when it gives none)
    original: str  # the name the student uploaded the file under ("" for Blackboard's receipt)
    path: str  # the file's path in the export
    attempt: str = ""  # Blackboard's attempt time, "YYYY-MM-DD hh:mm:ss"
    late: bool = False  # Canvas marks late submissions


def parse_download(path):
    """The Download that an export's file path describes, or None when it follows no LMS."""
    path = str(PurePosixPath(str(path).replace("\\", "/")))
    return parse_blackboard(path) or parse_moodle(path) or parse_canvas(path)


def parse_blackboard(path):
    """A Blackboard download, or None."""
    match = BLACKBOARD.match(PurePosixPath(path).name)
    if not match:
        return None
    attempt = ATTEMPT_TIME.sub(r"\1 \2:\3:\4", match["attempt"])
    return Download("blackboard", match["id"], "", match["original"] or "", path, attempt)


def parse_moodle(path):
    """A Moodle download (flat, or in a folder per student), or None."""
    parts = PurePosixPath(path).parts
    for depth, folder in enumerate(parts[:-1]):
        match = MOODLE_FOLDER.match(folder)
        if match:
            original = "/".join(parts[depth + 1 :])
            return Download("moodle", match["id"], match["name"], original, path)
    match = MOODLE_FILE.match(parts[-1])
    if not match:
        return None
    return Download("moodle", match["id"], match["name"], match["original"], path)


def parse_canvas(path):
    """A Canvas download (anonymous or not), or None."""
    filename = PurePosixPath(path).name
    match = CANVAS_ANONYMOUS.match(filename) or CANVAS.match(filename)
    if not match:
        return None
    name = match.groupdict().get("name") or ""
    return Download("canvas", match["id"], name, match["original"], path, late=bool(match["late"]))


def moodle_folder(download):
    """The folder that Moodle's "upload multiple feedback files in a zip" reads for a student."""
    return f"{download.name}_{download.lms_id}_assignsubmission_file_"


def zip_entry_name(info):
    """An entry's name, decoded as UTF-8 when the zip forgot to say so."""
    if info.flag_bits & UTF8_NAMES:
        return info.filename
    try:
        return info.filename.encode("cp437").decode("utf-8")
    except UnicodeError:
        return info.filename


def simplify(text):
    """Lower-case letters and digits only, accents kept: how names are compared."""
    return "".join(ch for ch in unicodedata.normalize("NFC", text).casefold() if ch.isalnum())


# ---------------------------------------------------------------------------------------------
# The roster


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
    if download.lms == "moodle" and " " in download.name:
        first, last = download.name.split(" ", 1)
        return first, last
    return "", download.name or download.lms_id


# ---------------------------------------------------------------------------------------------
# Gradebook CSVs exported by the LMS


def split_records(text):
    """A CSV text cut into records, each with its own line ending (quoted newlines kept)."""
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


def format_record(cells, like):
    """Cells written as a CSV record in the quoting style and line ending of `like`."""
    ending = like[len(like.rstrip("\r\n")) :]
    body = like.rstrip("\r\n")
    quote_all = body.startswith('"') and body.count('","') >= len(parse_record(like)) - 1
    buffer = io.StringIO()
    csv.writer(
        buffer, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL, lineterminator=""
    ).writerow(cells)
    return buffer.getvalue() + ending


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


def fill_gradebook(text, assignment, scores, column="", not_graded=(), held=()):
    """Put `scores` (LMS id -> score) in the lab's column of an LMS gradebook CSV.

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
    if lms == "canvas":
        id_index, grade_index = header.index("ID"), canvas_column(header, assignment, column)
    else:
        id_index, grade_index = header.index("Identifier"), header.index("Grade")
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
        cells[grade_index] = format_score(scores[lms_id])
        filled.add(lms_id)
        out.append(format_record(cells, record))
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


# ---------------------------------------------------------------------------------------------
# Feedback


def feedback_notebook(autograded_path, grades, assignment):
    """The autograded notebook, cleaned and cut as feedback pages are, with the scores on top
    and the grader's comment on an answer below it.

    `grades` are (grade id, score or None when still to grade, maximum, comment) per graded cell.
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
    add_comments(nb, {name: comment for name, _, _, comment in grades if comment})
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("\n".join(lines)))
    return nb


def add_comments(nb, comments):
    """Insert, below each cell named in `comments` (grade id -> text), a cell with its comment."""
    for index in reversed(range(len(nb.cells))):
        name = notebooks.nbgrader_meta(nb.cells[index]).get("grade_id")
        if name in comments:
            text = f"**Comment on {name}:**\n\n{comments[name]}"
            nb.cells.insert(index + 1, nbformat.v4.new_markdown_cell(text))


def feedback_entries(student_id, record, root, assignment, grades):
    """(name in the LMS's feedback zip, bytes) for one collected student; [] without feedback."""
    if not record["collected_as"]:
        return []
    lab = Path(record["collected_as"])
    if record["lms"] == "canvas":
        autograded = paths.autograded(root, student_id, assignment) / lab.name
        if not autograded.exists():
            return []
        nb = feedback_notebook(autograded, grades, assignment)
        name = PurePosixPath(record["download"]).name
        return [(name, nbformat.writes(nb).encode())]
    if record["lms"] == "moodle":
        html = Path(root) / "feedback" / student_id / assignment / f"{lab.stem}.html"
        if not html.exists():
            return []
        download = Download("moodle", record["lms_id"], record["name"], "", record["download"])
        return [(f"{moodle_folder(download)}/{html.name}", html.read_bytes())]
    return []


def write_zip(path, entries):
    """Write (name, bytes) entries to a zip, names flagged as UTF-8."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, data in entries:
            bundle.writestr(name, data)
