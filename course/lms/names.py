"""The file names of Canvas, Moodle and Blackboard exports, and of what goes back to them.

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

import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath

from course.lms.platforms import Platform

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
UPLOAD = "upload"  # what goes back to the LMS: upload/<assignment>/


@dataclass(frozen=True)
class Download:
    """One file of an LMS export, as its name describes it."""

    lms: Platform
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
    return Download(Platform.BLACKBOARD, match["id"], "", match["original"] or "", path, attempt)


def parse_moodle(path):
    """A Moodle download (flat, or in a folder per student), or None."""
    parts = PurePosixPath(path).parts
    for depth, folder in enumerate(parts[:-1]):
        match = MOODLE_FOLDER.match(folder)
        if match:
            original = "/".join(parts[depth + 1 :])
            return Download(Platform.MOODLE, match["id"], match["name"], original, path)
    match = MOODLE_FILE.match(parts[-1])
    if not match:
        return None
    return Download(Platform.MOODLE, match["id"], match["name"], match["original"], path)


def parse_canvas(path):
    """A Canvas download (anonymous or not), or None."""
    filename = PurePosixPath(path).name
    match = CANVAS_ANONYMOUS.match(filename) or CANVAS.match(filename)
    if not match:
        return None
    name = match.groupdict().get("name") or ""
    late = bool(match["late"])
    return Download(Platform.CANVAS, match["id"], name, match["original"], path, late=late)


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


# Characters a terminal or a log reader acts on rather than shows: C0 and C1 controls (escape
# sequences, carriage returns), formats (bidirectional overrides, zero-width characters) and
# line and paragraph separators; and the halves of a surrogate pair that a file name undecodable
# as UTF-8 leaves (os.fsdecode), which no terminal can be sent.
ACTING_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def shown(text):
    """`text` (a name a student or an LMS chose) safe to print: each control character escaped."""
    return "".join(_escaped(ch) if unicodedata.category(ch) in ACTING_CATEGORIES else ch
                   for ch in str(text))  # fmt: skip


def _escaped(ch):
    """A character as Python writes it in a string: \\x1b, \\u202e."""
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
