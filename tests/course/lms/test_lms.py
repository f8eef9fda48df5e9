"""The round trip through Canvas, Moodle and Blackboard: collect, autograde, grades, feedback.

The file-name parsers and the gradebook writer are tested on their own (fast). Then one scratch
course per LMS receives a realistic export of lab 01 (a late resubmission, renamed notebooks, a
name with spaces and accents, a student with two notebooks) and goes through the instructor's
commands once, one written answer graded by hand with a comment and the others not yet; the
tests read what each command left behind.
"""

import csv
import io
import json
import os
import re
import stat
import zipfile
from pathlib import Path

import nbformat
import pytest
from autograded import autograded_scores

from course.coursedir import gradebook_db, notebooks, paths
from course.coursedir.nbgrader_run import instructor as run_instructor
from course.lms import gradebook_csv, names
from course.lms.collect import collect_export
from course.lms.roster import read_roster, roster_entry

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
WRITTEN = "written_stability"
COMMENT = "Part 1 is right; for part 2, square the weights *and* renormalise."
CODE, CODE_COMMENT = "softmax", "Neat: the maximum is subtracted along the same dim."
HIDDEN_LINES = [
    "generator = torch.Generator().manual_seed(101)",
    "for shape in [(7,), (3, 5)",
    "extreme = torch.tensor",
]


def notebook_bytes(nb):
    """A notebook as the bytes a student uploads."""
    return nbformat.writes(nb).encode()


def csv_rows(text):
    """The cells of a CSV text."""
    return list(csv.reader(io.StringIO(text, newline="")))


# ---------------------------------------------------------------------------------------------
# File names


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "lovelaceada_12345_678901_01_softmax_lab.ipynb",
            ("canvas", "12345", "lovelaceada", "01_softmax_lab.ipynb", False),
        ),
        (
            "turingalan_LATE_23456_678902_01_softmax_lab-1.ipynb",
            ("canvas", "23456", "turingalan", "01_softmax_lab-1.ipynb", True),
        ),
        (
            "ångströmzoë_34567_678903_Copy of 01_softmax_lab.ipynb",
            ("canvas", "34567", "ångströmzoë", "Copy of 01_softmax_lab.ipynb", False),
        ),
        (
            "LATE_anon_xY12z_678904_01_softmax_lab.ipynb",
            ("canvas", "anon_xY12z", "", "01_softmax_lab.ipynb", True),
        ),
        (
            "Zoë Ångström_101_assignsubmission_file_01_softmax_lab (1).ipynb",
            ("moodle", "101", "Zoë Ångström", "01_softmax_lab (1).ipynb", False),
        ),
        (
            "Zoë Ångström_101_assignsubmission_file/01_softmax_lab.ipynb",
            ("moodle", "101", "Zoë Ångström", "01_softmax_lab.ipynb", False),
        ),
        (
            "export/Zoë Ångström_101_assignsubmission_file_/work/01_softmax_lab.ipynb",
            ("moodle", "101", "Zoë Ångström", "work/01_softmax_lab.ipynb", False),
        ),
        (
            "Participant_102_assignsubmission_onlinetext_onlinetext.html",
            ("moodle", "102", "Participant", "onlinetext.html", False),
        ),
        (
            "Lab 1 softmax_bob.smith_attempt_2026-10-02-09-00-00_01_softmax_lab.ipynb",
            ("blackboard", "bob.smith", "", "01_softmax_lab.ipynb", False),
        ),
        (
            "Lab 1 softmax_bob.smith_attempt_2026-10-02-09-00-00.txt",
            ("blackboard", "bob.smith", "", "", False),
        ),
    ],
)
def test_export_file_names_are_read_for_each_lms(path, expected):
    download = names.parse_download(path)
    assert download is not None
    assert (download.lms, download.lms_id, download.name, download.original, download.late) == (
        expected
    )
    assert download.path == path


@pytest.mark.parametrize(
    "path", ["01_softmax_lab.ipynb", "submissions/Ada/01_softmax_lab.ipynb", "ada_lab.ipynb"]
)
def test_names_of_no_lms_are_not_read(path):
    assert names.parse_download(path) is None


