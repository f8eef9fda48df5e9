"""Collect a learning-management system's export of one lab into submitted/.

Put what "download all submissions" gave you in ``downloaded/<assignment>/archive/``: the zip of
the whole class, one zip per student, or the files unpacked. Canvas, Moodle and Blackboard names
are recognised (see ``course.lms.names``). Each student's notebook lands in
``submitted/<student>/<assignment>/<assignment>_lab.ipynb`` with a ``timestamp.txt``, and
``downloaded/<assignment>/collected.json`` remembers each one's LMS, id and downloaded name, for
the grades and the feedback that go back.

The export is read without following a link (``course.coursedir.safe_copy``): a link, a FIFO,
a socket or a device, in the folder or as an entry of a zip, is refused and named, and so is
what goes beyond the limits of files and bytes.
"""

import io
import json
import os
import shutil
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from course.coursedir import gradebook_db, paths, safe_copy
from course.coursedir.words import counted
from course.grading.kernels.policy import SUBMITTED_FILE_BYTES
from course.lms.names import VALID_STUDENT_ID, parse_download, shown, zip_entry_name
from course.lms.platforms import described
from course.lms.roster import read_roster, roster_entry, split_name

MANIFEST = "collected.json"
ROSTER = "roster.csv"
EXPECTED_NAMES = (
    "expected a Canvas, Moodle or Blackboard name, e.g. "
    "lovelaceada_12345_678901_<file>.ipynb, Ada Lovelace_123_assignsubmission_file_<file>.ipynb "
    "or <anything>_<student>_attempt_<YYYY-MM-DD-hh-mm-ss>_<file>.ipynb"
)
EXPORT_LIMITS = safe_copy.Limits(files=20_000, total_bytes=2**30, file_bytes=100 * 2**20)
TOO_LARGE = f"larger than {SUBMITTED_FILE_BYTES >> 20} MiB, which the grader reads whole"
ZIP_DEPTH = 2  # the class's zip, and one zip per student inside it


@dataclass
class ExportFile:
    """A file of the export: its path there, its content and its time."""

    path: str
    data: bytes
    time: datetime


@dataclass
class Collected:
    """What a collect run did: success, the summary, and the names for the gradebook."""

    ok: bool
    message: str
    names: dict = field(default_factory=dict)


def skipped(path):
    """True for the clutter that zip tools and Jupyter leave (__MACOSX, .DS_Store, checkpoints)."""
    parts = PurePosixPath(path).parts
    return any(part.startswith(".") or part == "__MACOSX" for part in parts)


def skipped_entry(name, is_folder):
    """True for a file or folder of the export that `skipped` leaves out."""
    return skipped(name)


def zip_files(bundle, walk, depth=1):
    """The files of a zip, and of the zips of unreadable name inside it (one per student).

    Entries that are links, FIFOs, sockets or devices, and what goes beyond the limits of
    `walk`, are refused in it.
    """
    found = []
    for info in bundle.infolist():
        name = zip_entry_name(info)
        if info.is_dir() or skipped(name):
            continue
        reason = safe_copy.kind_of(info.external_attr >> 16)
        if reason:
            walk.refuse(name, reason)
            continue
        if not walk.take(name, info.file_size):
            continue
        data = bundle.read(info)
        if name.lower().endswith(".zip") and parse_download(name) is None:
            found.extend(inner_zip_files(data, name, walk, depth))
            continue
        found.append(ExportFile(name, data, datetime(*info.date_time)))
    return found


def inner_zip_files(data, name, walk, depth):
    """The files of the zip `name` found inside another, unless zips nest too deep."""
    if depth >= ZIP_DEPTH:
        walk.refuse(name, f"a zip inside {depth} zips")
        return []
    with zipfile.ZipFile(io.BytesIO(data)) as inner:
        return zip_files(inner, walk, depth + 1)


