"""A teacher's first hour with the course in Moodle 4.5, against the stand-in (lti_platform.py).

Without a hub: each launch goes through the stand-in's pages as a browser would (the activity's
launch form, the OIDC authorization that answers with the id_token), then through the hub's own
checks: ltiauthenticator's validation of the id_token against the stand-in's keys, then the
course's authenticator (deploy/lti_login.py), which links the course and records the launch.
The machine has Unix accounts for the teacher, Ada, Alan and Bea; Zoe, enrolled in the LMS
course, has none.

The teacher opens lab 01 in ATTN (the course is linked to it); a launch from the site's second
course, SANDBOX, is refused naming both; Ada and Alan open the lab, Zoe is refused (no account),
Bea's launch comes too late (an expired id_token). The grades go to the lab's column. Then the
teacher deletes the activity and adds it again: until someone opens the new activity, the grades
command says what to do and counts nothing as unchanged; once the teacher has opened it, every
student's score goes to the new column, Bea's too when she opens it. Renaming the activity moves
nothing; hiding it keeps its column (students' launches get Moodle's "hidden" page); a new
maximum grade in the LMS gets every score again, as its share of the new maximum.
"""

import asyncio
import html
import os
import pwd
import re
import shutil
import sys
from pathlib import Path

import pytest
import requests
from lti_platform import (
    ATTN,
    SANDBOX,
    SITE_ADMIN_ROLES,
    Activity,
    Person,
    PlatformStandIn,
)
from ltiauthenticator.lti13.error import ValidationError
from ltiauthenticator.lti13.validator import LTI13LaunchValidator
from test_lti_grades import LAB, grade_written_answer, graded_course  # noqa: F401 - a fixture

from course.coursedir import paths
from course.lms import launches, lti

sys.path.insert(0, str(paths.ROOT / "deploy"))
import lti_login  # noqa: E402 - deploy/ is not a package

TEACHER = Person("2", "teacher", "Grace", "Hopper", SITE_ADMIN_ROLES)
ADA = Person("3", "ada", "Ada", "Lovelace")
ALAN = Person("4", "alan", "Alan", "Turing")
BEA = Person("6", "bea", "Bea", "Blackwell")
ZOE = Person("7", "zoe", "Zoe", "Noaccount")
ACCOUNTS, STUDENTS = {"teacher", "ada", "alan", "bea"}, {"ada", "alan", "bea"}
LAB01 = Activity("7", "3", "5", LAB, "Lab 01: softmax")
LAB02 = Activity("8", "4", "6", "02_dot_product", "Lab 02: dot product")
SANDBOX_LAB = Activity("20", "12", "40", LAB, "Lab 01 (teacher's sandbox)", course=SANDBOX)
REDIRECT = "http://127.0.0.1:9/hub/lti13/oauth_callback"  # never reached: the test posts itself


@pytest.fixture
def moodle(graded_course, tmp_path, monkeypatch):  # noqa: F811 - the fixture imported above
    """The course folder (lab 01 graded), the stand-in, and the hub's side, on this machine."""
    root = Path(shutil.copytree(graded_course, tmp_path / "course"))
    grade_written_answer(root, "alan", 2)
    stand_in = PlatformStandIn().start()
    for person in (TEACHER, ADA, ALAN, BEA, ZOE):
        stand_in.enrol(person)
    for person in (TEACHER, ADA):
        stand_in.enrol(person, SANDBOX)
    for activity in (LAB01, LAB02, SANDBOX_LAB):
        stand_in.add_activity(Activity(**vars(activity)))
    public = lti.tool_key(root).public_key()
    stand_in.register_tool("http://127.0.0.1:9/hub/lti13/oauth_login", REDIRECT, public_key=public)
    me = pwd.getpwuid(os.getuid())
    monkeypatch.setattr(lti_login.class_settings, "INSTRUCTOR", "teacher")
    monkeypatch.setattr(lti_login, "lti_folder", lambda: launches.lti_folder(root))
    monkeypatch.setattr(lti_login.pwd, "getpwnam", lambda name: account(name, me))
    monkeypatch.setattr(lti_login, "is_student", lambda name, group=None: name in STUDENTS)
    yield root, stand_in, authenticator(stand_in)
    stand_in.stop()


