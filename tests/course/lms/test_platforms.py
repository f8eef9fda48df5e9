"""Each LMS is one record (course/lms/platforms.py), and the feedback zip goes by the
submission's state: a notebook that a stopped autograde left unexecuted never reaches the LMS."""

import json

import nbformat
import pytest

from course.coursedir import paths
from course.coursedir.submissions import SubmissionState
from course.lms import feedback_zip, names
from course.lms.platforms import Feedback, Platform, described, gradebook_platform

LAB = "01_softmax"


def test_each_lms_is_known_by_its_record_and_kept_by_its_name():
    assert [platform.label for platform in Platform] == ["Canvas", "Moodle", "Blackboard"]
    assert json.dumps({"lms": Platform.MOODLE}) == '{"lms": "moodle"}'  # the manifest's value
    assert Platform("canvas") is Platform.CANVAS and Platform.CANVAS == "canvas"
    assert described({"moodle", "canvas"}) == "Canvas + Moodle" and described(set()) == "no LMS"
    assert [p.feedback for p in Platform] == [Feedback.NOTEBOOK, Feedback.PAGE, None]


def test_a_download_names_its_lms_by_the_record():
    moodle = names.parse_download("Ada Lovelace_101_assignsubmission_file_lab.ipynb")
    assert moodle.lms is Platform.MOODLE and moodle.lms.full_names
    canvas = names.parse_download("lovelaceada_12345_678901_lab.ipynb")
    assert canvas.lms is Platform.CANVAS and not canvas.lms.full_names


@pytest.mark.parametrize(
    ("header", "expected"),
    [(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"], Platform.CANVAS),
     (["Identifier", "Full name", "Grade", "Feedback comments"], Platform.MOODLE),
     (["name", "score"], None)],
)  # fmt: skip
def test_a_gradebook_tells_its_lms_by_its_header(header, expected):
    assert gradebook_platform(header) is expected


def test_the_moodle_id_is_the_participants_number():
    layout = Platform.MOODLE.gradebook
    assert layout.row_id(["Participant 101", "Ada"], 0) == "101"
    assert layout.row_id(["", "Ada"], 0) == "" and layout.row_id([], 3) == ""
    assert Platform.CANVAS.gradebook.row_id(["Ada", " 12345 "], 1) == "12345"


def test_an_unexecuted_autograded_notebook_gets_no_feedback_in_the_zip(tmp_path):
    notebook = paths.lab_filename(LAB)
    folder = paths.autograded(tmp_path, "s001", LAB)
    folder.mkdir(parents=True)
    unexecuted = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    nbformat.write(unexecuted, folder / notebook)
    record = {"collected_as": notebook, "lms": "canvas", "lms_id": "12345", "name": "",
              "download": f"lovelaceada_12345_678901_{notebook}"}  # fmt: skip
    not_graded = SubmissionState("s001", False, 0.0, 10.0, 0.0, ())
    assert feedback_zip.feedback_entries(not_graded, record, tmp_path, LAB, []) == []
    assert feedback_zip.feedback_entries(None, record, tmp_path, LAB, []) == []
    manifest = {"s001": record}
    lines = feedback_zip.lms_feedback(LAB, manifest, {"s001": not_graded}, tmp_path)
    assert lines == [f"  Canvas: feedback of 0 students in upload/{LAB}/feedback_canvas.zip",
                     "    no feedback (not graded): s001"]  # fmt: skip