def export_files(archive):
    """(every file of the export in `archive`: zips opened, loose files as they are; Copied)."""
    walk = safe_copy.new_walk(os.getuid(), EXPORT_LIMITS, skipped_entry)
    found = []
    loose = safe_copy.read_walk(Path(archive).resolve(), walk)  # archive/ may be your own link
    for relative, (data, mtime) in sorted(loose.items()):
        if relative.lower().endswith(".zip") and parse_download(relative) is None:
            with zipfile.ZipFile(io.BytesIO(data)) as bundle:
                found.extend(zip_files(bundle, walk))
        else:
            found.append(ExportFile(relative, data, datetime.fromtimestamp(mtime)))
    return found, walk.copied


def refusal_line(refusal):
    """A refused entry of the export, with its student when its name gives one."""
    download = parse_download(refusal.path)
    student = f" from student {download.lms_id}" if download else ""
    return f"{refusal.path}{student}: {refusal.reason}"


def is_notebook(download):
    """True when the student's file is a notebook."""
    return download.original.lower().endswith(".ipynb")


def collect_export(root, assignment):
    """Collect downloaded/<assignment>/archive/ into submitted/; a Collected."""
    root = Path(root)
    archive = root / "downloaded" / assignment / "archive"
    if not archive.is_dir():
        return Collected(
            False, f"{assignment}: put the LMS export in downloaded/{assignment}/archive/"
        )
    try:
        files, copied = export_files(archive)
    except ValueError as error:
        return Collected(False, f"{assignment}: {shown(error)}")
    too_large = [f for f in files if len(f.data) > SUBMITTED_FILE_BYTES]
    files = [f for f in files if len(f.data) <= SUBMITTED_FILE_BYTES]
    parsed = [(f, parse_download(f.path)) for f in files]
    unreadable = sorted(f.path for f, d in parsed if d is None and f.path.endswith(".ipynb"))
    by_student = {}
    for export_file, download in parsed:
        if download is not None:
            by_student.setdefault((download.lms, download.lms_id), []).append(
                (export_file, download)
            )
    roster = read_roster(root / ROSTER)
    report = Report(assignment)
    manifest, names, matched_rows = {}, {}, set()
    for (_, lms_id), entries in sorted(by_student.items()):
        row = roster_entry(roster, entries[0][1]) if roster else None
        student = row["student_id"] if row else lms_id
        if row:
            matched_rows.add(row["student_id"])
        elif roster:
            report.not_in_roster.append(f"{lms_id} ({entries[0][1].name or 'no name'})")
        if not VALID_STUDENT_ID.match(student) or student in manifest:
            report.bad_ids.append(f"{student} ({entries[0][1].path})")
            continue
        record = collect_student(root, assignment, student, entries, report)
        if record:
            manifest[student] = record
            first, last = (
                (row["first_name"], row["last_name"]) if row else split_name(entries[0][1])
            )
            names[student] = (first, last)
    report.no_submission = [
        f"{row['student_id']} ({row['first_name']} {row['last_name']})".replace(" )", ")")
        for row in roster
        if row["student_id"] not in matched_rows
    ]
    report.unreadable = unreadable
    report.refused = [refusal_line(refusal) for refusal in copied.refused] + [
        refusal_line(safe_copy.Refusal(f.path, TOO_LARGE)) for f in too_large
    ]
    write_manifest(root, assignment, manifest)
    return Collected(report.ok(), report.text(manifest), names)