def test_blackboard_attempt_time_is_readable():
    download = names.parse_download("lab1_ada_attempt_2026-10-01-14-30-05_01_softmax_lab.ipynb")
    assert download.attempt == "2026-10-01 14:30:05"


def test_zip_names_without_the_utf8_flag_are_decoded():
    name = "Zoë Ångström_101_assignsubmission_file_x.ipynb"
    assert names.zip_entry_name(zipfile.ZipInfo(name.encode().decode("cp437"))) == name


def test_roster_matches_by_lms_id_then_by_a_unique_name(tmp_path):
    (tmp_path / "roster.csv").write_text(
        "student_id,first_name,last_name,lms_id\n"
        "s001,Ada,Lovelace,12345\n"
        "s003,Zoë,Ångström,\n"
        "s004,Alan,Turing,\n"
        "s005,Alan,Turing,\n",
        encoding="utf-8",
    )
    roster = read_roster(tmp_path / "roster.csv")
    by = {
        path: (roster_entry(roster, names.parse_download(path)) or {}).get("student_id")
        for path in [
            "whoever_12345_1_a.ipynb",
            "ångströmzoë_777_2_a.ipynb",
            "Zoë Ångström_9_assignsubmission_file_a.ipynb",
            "turingalan_888_3_a.ipynb",
        ]
    }
    assert list(by.values()) == ["s001", "s003", "s003", None]


# ---------------------------------------------------------------------------------------------
# Gradebooks exported by the LMS

CANVAS_GRADEBOOK = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Lab 01: Softmax (98765),"
    "Lab 02: Dot product (98766),Current Score,Final Score\r\n"
    "    Points Possible,,,,,10.00,10.00,(read only),(read only)\r\n"
    '"Lovelace, Ada",12345,s001,ada,Section A,,7,70,35\r\n'
    '"Ångström, Zoë",34567,s003,zoe,"Section B, ""late"" group",,,,\r\n'
    '"Student, Test",99999,,,Section A,,,,\r\n'
)
MOODLE_WORKSHEET = (
    '"Identifier","Full name","Email address","Status","Grade","Maximum Grade",'
    '"Grade can be changed","Last modified (submission)","Last modified (grade)",'
    '"Feedback comments"\n'
    '"Participant 101","Zoë Ångström","zoe@example.org","Submitted for grading","","10.00",'
    '"Yes","Monday, 5 October 2026, 2:30 PM","-","Line one\nline two"\n'
    '"Participant 105","Ada Lovelace","ada@example.org","No submission","","10.00","Yes","-",'
    '"-",""\n'
)


def test_canvas_gradebook_gets_the_lab_column_and_nothing_else():
    scores = {"12345": 8.0, "34567": 5.5, "45678": 3}
    text, name, report = gradebook_csv.fill_gradebook(CANVAS_GRADEBOOK, LAB, scores)
    assert name == "Canvas"
    before, after = csv_rows(CANVAS_GRADEBOOK), csv_rows(text)
    assert [row[5] for row in after[2:]] == ["8", "5.5", ""]
    for old, new in zip(before, after, strict=True):
        assert old[:5] + old[6:] == new[:5] + new[6:]
    assert text.count("\r\n") == CANVAS_GRADEBOOK.count("\r\n")
    assert text.splitlines()[:2] == CANVAS_GRADEBOOK.splitlines()[:2]
    assert text.splitlines()[4] == CANVAS_GRADEBOOK.splitlines()[4]
    assert "99999 (Student, Test)" in "\n".join(report)
    assert "graded but not in the LMS gradebook: 45678" in "\n".join(report)


def test_canvas_column_can_be_named_when_no_title_names_the_lab():
    gradebook = CANVAS_GRADEBOOK.replace("Lab 01: Softmax", "Week 3 homework")
    with pytest.raises(ValueError, match="LMS_COLUMN"):
        gradebook_csv.fill_gradebook(gradebook, LAB, {"12345": 8.0})
    text, _, _ = gradebook_csv.fill_gradebook(
        gradebook, LAB, {"12345": 8.0}, column="Week 3 homework"
    )
    assert csv_rows(text)[2][5] == "8"


