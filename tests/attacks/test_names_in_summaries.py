"""Names that a student or an LMS chose reach the instructor's terminal escaped.

An LMS export's file names hold the student's name and the name they uploaded under; a student
who puts terminal escapes there (a window title, a cleared screen, a forged line) must not see
them acted on when `make collect` prints its summary. The exchange of a hub is attacked the same
way in tests/deploy/test_course_exchange.py.
"""

import unicodedata
import zipfile

from course.coursedir import paths
from course.lms.collect import collect_export
from course.lms.names import shown

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\r01_softmax: 0 late\u202e"


def printable(text):
    """True when `text` holds no character a terminal acts on (but newlines between lines)."""
    return not any(
        unicodedata.category(ch) in ("Cc", "Cf") for line in text.split("\n") for ch in line
    )


def test_escapes_in_an_lms_export_are_shown_escaped_in_the_collect_summary(tmp_path):
    archive = tmp_path / "downloaded" / LAB / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "gradebook_lab1.zip", "w") as bundle:
        bundle.writestr(f"Lab1_ada_attempt_2026-10-01-10-00-00_{ESCAPES}.ipynb", b"{}")
        bundle.writestr(f"Lab1_bob_attempt_2026-10-01-10-00-00_{ESCAPES}.pdf", b"%PDF")
    (archive / f"{ESCAPES}lab_{NOTEBOOK}").write_bytes(b"{}")  # no LMS's name: unreadable
    result = collect_export(tmp_path, LAB)
    assert printable(result.message), repr(result.message)
    assert f"ada: {shown(ESCAPES)}.ipynb" in result.message
    assert f"bob: {shown(ESCAPES)}.pdf" in result.message
    assert shown(ESCAPES) == "\\x1b]0;pwned\\x07\\x1b[2J\\x0d01_softmax: 0 late\\u202e"


def test_shown_keeps_names_in_any_script_and_escapes_only_what_acts():
    assert shown("Zoë Ångström 李雷 Ада") == "Zoë Ångström 李雷 Ада"
    assert shown("a\tb\nc\x9bd\u2028e\udcff") == "a\\x09b\\x0ac\\x9bd\\u2028e\\udcff"