def account(name, me):
    """The machine's Unix accounts: the teacher and three students (as the test's own user)."""
    if name not in ACCOUNTS:
        raise KeyError(name)
    return me


def authenticator(stand_in):
    """The hub's authenticator, configured as deploy/jupyterhub_lti_config.py does."""
    endpoints = stand_in.endpoints
    return lti_login.CourseLTIAuthenticator(
        issuer=endpoints["issuer"],
        client_id={endpoints["client_id"]},
        deployment_ids={endpoints["deployment_id"]},
        authorize_url=endpoints["auth_url"],
        jwks_endpoint=endpoints["jwks_url"],
        token_url=endpoints["token_url"],
        username_key="custom_uname",
    )


def hidden_fields(page):
    """The hidden inputs of a page's self-posting form."""
    pairs = re.findall(r'name="([^"]*)" value="([^"]*)"', page)
    return {html.unescape(name): html.unescape(value) for name, value in pairs}


def launch(moodle, person, activity, tamper=()):
    """`person` opens `activity` in the stand-in; the hub's checks take the launch.

    The user the hub logs in, or "refused: ..." with the page's message (Moodle's or the hub's).
    """
    _, stand_in, hub = moodle
    session = requests.Session()
    session.get(stand_in.login_url(person), timeout=10)
    page = session.get(stand_in.launch_url(activity), timeout=10)
    if page.status_code != 200:
        return "refused by Moodle: " + re.sub(r"<[^>]+>", "", page.text)
    login = hidden_fields(page.text)
    stand_in.tamper = set(tamper)
    try:
        authorized = session.get(stand_in.endpoints["auth_url"], timeout=10, params={
            "scope": "openid", "response_type": "id_token", "response_mode": "form_post",
            "client_id": login["client_id"], "redirect_uri": REDIRECT, "prompt": "none",
            "login_hint": login["login_hint"], "lti_message_hint": login["lti_message_hint"],
            "nonce": "n0nce", "state": "st4te"})  # fmt: skip
    finally:
        stand_in.tamper = set()
    try:
        claims = validated(stand_in, hidden_fields(authorized.text)["id_token"])
    except ValidationError as error:  # the hub's LaunchHandler says the same
        refusal = lti_login.refused(401, f"its id_token is not valid ({error})")
        return "refused: " + refusal.log_message
    try:
        return asyncio.run(hub.authenticate(None, claims))["name"]
    except lti_login.web.HTTPError as error:
        return "refused: " + error.log_message


def validated(stand_in, id_token):
    """The id_token's claims, checked as ltiauthenticator checks them (signature, age, ...)."""
    endpoints, validator = stand_in.endpoints, LTI13LaunchValidator()
    claims = validator.verify_and_decode_jwt(
        encoded_jwt=id_token,
        issuer=endpoints["issuer"],
        audience={endpoints["client_id"]},
        jwks_endpoint=endpoints["jwks_url"],
        jwks_algorithms=["RS256"],
    )
    validator.validate_id_token(claims)
    return claims


def grades(root):
    """The grades command for lab 01: (ok, its report), printed."""
    ok, report = lti.send_grades(LAB, root)
    print(f"\n$ python -m course.lms.lti grades {LAB}\n{report}")
    return ok, report


def scores(stand_in, activity):
    """The grades the stand-in holds in an activity's column: {username: grade}."""
    people = {person.id: person.username for person in stand_in.people.values()}
    return {people[user]: row["grade"] for (item, user), row in stand_in.grades.items()
            if item == activity.item and row["timestamp"]}  # fmt: skip


