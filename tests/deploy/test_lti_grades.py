"""The AGS sender (course/lms/lti.py) against the Moodle 4.5 stand-in (lti_platform.py).

A gradebook made with nbgrader's API holds lab 01 for four students: Ada graded in full, Alan
with a written answer still to grade, Bea graded but never launched from the LMS, Cy collected
but not graded. The launches are recorded as the hub records them (deploy/lti_login.py), the
course linked to the stand-in's course ATTN; a second course on the same site, SANDBOX, has an
activity of the same lab.
"""

import json
import shutil
from pathlib import Path

import nbformat
import pytest
import requests
from lti_platform import AGS_SCOPES, ATTN, SANDBOX, Activity, Person, PlatformStandIn

from course.coursedir import gradebook_db, paths
from course.lms import launches, lti

LAB = "01_softmax"
ADA = Person("3", "ada", "Ada", "Lovelace")
ALAN = Person("4", "alan", "Alan", "Turing")
ACTIVITY = Activity("7", "3", "5", LAB, "Lab 01: softmax")
OTHER = Activity("8", "4", "6", "02_attention", "Lab 02: attention")
ELSEWHERE = Activity("20", "12", "40", LAB, "Lab 01 (sandbox course)", course=SANDBOX)


def add_submission(book, student, auto, written):
    """A student's lab 01 in the gradebook: autograded `auto` / 8, written `written` (or None)."""
    book.add_student(student)
    book.add_submission(LAB, student)
    notebook = paths.lab_filename(LAB).removesuffix(".ipynb")
    tests = book.find_grade("tests", notebook, LAB, student)
    tests.auto_score, tests.needs_manual_grade = auto, False
    answer = book.find_grade("written", notebook, LAB, student)
    answer.needs_manual_grade = written is None
    answer.manual_score = written
    book.db.commit()


def grade_written_answer(root, student, score):
    """The instructor grades a student's written answer (None: to be graded again)."""
    with gradebook_db.open_gradebook(root) as book:
        notebook = paths.lab_filename(LAB).removesuffix(".ipynb")
        answer = book.find_grade("written", notebook, LAB, student)
        answer.manual_score, answer.needs_manual_grade = score, score is None
        book.db.commit()