def test_moodle_worksheet_gets_the_grade_column_and_keeps_its_quoting():
    text, name, report = gradebook_csv.fill_gradebook(MOODLE_WORKSHEET, LAB, {"101": 7.25})
    assert name == "Moodle"
    rows = csv_rows(text)
    assert rows[1][4] == "7.25" and rows[1][9] == "Line one\nline two"
    assert text.replace('"7.25"', '""', 1) == MOODLE_WORKSHEET
    assert "105 (Ada Lovelace)" in "\n".join(report)


def test_unknown_gradebooks_are_refused():
    with pytest.raises(ValueError, match="not a Canvas gradebook"):
        gradebook_csv.fill_gradebook("name,score\nada,3\n", LAB, {})


# ---------------------------------------------------------------------------------------------
# Collect alone (no grading): Blackboard attempts, zips per student and loose files


def test_blackboard_latest_attempt_wins_and_several_notebooks_are_not_guessed(tmp_path):
    archive = tmp_path / "downloaded" / LAB / "archive"
    archive.mkdir(parents=True)
    early, late = b'{"attempt": 1}', b'{"attempt": 2}'
    with zipfile.ZipFile(archive / "gradebook_lab1.zip", "w") as bundle:
        bundle.writestr(f"Lab1_ada_attempt_2026-10-01-10-00-00_{NOTEBOOK}", early)
        bundle.writestr("Lab1_ada_attempt_2026-10-01-10-00-00.txt", "receipt")
        bundle.writestr("Lab1_ada_attempt_2026-10-02-11-00-00_my lab (1).ipynb", late)
        bundle.writestr("Lab1_bob_attempt_2026-10-01-10-00-00_a.ipynb", early)
        bundle.writestr("Lab1_bob_attempt_2026-10-01-10-00-00_b.ipynb", late)
        bundle.writestr("Lab1_eve_attempt_2026-10-01-10-00-00_notes.pdf", b"%PDF")
    (archive / f"Lab1_cy_attempt_2026-10-03-12-00-00_{NOTEBOOK}").write_bytes(early)
    result = collect_export(tmp_path, LAB)
    submitted = tmp_path / "submitted"
    assert (submitted / "ada" / LAB / NOTEBOOK).read_bytes() == late
    assert "2026-10-02 11:00:00" in (submitted / "ada" / LAB / "timestamp.txt").read_text()
    assert (submitted / "cy" / LAB / NOTEBOOK).exists()
    assert sorted(p.name for p in (submitted / "bob" / LAB).iterdir()) == [
        "a.ipynb",
        "b.ipynb",
        "timestamp.txt",
    ]
    assert not result.ok
    assert "ada: 2 attempts, kept 2026-10-02 11:00:00" in result.message
    assert "ada: my lab (1).ipynb" in result.message
    assert f"several notebooks, NOT collected as {NOTEBOOK}" in result.message
    assert "bob: a.ipynb, b.ipynb" in result.message
    assert "eve: notes.pdf" in result.message


def test_links_fifos_and_link_entries_of_zips_are_refused_and_named(tmp_path):
    archive = tmp_path / "downloaded" / LAB / "archive"
    archive.mkdir(parents=True)
    secret = paths.source_lab(LAB)
    (archive / f"Lab1_eve_attempt_2026-10-01-10-00-00_{NOTEBOOK}").symlink_to(secret)
    os.mkfifo(archive / f"Lab1_mal_attempt_2026-10-01-10-00-00_{NOTEBOOK}")
    (archive / f"Lab1_ada_attempt_2026-10-01-10-00-00_{NOTEBOOK}").write_bytes(b"{}")
    link_entry = zipfile.ZipInfo(f"Lab1_bob_attempt_2026-10-01-10-00-00_{NOTEBOOK}")
    link_entry.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(archive / "gradebook_lab1.zip", "w") as bundle:
        bundle.writestr(link_entry, str(secret))
    result = collect_export(tmp_path, LAB)
    submitted = tmp_path / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["ada"]
    assert not result.ok
    for student, what in [
        ("eve", "a symbolic link"),
        ("mal", "a FIFO"),
        ("bob", "a symbolic link"),
    ]:
        assert (
            f"{student}_attempt_2026-10-01-10-00-00_{NOTEBOOK} from student {student}: {what}"
            in result.message
        )
    assert "BEGIN SOLUTION" not in (submitted / "ada" / LAB / NOTEBOOK).read_text()