def test_the_first_hour_two_courses_a_re_created_lab_no_account_and_an_expired_launch(moodle):
    root, stand_in, _ = moodle
    assert launch(moodle, TEACHER, LAB01) == "teacher"  # links the course to ATTN
    linked = launches.read_link(launches.lti_folder(root))
    assert (linked.id, linked.linked_by) == (ATTN.id, "teacher")
    for person in (TEACHER, ADA):
        refusal = launch(moodle, person, SANDBOX_LAB)
        assert '"Attention, Step by Step" (ATTN, id 2)' in refusal
        assert '"Sandbox for teachers" (SANDBOX, id 3)' in refusal
    assert launch(moodle, ADA, LAB01) == "ada" and launch(moodle, ALAN, LAB01) == "alan"
    assert "the course's machine has no account 'zoe'" in launch(moodle, ZOE, LAB01)
    assert "Signature has expired" in launch(moodle, BEA, LAB01, tamper={"expired"})

    ok, report = grades(root)
    assert ok and report.startswith(f"{LAB}: 2 scores sent")
    assert scores(stand_in, LAB01) == {"ada": 100.0, "alan": 80.0}
    assert "their score goes once they open 01_softmax in the LMS): bea" in report
    assert "zoe" not in report and "cy" in report  # Zoe has no submission, Cy is not graded

    new = stand_in.recreate_activity(stand_in.activities[LAB01.cmid])
    assert (new.cmid, new.instance, new.item) == ("21", "13", "41")
    token = lti.access_token(launches.read_launches(launches.lti_folder(root))[0],
                             lti.tool_key(root), requests.Session())  # fmt: skip
    old = requests.post(lti.scores_url(stand_in.lineitem(LAB01)), timeout=10,
                        headers={"Authorization": f"Bearer {token}"}, data="{}")  # fmt: skip
    assert (old.status_code, old.reason) == (404, "Not Found: Grade item 5 doesn't exist")
    ok, report = grades(root)
    assert not ok and "0 unchanged" in report and "2 not sent" in report
    assert "NOT SENT ada, alan (kept for the next run): the LMS column of 01_softmax is gone" in (
        report
    )
    assert "If re-created, open 01_softmax's activity in the LMS course once, as the teacher" in (
        report
    )

    assert launch(moodle, TEACHER, new) == "teacher"  # the teacher opens the new activity once
    ok, report = grades(root)
    assert ok and report.startswith(f"{LAB}: 2 scores sent to the LMS, 0 unchanged")
    assert "01_softmax's activity was re-created in the LMS" in report
    assert scores(stand_in, new) == {"ada": 100.0, "alan": 80.0}
    assert launch(moodle, BEA, new) == "bea"
    ok, report = grades(root)
    assert ok and report.startswith(f"{LAB}: 1 score sent to the LMS, 2 unchanged")
    assert "re-created" not in report  # every score is in the new column now
    assert scores(stand_in, new) == {"ada": 100.0, "alan": 80.0, "bea": 50.0}


def test_renaming_hiding_and_a_new_maximum_in_the_lms(moodle):
    root, stand_in, _ = moodle
    for person in (TEACHER, ADA, ALAN, BEA):
        launch(moodle, person, LAB01)
    activity = stand_in.activities[LAB01.cmid]
    assert grades(root)[0]

    activity.title = "Lab 01: softmax, the numerically stable way"
    ok, report = grades(root)
    assert ok and report.startswith(f"{LAB}: 0 scores sent to the LMS, 3 unchanged")
    assert '"Lab 01: softmax, the numerically stable way"' in report

    activity.visible = False
    assert launch(moodle, ALAN, activity) == (
        "refused by Moodle: Sorry, this activity is currently hidden"
    )
    assert launch(moodle, TEACHER, activity) == "teacher"
    stand_in.set_grademax(activity, 50)
    ok, report = grades(root)
    assert ok and report.startswith(f"{LAB}: 3 scores sent to the LMS, 0 unchanged")
    assert "(each score sent as its share of 50)" in report
    assert scores(stand_in, activity) == {"ada": 50.0, "alan": 40.0, "bea": 25.0}
    sent = {r["score"]["userId"]: r["score"] for r in stand_in.received[-3:]}
    assert (sent[ALAN.id]["scoreGiven"], sent[ALAN.id]["scoreMaximum"]) == (40.0, 50.0)