def collect_student(root, assignment, student, entries, report):
    """Place one student's latest notebook(s) in submitted/; their manifest record, or None."""
    lab = paths.lab_filename(assignment)
    submitted = [(f, d) for f, d in entries if is_notebook(d)]
    first = entries[0][1]
    label = f"{student} ({first.name})" if first.name and first.name != student else student
    if not submitted:
        found = ", ".join(sorted(PurePosixPath(d.original or d.path).name for _, d in entries))
        report.no_notebook.append(f"{label}: {found}")
        return None
    attempts = sorted({d.attempt for _, d in submitted})
    latest = [(f, d) for f, d in submitted if d.attempt == attempts[-1]]
    if len(attempts) > 1:
        report.latest.append(f"{label}: {len(attempts)} attempts, kept {attempts[-1]}")
    folder = paths.submitted(root, student, assignment)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    names = [PurePosixPath(d.original).name for _, d in latest]
    if len(latest) == 1:
        (folder / lab).write_bytes(latest[0][0].data)
        if names[0] != lab:
            report.renamed.append(f"{label}: {names[0]}")
        collected_as = lab
    else:
        for (export_file, _), name in zip(latest, names, strict=True):
            (folder / name).write_bytes(export_file.data)
        collected_as = lab if lab in names else None
        listing = f"{label}: {', '.join(sorted(names))}"
        (report.several_ok if collected_as else report.several).append(listing)
    chosen = next((d for (_, d), n in zip(latest, names, strict=True) if n == lab), latest[0][1])
    time = attempts[-1] or max(f.time for f, _ in latest).strftime("%Y-%m-%d %H:%M:%S")
    (folder / "timestamp.txt").write_text(time + "\n")
    if first.late:
        report.late.append(label)
    report.lms.add(first.lms)
    return {
        "lms": first.lms,
        "lms_id": first.lms_id,
        "name": first.name,
        "download": chosen.path,
        "collected_as": collected_as or "",
        "late": any(d.late for _, d in latest),
        "timestamp": time,
    }


def write_manifest(root, assignment, manifest):
    """Write downloaded/<assignment>/collected.json."""
    path = Path(root) / "downloaded" / assignment / MANIFEST
    path.write_text(json.dumps({"assignment": assignment, "students": manifest}, indent=1) + "\n")


def read_manifest(root, assignment):
    """Student id -> record of the last collect of `assignment` ({} if it was never collected)."""
    path = Path(root) / "downloaded" / assignment / MANIFEST
    if not path.exists():
        return {}
    return json.loads(path.read_text())["students"]


def record_names(root, names):
    """Put the students' names (student id -> (first, last)) in the course's gradebook."""
    if not names:
        return
    with gradebook_db.open_gradebook(root) as book:
        for student, (first, last) in names.items():
            book.update_or_create_student(student, first_name=first, last_name=last)


@dataclass
class Report:
    """The lists that a collect summary prints."""

    assignment: str
    lms: set = field(default_factory=set)
    renamed: list = field(default_factory=list)
    latest: list = field(default_factory=list)
    late: list = field(default_factory=list)
    several: list = field(default_factory=list)
    several_ok: list = field(default_factory=list)
    no_notebook: list = field(default_factory=list)
    bad_ids: list = field(default_factory=list)
    unreadable: list = field(default_factory=list)
    refused: list = field(default_factory=list)
    not_in_roster: list = field(default_factory=list)
    no_submission: list = field(default_factory=list)

    def ok(self):
        """True when every file was collected and every student has one lab notebook."""
        return not (
            self.several or self.no_notebook or self.bad_ids or self.unreadable or self.refused
        )

    def text(self, manifest):
        """The summary printed by `make collect`."""
        lab = paths.lab_filename(self.assignment)
        systems = described(self.lms)
        late = f" ({len(self.late)} late)" if self.late else ""
        lines = [
            f"{self.assignment}: {systems} export, {counted(len(manifest), 'student')} in "
            f"submitted/{late}"
        ]
        sections = [
            (f"handed in under another name, collected as {lab}", self.renamed),
            ("several attempts, the latest collected", self.latest),
            ("late", self.late),
            (f"several notebooks, {lab} graded, the others kept beside it", self.several_ok),
            (f"several notebooks, NOT collected as {lab}: nothing is guessed", self.several),
            ("NOT collected, no notebook", self.no_notebook),
            ("NOT collected, not a usable student id", self.bad_ids),
            (f"NOT collected, no student id in the file name ({EXPECTED_NAMES})", self.unreadable),
            ("NOT collected, refused (only files and folders, within the limits)", self.refused),
            (f"in the export but not in {ROSTER}", self.not_in_roster),
            (f"in {ROSTER} without a submission", self.no_submission),
        ]
        for title, items in sections:
            if items:
                lines.append(f"{title}:")
                lines.extend(f"  {shown(item)}" for item in items)  # names the LMS chose
        return "\n".join(lines)