# ---------------------------------------------------------------------------------------------
# The round trip, one scratch course per LMS


def submissions(lab_01_work):
    """The notebooks students hand in, as bytes: solution, blank, one catalogued mistake."""
    return {case: notebook_bytes(nb) for case, nb in lab_01_work.items()}


def grade_by_hand(root, student, score, comment):
    """Grade a student's written answer and comment on it, as the formgrader does."""
    with gradebook_db.open_gradebook(root) as book:
        notebook = book.find_submission_notebook(Path(NOTEBOOK).stem, LAB, student)
        grade = next(g for g in notebook.grades if g.name == WRITTEN)
        grade.manual_score, grade.needs_manual_grade = score, False
        next(c for c in notebook.comments if c.name == WRITTEN).manual_comment = comment
        next(c for c in notebook.comments if c.name == CODE).manual_comment = CODE_COMMENT
        book.db.commit()


def read_zip(path):
    """{name: text} of every entry of a zip."""
    with zipfile.ZipFile(path) as bundle:
        return {name: bundle.read(name).decode() for name in bundle.namelist()}


def round_trip(root, export, gradebook_csv, graded_by_hand, roster=None):
    """Put `export` (zip entries) in the archive and run collect, autograde, feedback, grades.

    After autograde, the written answer of `graded_by_hand` is graded (1.75 points, COMMENT);
    feedback and the LMS gradebook are made without --provisional (what they hold is kept as
    "held_zips" and "held_gradebook"), then with it.
    """
    archive = root / "downloaded" / LAB / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as bundle:
        for name, data in export.items():
            bundle.writestr(name, data)
    if roster:
        (root / "roster.csv").write_text(roster, encoding="utf-8")
    (root / "exported.csv").write_bytes(gradebook_csv)
    lms_gradebook = ["--lms-gradebook", str(root / "exported.csv")]
    steps = {
        "collect": run_instructor(root, "collect", LAB),
        "autograde": run_instructor(root, "autograde", LAB),
    }
    grade_by_hand(root, graded_by_hand, 1.75, COMMENT)
    steps["held_feedback"] = run_instructor(root, "feedback", LAB)
    steps["held_zips"] = {p.name: read_zip(p) for p in (root / "upload" / LAB).glob("*.zip")}
    steps["held_grades"] = run_instructor(root, "grades", LAB, *lms_gradebook)
    steps["held_gradebook"] = {
        p.name: p.read_text("utf-8-sig") for p in (root / "upload" / LAB).glob("grades_*.csv")
    }
    steps["feedback"] = run_instructor(root, "feedback", LAB, "--provisional")
    steps["grades"] = run_instructor(root, "grades", LAB, *lms_gradebook, "--provisional")
    steps["grades_csv"] = run_instructor(root, "grades")
    return {"root": root, **steps}


@pytest.fixture(scope="module")
def canvas(course_copy, lab_01_work):
    """A Canvas export of lab 01 taken through the whole cycle, with a roster."""
    root = course_copy(LAB, name="canvas")
    work = submissions(lab_01_work)
    export = {
        f"lovelaceada_12345_678901_{NOTEBOOK}": work["solution"],
        "turingalan_LATE_23456_678902_01_softmax_lab-1.ipynb": work["solution"],
        "ångströmzoë_34567_678903_Copy of 01_softmax_lab.ipynb": work["mistake"],
        "hoppergrace_45678_678904_lab (1).ipynb": work["blank"],
        "hoppergrace_45678_678905_lab (2).ipynb": work["solution"],
        "lamarrhedy_56789_678906_notes_link.html": b"<html></html>",
    }
    roster = (
        "student_id,first_name,last_name,lms_id\n"
        "s001,Ada,Lovelace,12345\n"
        "s003,Zoë,Ångström,\n"
        "s099,Nora,Nobody,99\n"
    )
    gradebook = (
        "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Lab 01: Softmax (98765),"
        "Current Score,Final Score\n"
        "    Points Possible,,,,,10.00,(read only),(read only)\n"
        '"Lovelace, Ada",12345,s001,ada,Section A,,,\n'
        '"Turing, Alan",23456,s002,alan,Section A,,,\n'
        '"Ångström, Zoë",34567,s003,zoe,Section B,,,\n'
        '"Hopper, Grace",45678,s004,grace,Section B,,,\n'
        '"Nobody, Nora",99,s099,nora,Section B,,,\n'
        '"Student, Test",99999,,,Section A,,,\n'
    ).encode()
    return round_trip(root, export, gradebook, "s003", roster)