def test_moodle_leaves_empty_grade_rows_in_other_columns_and_lists_only_results(moodle):
    root, stand_in, _ = moodle
    launch(moodle, TEACHER, LAB01)  # links the course
    launch(moodle, ADA, LAB01)
    grades(root)
    empty = stand_in.grades[(LAB02.item, ADA.id)]
    assert empty["grade"] is None and empty["timestamp"] is None
    assert stand_in.grade(LAB02, ADA) is None
    platform = launches.read_launches(launches.lti_folder(root))[0]
    token = lti.access_token(platform, lti.tool_key(root), requests.Session(),
                             " ".join(stand_in.permitted))  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    urls = [stand_in.lineitem(a).replace("lineitem?", "lineitem/results?") for a in (LAB01, LAB02)]
    results = [requests.get(url, headers=headers, timeout=10).json() for url in urls]
    assert [r["userId"] for r in results[0]] == [ADA.id] and results[1] == []
    assert results[0][0]["resultScore"] == 100.0


def test_the_columns_are_read_only_with_moodles_accept_and_a_scope_that_reads_them(moodle):
    root, stand_in, _ = moodle
    launch(moodle, TEACHER, LAB01)  # links the course
    launch(moodle, ADA, LAB01)
    platform = launches.read_launches(launches.lti_folder(root))[0]
    session, url = requests.Session(), stand_in.lineitems(ATTN)
    scores_only = lti.access_token(platform, lti.tool_key(root), session)
    answer = session.get(url, headers={"Authorization": f"Bearer {scores_only}",
                                       "Accept": lti.CONTAINER_TYPE}, timeout=10)  # fmt: skip
    assert (answer.status_code, answer.reason) == (401, "Unauthorized")
    token = lti.access_token(platform, lti.tool_key(root), session, lti.token_scope([]))
    anything = session.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert anything.status_code == 400  # requests' Accept: */*
    columns = lti.read_columns(session, url, token)
    assert [(c.label, c.maximum, c.link) for c in columns] == [
        ("Lab 01: softmax", 100.0, LAB01.instance),
        ("Lab 02: dot product", 100.0, LAB02.instance),
    ]
    stand_in.permitted.discard("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly")
    stand_in.permitted.discard("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem")
    ok, report = grades(root)
    assert not ok and "NOT SENT ada (kept for the next run): the LMS course's columns could " in (
        report
    )
    assert "answered 401 Unauthorized" in report and "grade sync and column management" in report


def test_a_lab_with_two_activities_sends_each_score_to_the_one_its_student_opened(moodle):
    root, stand_in, _ = moodle
    launch(moodle, TEACHER, LAB01)  # links the course
    twin = stand_in.add_activity(Activity("30", "20", "50", LAB, "Lab 01 (group B)"))
    launch(moodle, ADA, LAB01)
    launch(moodle, ALAN, twin)
    launch(moodle, BEA, LAB02)  # Bea's LMS id is known, but she opened neither of lab 01's
    ok, report = grades(root)
    assert not ok and scores(stand_in, LAB01) == {"ada": 100.0}
    assert scores(stand_in, twin) == {"alan": 80.0}
    assert "NOT SENT bea (kept for the next run): 01_softmax has 2 activities in the LMS " in report


def test_an_activity_that_takes_no_grades_is_named_with_what_to_do(moodle):
    root, stand_in, _ = moodle
    activity = stand_in.activities[LAB01.cmid]
    activity.grademax = 0  # Grade type None
    launch(moodle, TEACHER, activity)
    launch(moodle, ADA, activity)
    ok, report = grades(root)
    assert not ok and stand_in.received == []
    assert "NOT SENT ada (kept for the next run): 01_softmax's activity takes no grades" in report
    assert "give it a grade (Grade type Point) in its settings, then open 01_softmax's" in report