def mark_autograded(root, student):
    """An executed autograded notebook, as make autograde leaves it."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1", execution_count=1)])
    folder = paths.autograded(root, student, LAB)
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / paths.lab_filename(LAB))


def platform_of(stand_in):
    """The stand-in as the hub records the platform of a launch."""
    endpoints = stand_in.endpoints
    return launches.LtiPlatform(endpoints["issuer"], endpoints["client_id"],
                                endpoints["deployment_id"], endpoints["token_url"])  # fmt: skip


def record_launches(root, stand_in, records, linked=ATTN):
    """lti/launches.json and lms_course.json as the hub writes them: only these launches, in
    time order."""
    folder = launches.lti_folder(root)
    (folder / launches.LAUNCHES_FILE).unlink(missing_ok=True)
    for second, (student, person, activity) in enumerate(records):
        launch = launches.Launch(
            context=activity.course.id,
            user=student,
            lab=activity.lab,
            link=activity.instance,
            sub=person.id,
            lineitem=stand_in.lineitem(activity),
            lineitems=stand_in.lineitems(activity.course),
            scope=tuple(AGS_SCOPES),
            time=f"2026-01-05T10:00:{second:02d}+00:00",
        )
        launches.record_launch(folder, launch, platform_of(stand_in))
    course = launches.LinkedCourse(linked.id, linked.label, linked.title, deployment_id="1")
    launches.write_link(folder, course)


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """Lab 01 graded in a gradebook, made once (nbgrader's commits take seconds)."""
    root = tmp_path_factory.mktemp("graded") / "course"
    root.mkdir()
    with gradebook_db.open_gradebook(root) as book:
        book.add_assignment(LAB)
        notebook = paths.lab_filename(LAB).removesuffix(".ipynb")
        book.add_notebook(notebook, LAB)
        book.add_grade_cell("tests", notebook, LAB, max_score=8, cell_type="code")
        book.add_grade_cell("written", notebook, LAB, max_score=2, cell_type="markdown")
        add_submission(book, "ada", 8, 2)
        add_submission(book, "alan", 6, None)
        add_submission(book, "bea", 4, 1)
        add_submission(book, "cy", 0, None)
    for student in ("ada", "alan", "bea"):
        mark_autograded(root, student)
    return root


@pytest.fixture
def course(graded_course, tmp_path):
    """A copy of the graded course, and the stand-in with the course's key registered."""
    root = Path(shutil.copytree(graded_course, tmp_path / "course"))
    stand_in = PlatformStandIn().start()
    for person in (ADA, ALAN):
        stand_in.enrol(person)
        stand_in.enrol(person, SANDBOX)
    stand_in.add_activity(ACTIVITY)
    stand_in.add_activity(ELSEWHERE)
    public = lti.tool_key(root).public_key()
    stand_in.register_tool("http://127.0.0.1:1/login", "http://127.0.0.1:1/cb", public_key=public)
    record_launches(root, stand_in, [("ada", ADA, ACTIVITY), ("alan", ALAN, ACTIVITY)])
    yield root, stand_in
    stand_in.stop()


def test_scores_go_to_the_lineitem_path_before_its_query():
    url = "https://moodle.example/mod/lti/services.php/2/lineitems/5/lineitem?type_id=1"
    assert lti.scores_url(url) == (
        "https://moodle.example/mod/lti/services.php/2/lineitems/5/lineitem/scores?type_id=1"
    )


class Listing:
    """A session whose every request answers with the same list of line items."""

    def __init__(self, items):
        self.items = items

    def request(self, method, url, **kwargs):
        """The answer: 200, the items as JSON, no next page."""
        answer = requests.Response()
        answer.status_code, answer._content = 200, json.dumps(self.items).encode()
        return answer


def test_only_line_items_of_the_services_own_site_are_columns():
    site = "https://moodle.example/mod/lti/services.php/2/lineitems"
    items = [
        {"id": f"{site}/5/lineitem", "label": "Lab 01", "scoreMaximum": 50, "resourceLinkId": "3"},
        {"id": "https://elsewhere.example/5/lineitem", "label": "Lab 01", "resourceLinkId": "3"},
        {"id": f"{site}/6/lineitem", "label": "Lab 02", "scoreMaximum": 0, "ltiLinkId": "4"},
        "not a line item",
    ]
    columns = lti.read_columns(Listing(items), f"{site}?type_id=1", "token")
    assert columns == [
        lti.Column(f"{site}/5/lineitem", "Lab 01", 50.0, "3"),
        lti.Column(f"{site}/6/lineitem", "Lab 02", None, "4"),
    ]


def test_the_key_is_private_ignored_by_git_and_served_as_a_jwks(tmp_path):
    keys = lti.jwks(tmp_path)
    assert keys == lti.jwks(tmp_path)  # made once, then read
    folder = tmp_path / launches.LTI_FOLDER
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert oct((folder / lti.KEY_FILE).stat().st_mode & 0o777) == "0o600"
    assert (folder / ".gitignore").read_text() == "*\n"
    assert set(keys["keys"][0]) >= {"kty", "n", "e", "kid", "alg", "use"}
    assert "d" not in keys["keys"][0]


def test_final_grades_are_sent_once_and_the_rest_is_listed(course):
    root, stand_in = course
    ok, report = lti.send_grades(LAB, root)
    print(report)
    assert ok
    held = stand_in.grade(ACTIVITY, ADA)
    assert held["grade"] == 100.0 and held["grademax"] == 100.0  # 10 / 10, rescaled as Moodle
    assert held["feedback"].startswith(f"{LAB}: 10 / 10")
    score = stand_in.received[0]["score"]
    assert score["scoreGiven"] == 100 and score["scoreMaximum"] == 100  # the LMS's maximum
    assert score["gradingProgress"] == "FullyGraded" and score["userId"] == ADA.id
    assert stand_in.received[0]["path"].endswith("/lineitems/5/lineitem/scores?type_id=1")
    assert stand_in.grade(ACTIVITY, ALAN) is None
    assert "written answers to grade in the formgrader first: alan" in report
    assert "never launched anything from the LMS course" in report
    assert "their score goes once they open 01_softmax in the LMS): bea" in report
    assert 'column in the LMS: "Lab 01: softmax" (each score sent as its share of 100)' in report
    assert "not graded (see make autograde): cy" in report
    assert report.startswith(f"{LAB}: 1 score sent to the LMS, 0 unchanged")
    again_ok, again = lti.send_grades(LAB, root)
    print(again)
    assert again_ok and len(stand_in.received) == 1
    assert again.startswith(f"{LAB}: 0 scores sent to the LMS, 1 unchanged")


def test_a_provisional_score_says_so_and_moodle_keeps_only_its_comment(course):
    root, stand_in = course
    ok, report = lti.send_grades(LAB, root, provisional=True)
    print(report)
    assert ok and "sent alan: 6 / 10, provisional (PendingManual)" in report
    sent = {r["score"]["userId"]: r["score"] for r in stand_in.received}
    assert sent[ALAN.id]["gradingProgress"] == "PendingManual"
    assert sent[ALAN.id]["scoreGiven"] == 60 and sent[ALAN.id]["scoreMaximum"] == 100
    held = stand_in.grade(ACTIVITY, ALAN)
    assert held["grade"] is None and "Provisional: 1 written answer still" in held["feedback"]
    grade_written_answer(root, "alan", 1)
    ok, report = lti.send_grades(LAB, root)
    print(report)
    assert ok and "sent alan: 7 / 10, final (FullyGraded)" in report
    assert stand_in.grade(ACTIVITY, ALAN)["grade"] == 70.0
    assert "1 unchanged" in report  # Ada's


@pytest.mark.parametrize("status", [401, 500])
def test_a_failing_token_endpoint_loses_no_grade(course, status):
    root, stand_in = course
    stand_in.token_failure = status
    ok, report = lti.send_grades(LAB, root)
    print(report)
    assert not ok and stand_in.received == []
    assert "NOT SENT ada (kept for the next run): no token: " in report
    assert f"token.php answered {status}" in report
    stand_in.token_failure = None
    ok, report = lti.send_grades(LAB, root)
    assert ok and stand_in.grade(ACTIVITY, ADA)["grade"] == 100.0


def test_a_score_goes_to_the_current_column_when_the_last_launch_s_is_gone(course):
    root, stand_in = course
    gone = Activity("9", "8", "66", LAB, "Lab 01 (deleted)")
    record_launches(root, stand_in, [("ada", ADA, gone), ("alan", ALAN, ACTIVITY)])
    sent = {"lineitem": stand_in.lineitem(gone), "score": {"gradingProgress": "FullyGraded"}}
    lti.write_sent(root, LAB, {"ada": sent})  # what went to the deleted column
    ok, report = lti.send_grades(LAB, root, provisional=True)
    print(report)
    assert ok and report.startswith(f"{LAB}: 2 scores sent")
    assert "01_softmax's activity was re-created in the LMS" in report
    assert stand_in.grade(ACTIVITY, ADA)["grade"] == 100.0
    assert all("/lineitems/66/" not in r["path"] for r in stand_in.received)
    assert lti.read_sent(root, LAB)["ada"]["lineitem"] == stand_in.lineitem(ACTIVITY)


class DeletingSession(requests.Session):
    """A session during which the teacher deletes the activity, just before the first score."""

    def __init__(self, stand_in, activity):
        super().__init__()
        self.stand_in, self.activity = stand_in, activity

    def request(self, method, url, *args, **kwargs):
        """Delete the activity before posting a score."""
        if url.split("?")[0].endswith("/scores") and self.activity.cmid in self.stand_in.activities:
            self.stand_in.delete_activity(self.activity)
        return super().request(method, url, *args, **kwargs)


def test_a_column_deleted_during_the_run_gets_moodles_404_and_what_to_do(course):
    root, stand_in = course
    ok, report = lti.send_grades(LAB, root, session=DeletingSession(stand_in, ACTIVITY))
    print(report)
    assert not ok
    assert "NOT SENT ada (kept for the next run): 01_softmax's column was deleted" in report
    assert "open 01_softmax's activity in the LMS course once, as the teacher" in report
    assert "answered 404 Not Found: Grade item 5 doesn't exist" in report
    assert "ada" not in lti.read_sent(root, LAB)


def test_without_any_launch_it_says_so(tmp_path):
    ok, report = lti.send_grades(LAB, tmp_path)
    assert not ok and "no LTI launch recorded yet" in report


def test_a_provisional_score_never_replaces_a_final_one_unless_asked(course):
    root, stand_in = course
    ok, report = lti.send_grades(LAB, root)
    assert ok and stand_in.grade(ACTIVITY, ADA)["grade"] == 100.0
    grade_written_answer(root, "ada", None)  # to grade again, as after a regrade
    ok, report = lti.send_grades(LAB, root, provisional=True)
    print(report)
    assert ok and "sent ada" not in report
    assert "a final score is already in the LMS, and a provisional one would erase it" in report
    assert "(Moodle keeps no grade for a score that is not FullyGraded): ada" in report
    assert stand_in.grade(ACTIVITY, ADA)["grade"] == 100.0
    ok, report = lti.send_grades(LAB, root, provisional=True, replace_final=True)
    print(report)
    assert ok and "sent ada: 8 / 10, provisional (PendingManual)" in report
    assert stand_in.grade(ACTIVITY, ADA)["grade"] is None  # what Moodle does with it


def test_grades_go_only_to_the_linked_courses_lineitems(course):
    root, stand_in = course
    opened = [("ada", ADA, ACTIVITY), ("ada", ADA, ELSEWHERE), ("alan", ALAN, ELSEWHERE)]
    record_launches(root, stand_in, opened)  # Ada's launch from SANDBOX is her latest
    ok, report = lti.send_grades(LAB, root, provisional=True)
    print(report)
    assert ok and stand_in.grade(ACTIVITY, ADA)["grade"] == 100.0
    assert stand_in.grade(ELSEWHERE, ADA) is None and stand_in.grade(ELSEWHERE, ALAN) is None
    assert all("/lineitems/40/" not in r["path"] for r in stand_in.received)
    assert "their score goes once they open 01_softmax in the LMS): alan" in report


def test_the_linked_course_changes_where_grades_go(course):
    root, stand_in = course
    record_launches(root, stand_in, [("ada", ADA, ACTIVITY), ("ada", ADA, ELSEWHERE)], SANDBOX)
    ok, report = lti.send_grades(LAB, root)
    print(report)
    assert ok and stand_in.grade(ELSEWHERE, ADA)["grade"] == 100.0
    assert stand_in.grade(ACTIVITY, ADA) is None


def test_the_column_is_found_by_resource_link_whatever_lineitem_a_launch_carried(course):
    root, stand_in = course
    record_launches(root, stand_in, [("ada", ADA, ACTIVITY)])
    path = launches.lti_folder(root) / launches.LAUNCHES_FILE
    record = json.loads(path.read_text())
    launch = record["launches"][ATTN.id]["ada"][LAB][ACTIVITY.instance]
    launch["lineitem"] = launch["lineitem"].split("?")[0]
    path.write_text(json.dumps(record))
    ok, report = lti.send_grades(LAB, root)
    print(report)
    assert ok and stand_in.received[0]["path"].endswith("/lineitems/5/lineitem/scores?type_id=1")
    assert stand_in.grade(ACTIVITY, ADA)["grade"] == 100.0 and "re-created" not in report


def test_a_student_not_enrolled_in_the_lineitems_course_gets_moodles_answer(course):
    root, stand_in = course
    stand_in.enrolments.discard((ATTN.id, ADA.id))
    ok, report = lti.send_grades(LAB, root)
    print(report)
    assert not ok and "answered 400 Incorrect score received {" in report