@pytest.fixture(scope="module")
def moodle(course_copy, lab_01_work):
    """A Moodle export ("download submissions in folders") taken through the whole cycle."""
    root = course_copy(LAB, name="moodle")
    work = submissions(lab_01_work)
    export = {
        f"Zoë Ångström_101_assignsubmission_file/{NOTEBOOK}": work["solution"],
        "José María Núñez_102_assignsubmission_file/01_softmax_lab (1).ipynb": work["blank"],
        f"Grace Hopper_103_assignsubmission_file/{NOTEBOOK}": work["mistake"],
        "Grace Hopper_103_assignsubmission_file/scratch.ipynb": work["blank"],
        "Grace Hopper_103_assignsubmission_onlinetext/onlinetext.html": b"<p>done</p>",
    }
    worksheet = (
        '"Identifier","Full name","Email address","Status","Grade","Maximum Grade",'
        '"Grade can be changed","Last modified (submission)","Last modified (grade)",'
        '"Feedback comments"\n'
        '"Participant 101","Zoë Ångström","zoe@example.org","Submitted for grading","",'
        '"10.00","Yes","Monday, 5 October 2026, 2:30 PM","-",""\n'
        '"Participant 102","José María Núñez","jose@example.org","Submitted for grading","",'
        '"10.00","Yes","Monday, 5 October 2026, 3:00 PM","-",""\n'
        '"Participant 103","Grace Hopper","grace@example.org","Submitted for grading","",'
        '"10.00","Yes","Monday, 5 October 2026, 4:00 PM","-",""\n'
        '"Participant 104","Alan Turing","alan@example.org","No submission","",'
        '"10.00","Yes","-","-",""\n'
    ).encode()
    return round_trip(root, export, worksheet, "103")


def test_canvas_collect_reads_the_export_and_reports_what_needs_a_look(canvas):
    result = canvas["collect"]
    out = result.stdout
    assert result.returncode == 1, out + result.stderr  # one student handed in two notebooks
    assert f"{LAB}: Canvas export, 4 students in submitted/ (1 late)" in out
    submitted = canvas["root"] / "submitted"
    for student in ["s001", "23456", "s003"]:
        assert (submitted / student / LAB / NOTEBOOK).exists(), out
    assert "23456 (turingalan): 01_softmax_lab-1.ipynb" in out
    assert "s003 (ångströmzoë): Copy of 01_softmax_lab.ipynb" in out
    assert "45678 (hoppergrace): lab (1).ipynb, lab (2).ipynb" in out
    assert not (submitted / "45678" / LAB / NOTEBOOK).exists()
    assert "56789 (lamarrhedy): notes_link.html" in out
    assert "in the export but not in roster.csv:\n  23456 (turingalan)" in out
    assert "in roster.csv without a submission:\n  s099 (Nora Nobody)" in out
    manifest = json.loads((canvas["root"] / "downloaded" / LAB / "collected.json").read_text())
    assert manifest["students"]["s001"]["lms_id"] == "12345"
    assert manifest["students"]["23456"]["late"] is True


def test_canvas_autograde_grades_the_collected_notebooks(canvas):
    assert "3 students graded" in canvas["autograde"].stdout, canvas["autograde"].stdout
    scores = autograded_scores(canvas["root"], LAB)
    assert scores["s001"][0] == scores["s001"][1] == scores["23456"][0]
    assert 0 < scores["s003"][0] < scores["s003"][1]


def test_canvas_gradebook_is_filled_for_matched_students_only(canvas):
    result = canvas["grades"]
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    written = (canvas["root"] / "upload" / LAB / "grades_canvas.csv").read_bytes()
    original = (canvas["root"] / "exported.csv").read_bytes()
    assert written.startswith(b"\xef\xbb\xbf")
    before = csv_rows(original.decode("utf-8-sig"))
    after = csv_rows(written.decode("utf-8-sig"))
    scores = autograded_scores(canvas["root"], LAB)
    lab = {row[1]: row[5] for row in after[2:]}
    assert lab == {
        "12345": f"{scores['s001'][0]:g}",
        "23456": f"{scores['23456'][0]:g}",
        "34567": f"{round(scores['s003'][0] + 1.75, 2):g}",
        "45678": "",
        "99": "",
        "99999": "",
    }
    for old, new in zip(before, after, strict=True):
        assert old[:5] + old[6:] == new[:5] + new[6:]
    assert '3 grades written in column "Lab 01: Softmax (98765)"' in out
    assert "99 (Nobody, Nora), 99999 (Student, Test)" in out
    assert "not graded (see make autograde), left blank: 45678 (Hopper, Grace)" in out
    assert "written answers not graded yet (counted as 0), see the formgrader: 23456, s001" in out


def test_canvas_feedback_zip_keeps_the_downloaded_names_and_hides_hidden_tests(canvas):
    result = canvas["feedback"]
    assert result.returncode == 0, result.stdout + result.stderr
    zipped = "Canvas: feedback of 3 students in upload/01_softmax/feedback_canvas.zip"
    assert zipped in result.stdout
    with zipfile.ZipFile(canvas["root"] / "upload" / LAB / "feedback_canvas.zip") as bundle:
        names = sorted(bundle.namelist())
        texts = {name: bundle.read(name).decode() for name in names}
    assert names == sorted(
        [
            f"lovelaceada_12345_678901_{NOTEBOOK}",
            "turingalan_LATE_23456_678902_01_softmax_lab-1.ipynb",
            "ångströmzoë_34567_678903_Copy of 01_softmax_lab.ipynb",
        ]
    )
    mistake = texts["ångströmzoë_34567_678903_Copy of 01_softmax_lab.ipynb"]
    assert nbformat.reads(mistake, as_version=4).cells[0].source.startswith(f"# Feedback on {LAB}")
    assert "| written_stability | 1.75 / 2 |" in mistake
    assert "hidden tests: the code is not shown" in mistake
    assert "normalised over the last dimension whatever" in mistake
    for text in texts.values():
        for hidden_line in HIDDEN_LINES:
            assert hidden_line not in text


def test_moodle_collect_reads_folders_names_with_accents_and_extra_notebooks(moodle):
    result = moodle["collect"]
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert f"{LAB}: Moodle export, 3 students in submitted/" in out
    assert "102 (José María Núñez): 01_softmax_lab (1).ipynb" in out
    assert f"103 (Grace Hopper): {NOTEBOOK}, scratch.ipynb" in out
    for student in ["101", "102", "103"]:
        assert (paths.submitted(moodle["root"], student, LAB) / NOTEBOOK).exists()


def test_moodle_worksheet_is_filled_by_participant_id(moodle):
    result = moodle["grades"]
    assert result.returncode == 0, result.stdout + result.stderr
    written = (moodle["root"] / "upload" / LAB / "grades_moodle.csv").read_text()
    original = (moodle["root"] / "exported.csv").read_text()
    scores = autograded_scores(moodle["root"], LAB)
    grades = {row[0]: row[4] for row in csv_rows(written)[1:]}
    assert grades == {
        "Participant 101": f"{scores['101'][0]:g}",
        "Participant 102": "0",
        "Participant 103": f"{round(scores['103'][0] + 1.75, 2):g}",
        "Participant 104": "",
    }
    for old, new in zip(csv_rows(original), csv_rows(written), strict=True):
        assert old[:4] + old[5:9] == new[:4] + new[5:9]  # the grade and the comments change
    comments = {row[0]: row[9] for row in csv_rows(written)[1:]}
    assert comments["Participant 103"] == f"{CODE}: {CODE_COMMENT}\n\n{WRITTEN}: {COMMENT}"
    assert "104 (Alan Turing)" in result.stdout


def test_moodle_feedback_zip_has_a_folder_per_student_as_moodle_reads_it(moodle):
    result = moodle["feedback"]
    assert result.returncode == 0, result.stdout + result.stderr
    with zipfile.ZipFile(moodle["root"] / "upload" / LAB / "feedback_moodle.zip") as bundle:
        names = sorted(bundle.namelist())
        html = bundle.read(f"Grace Hopper_103_assignsubmission_file_/{LAB}_lab.html").decode()
    assert names == sorted(
        f"{folder}_assignsubmission_file_/{LAB}_lab.html"
        for folder in ["Zoë Ångström_101", "José María Núñez_102", "Grace Hopper_103"]
    )
    assert "hidden tests: the code is not shown" in html
    for hidden_line in HIDDEN_LINES:
        assert hidden_line not in html


# ---------------------------------------------------------------------------------------------
# Written answers not graded yet: never shown as final; a grader's comment reaches every channel


def feedback_html(course, student):
    """The feedback page of a student."""
    return (course["root"] / "feedback" / student / LAB / f"{Path(NOTEBOOK).stem}.html").read_text()


def test_the_summary_counts_the_answers_to_grade_and_flags_late_work_without_penalty(canvas):
    out = canvas["autograde"].stdout
    assert "3 written answers to grade by hand in the formgrader" in out, out
    assert "  23456 (turingalan): late, no penalty: no due date set" in out


def test_feedback_waits_for_the_written_answers_unless_asked_for_early(canvas, moodle):
    out = canvas["held_feedback"].stdout
    assert canvas["held_feedback"].returncode == 0, out + canvas["held_feedback"].stderr
    assert f"{LAB}: feedback of 1 student written to feedback/" in out
    assert (
        "no feedback yet, written answers to grade in the formgrader first: "
        "23456 (turingalan), s001 (Lovelace, Ada)" in out
    )
    assert "PROVISIONAL=1" in out
    canvas_zip = canvas["held_zips"]["feedback_canvas.zip"]
    assert list(canvas_zip) == ["ångströmzoë_34567_678903_Copy of 01_softmax_lab.ipynb"]
    moodle_zip = moodle["held_zips"]["feedback_moodle.zip"]
    assert sorted(moodle_zip) == [  # 102 handed in nothing: nothing to grade by hand
        f"Grace Hopper_103_assignsubmission_file_/{LAB}_lab.html",
        f"José María Núñez_102_assignsubmission_file_/{LAB}_lab.html",
    ]
    assert (
        "provisional, written answers to be graded: 23456 (turingalan), s001 (Lovelace, Ada)"
        in canvas["feedback"].stdout
    )


def test_feedback_says_to_be_graded_for_an_answer_not_graded_and_in_the_total(canvas):
    pending = feedback_html(canvas, "s001")
    assert re.search(r"\(Score: to be graded, [\d.]+ / 10\.0 so far, 1 written answer", pending)
    assert "Written response</a> (Score: to be graded / 2.0)" in pending
    assert "Score: 0.0 / 2.0" not in pending
    graded = feedback_html(canvas, "s003")
    assert "to be graded" not in graded and "Comments:</b>" in graded and "renormalise" in graded
    assert "div.output_area pre, div.input_area pre {\n  white-space: pre-wrap;" in graded


def test_the_hidden_test_line_says_whether_they_passed(canvas):
    mistake = feedback_html(canvas, "s003")
    assert "hidden tests: the code is not shown; the error it raised is below" in mistake
    assert "hidden tests: the code is not shown; they passed" in mistake
    solution = feedback_html(canvas, "s001")
    assert "error is below" not in solution


def test_the_lms_feedback_has_the_comment_and_the_answers_to_grade(canvas, moodle):
    canvas_zip = read_zip(canvas["root"] / "upload" / LAB / "feedback_canvas.zip")
    graded = nbformat.reads(canvas_zip["ångströmzoë_34567_678903_Copy of 01_softmax_lab.ipynb"], 4)
    comment = next(cell for cell in graded.cells if COMMENT in cell.source)
    assert comment.source.startswith(f"**Comment on {WRITTEN}:**")
    sources = [cell.source for cell in graded.cells]
    on_code = sources.index(f"**Comment on {CODE}:**\n\n{CODE_COMMENT}")
    assert notebooks.nbgrader_meta(graded.cells[on_code - 1]).get("grade_id") == CODE
    assert f"| {WRITTEN} | 1.75 / 2 |" in graded.cells[0].source
    assert f"| {WRITTEN} | to be graded / 2 |" in canvas_zip[f"lovelaceada_12345_678901_{NOTEBOOK}"]
    moodle_zip = read_zip(moodle["root"] / "upload" / LAB / "feedback_moodle.zip")
    assert "renormalise" in moodle_zip[f"Grace Hopper_103_assignsubmission_file_/{LAB}_lab.html"]
    assert (
        "Score: to be graded"
        in moodle_zip[f"Zoë Ångström_101_assignsubmission_file_/{LAB}_lab.html"]
    )


def test_lms_gradebook_leaves_scores_not_final_blank_unless_asked(canvas, moodle):
    rows = csv_rows(canvas["held_gradebook"]["grades_canvas.csv"])
    assert {row[1]: row[5] for row in rows[2:5]} == {
        "12345": "",
        "23456": "",
        "34567": f"{round(autograded_scores(canvas['root'], LAB)['s003'][0] + 1.75, 2):g}",
    }
    out = canvas["held_grades"].stdout
    assert "to grade in the formgrader first, left blank: 12345 (Lovelace, Ada), 23456" in out
    assert "PROVISIONAL=1" in out
    worksheet = csv_rows(moodle["held_gradebook"]["grades_moodle.csv"])
    graded = f"{round(autograded_scores(moodle['root'], LAB)['103'][0] + 1.75, 2):g}"
    assert [row[4] for row in worksheet[1:4]] == ["", "0", graded]


def test_grades_csv_marks_the_provisional_scores(canvas):
    result = canvas["grades_csv"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "provisional" in result.stdout
        and "23456 (turingalan) (01_softmax), s001 (Lovelace, Ada) (01_softmax)" in result.stdout
    )
    written = (canvas["root"] / "grades.csv").read_text()
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(written))}
    assert rows["s001"]["provisional"] == LAB and rows["23456"]["provisional"] == LAB
    assert rows["s003"]["provisional"] == ""
    assert float(rows["s001"][LAB]) == autograded_scores(canvas["root"], LAB)["s001"][0]


def test_a_name_without_a_roster_is_kept_as_the_lms_wrote_it(canvas):
    with gradebook_db.open_gradebook(canvas["root"]) as book:
        student = book.find_student("23456")
        assert (student.last_name, student.first_name) == ("turingalan", "")
        ada = book.find_student("s001")
        assert (ada.last_name, ada.first_name) == ("Lovelace", "Ada")


def test_moodle_worksheet_keeps_each_cells_quoting_and_gets_the_comments():
    worksheet = (
        '"Identifier","Full name","Status","Grade","Maximum Grade","Feedback comments"\n'
        '"Participant 101","Zoë Ångström","Submitted for grading",,10.00,""\n'
        '"Participant 105","Ada Lovelace","No submission",,10.00,""\n'
    )
    comments = {"101": 'softmax: subtract the "maximum" first\n\nwritten_stability: say why'}
    text, _, _ = gradebook_csv.fill_gradebook(worksheet, LAB, {"101": 7.5}, comments=comments)
    first = text.splitlines()[1]
    assert first.startswith('"Participant 101","Zoë Ångström","Submitted for grading",7.5,10.00,')
    assert csv_rows(text)[1][5] == comments["101"]
    assert text.splitlines()[-1] == worksheet.splitlines()[-1]
