"""LTI 1.3 end to end: a student launches lab 01 from the LMS, and the grade goes back by AGS.

No LMS is reachable from CI: the platform is a stand-in for Moodle 4.5 (lti_platform.py) on
loopback. Everything else is real: JupyterHub with deploy/jupyterhub_lti_config.py
(ltiauthenticator), configurable-http-proxy, the class's Unix users, nbgrader, the sandboxed
autograder and the AGS sender (course/lms/lti.py, what `make lti-grades` runs).

The instructor (a Moodle site administrator) opens the course's activities first: that launch
links the course to the LMS course ATTN and lands on the grades page, which names it; a launch of
the lab's activity lands on the lab's page of the formgrader. In headless Chromium, Ada logs in
to the stand-in and opens the lab's activity: the OIDC flow takes her into her own server, with
lab 01 fetched and open. Alan launches the same way (without a browser). Both submit; the
instructor collects and autogrades; `python -m course.lms.lti grades`, run as the instructor
with the hub's Python in a course folder without .venv, holds both scores back (written answers
to grade), sends them as provisional with --provisional, sends Ada's final score once her
written answers are graded, and a last run (then the instructor's button, /course-lti/grades)
sends nothing; once Ada's written answer is reopened, a provisional send keeps her final score.
Then each bad launch is refused with a page that says why, and changes no record; so is a
launch of the same lab from another course of the site, SANDBOX. Last, a teacher of the LMS
course with a Unix account of their own (a teaching assistant) launches the lab: the hub adds
them to the graders' group (COURSE_LTI_GRADERS_FROM_LMS=1) and sends them to the lab's page of
the formgrader, in the instructor's server.
`make test-hub` runs it, as root; `pytest -s` prints each step and what the stand-in received.
"""

import html
import json
import os
import re
import secrets
import subprocess
from html.parser import HTMLParser

import hub_course as hc
import pytest
import requests
from lti_platform import (
    ATTN,
    INSTRUCTOR,
    SANDBOX,
    SITE_ADMIN_ROLES,
    Activity,
    Person,
    PlatformStandIn,
)
from test_hub import (
    ADA,
    ALAN,
    LAB,
    MISTAKE,
    NOTEBOOK,
    Class,
    autograde,
    hand_in,
    release,
    running_class,
    say,
)

from course.coursedir.scratch import solution_cells
from course.lms import launches

pytestmark = [
    pytest.mark.hub,
    pytest.mark.skipif(
        os.environ.get("COURSE_HUB_TEST") != "1",
        reason="make test-hub runs it: it needs root, configurable-http-proxy and setfacl",
    ),
]
PEOPLE = {
    ADA: Person("3", ADA, "Ada", "Lovelace"),
    ALAN: Person("4", ALAN, "Alan", "Turing"),
    hc.INSTRUCTOR: Person("2", hc.INSTRUCTOR, "Grace", "Hopper", SITE_ADMIN_ROLES),
    "attn-ghost": Person("5", "attn-ghost", "No", "Account"),
}
TA = "attn-ta"  # a teacher in the LMS, with a Unix account outside the students' group
PEOPLE |= {
    TA: Person("9", TA, "Katherine", "Johnson", [INSTRUCTOR]),
}
ACTIVITY = Activity("7", "3", "5", LAB, "Lab 01: softmax")
ELSEWHERE = Activity("20", "12", "40", LAB, "Lab 01 (sandbox course)", course=SANDBOX)
REFUSED = "This launch from your LMS was refused"
LTI_GRADES = ["-m", "course.lms.lti", "grades", LAB]


class Forms(HTMLParser):
    """The forms of a page: (action, {name: value}) each."""

    def __init__(self, text):
        super().__init__()
        self.forms = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        """Collect forms and their inputs."""
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append((attrs.get("action", ""), {}))
        elif tag == "input" and self.forms and attrs.get("name"):
            self.forms[-1][1][attrs["name"]] = attrs.get("value", "")


def post_form(session, response):
    """Post the page's auto-submitting form, as the browser would; the response."""
    action, fields = Forms(response.text).forms[0]
    return session.post(action, data=fields, allow_redirects=False)


def launch(stand_in, hub, person, activity=ACTIVITY):
    """A launch without a browser, up to the hub's answer to the id_token (not followed)."""
    session = requests.Session()
    session.get(stand_in.login_url(person))
    page = session.get(stand_in.launch_url(activity))
    login = post_form(session, page)  # the hub's login, which redirects to the platform's auth
    assert login.status_code == 302, login.text[:500]
    authorized = session.get(login.headers["Location"])
    assert authorized.status_code == 200, authorized.text[:500]
    return session, post_form(session, authorized)


class LtiClass(Class):
    """The class of test_hub.py on a hub whose users log in by LTI from the stand-in."""

    def start(self):
        """Start the stand-in and the hub; register the tool; the instructor's server."""
        self.stand_in = PlatformStandIn().start()
        for person in PEOPLE.values():
            self.stand_in.enrol(person)
            self.stand_in.enrol(person, SANDBOX)
        self.stand_in.add_activity(ACTIVITY)
        self.stand_in.add_activity(ELSEWHERE)
        endpoints = self.stand_in.endpoints
        lti = {f"COURSE_LTI_{k.upper()}": v for k, v in endpoints.items()}
        hc.remove_user(TA)
        subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", TA], check=True)
        environment = {**self.environment, **lti, "JUPYTERHUB_CRYPT_KEY": secrets.token_hex(32),
                       "COURSE_LTI_GRADERS_FROM_LMS": "1"}  # fmt: skip
        self.hub = hc.Hub(self.base / "hub", environment, self.deploy, "jupyterhub_lti_config.py")
        hub = f"{self.hub.url}/hub"
        self.stand_in.register_tool(
            f"{hub}/lti13/oauth_login", f"{hub}/lti13/oauth_callback", f"{hub}/lti/jwks"
        )
        token = self.hub.user_token(hc.INSTRUCTOR)
        self.tokens = {hc.INSTRUCTOR: token}
        self.servers = {hc.INSTRUCTOR: hc.Server(self.hub, hc.INSTRUCTOR, token)}
        self.hub.start_server(hc.INSTRUCTOR)

    def student_server(self, student):
        """A student's server, reached with a token of theirs."""
        self.tokens[student] = self.hub.user_token(student)
        self.servers[student] = hc.Server(self.hub, student, self.tokens[student])
        return self.servers[student]

    def launches(self):
        """The hub's record of launches, in the instructor's course folder."""
        return json.loads((self.course / launches.LTI_FOLDER / launches.LAUNCHES_FILE).read_text())

    def lti_grades(self, *options):
        """The grades command as the hub's instructor (the hub's Python): (exit status, output)."""
        result = self.as_user(hc.INSTRUCTOR, [self.python, *LTI_GRADES, *options], self.course)
        return result.returncode, result.stdout + result.stderr

    def close(self):
        """Stop the hub and the stand-in; remove the teaching assistant's account."""
        super().close()
        hc.remove_user(TA)
        if getattr(self, "stand_in", None) is not None:
            self.stand_in.stop()


@pytest.fixture(scope="module")
def lti_class():
    """A running LTI hub with its class and the stand-in, all removed at the end."""
    yield from running_class(LtiClass)


def browser_launch(the_class, person):
    """In Chromium: log in to the stand-in, open the activity; the page where it lands."""
    from local_servers import SCREENSHOTS, launch_chromium
    from playwright.sync_api import sync_playwright

    stand_in = the_class.stand_in
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            page = browser.new_page()
            page.goto(stand_in.login_url(person))
            page.goto(stand_in.launch_url(ACTIVITY))
            page.wait_for_url(re.compile(rf"/user/{person.username}/lab/tree/{LAB}/"),
                              timeout=180_000)  # fmt: skip
            page.locator(".jp-Notebook").first.wait_for(timeout=60_000)
            SCREENSHOTS.mkdir(exist_ok=True)
            page.screenshot(path=SCREENSHOTS / "lti-launch.png")
            return page.url, page.title()
        finally:
            browser.close()


@pytest.fixture(scope="module")
def flow(lti_class):
    """Launch, submit, grade, and send the grades four times; what each step gave."""
    print(f"\nJupyterHub (LTI 1.3) at {lti_class.hub.url}; Moodle 4.5 stand-in at "
          f"{lti_class.stand_in.url}")  # fmt: skip
    release(lti_class)
    landings = {"link": staff_launch(lti_class, ACTIVITY)}  # links the course: its grades page
    landings["lab"] = staff_launch(lti_class, ACTIVITY)  # then the lab's page of the formgrader
    url, title = browser_launch(lti_class, PEOPLE[ADA])
    say(f"Chromium: {ADA} launches {LAB} from the stand-in", url.split("?")[0])
    session, answer = launch(lti_class.stand_in, lti_class.hub, PEOPLE[ALAN])
    say(f"{ALAN} launches {LAB} (no browser)", f"{answer.status_code} -> hub")
    lti_class.student_server(ALAN)
    lti_class.hub.start_server(ALAN)
    lti_class.servers[ALAN].assignment_action("fetch", "attention-step-by-step", LAB)
    lti_class.student_server(ADA)
    answers = solution_cells(LAB)
    hand_in(lti_class, ADA, answers)
    hand_in(lti_class, ALAN, {**answers, MISTAKE.cell: MISTAKE.code})
    say("both submit (Assignments)", "ok")
    teacher = lti_class.servers[hc.INSTRUCTOR]
    assert teacher.call("POST", f"/formgrader/api/assignment/{LAB}/collect")["success"]
    graded = autograde(lti_class)
    say("instructor collects and autogrades", graded.stdout.strip().splitlines()[0])
    runs = {"held": lti_class.lti_grades()}
    runs["provisional"] = lti_class.lti_grades("--provisional")
    received_provisional = list(lti_class.stand_in.received)
    grade_written_answers(lti_class, ADA)
    runs["final"] = lti_class.lti_grades("--provisional")
    runs["again"] = lti_class.lti_grades("--provisional")
    runs["button"] = grades_button(lti_class)
    reopen_written_answers(lti_class, ADA)
    runs["final kept"] = lti_class.lti_grades("--provisional")
    for name, (status, output) in runs.items():
        say(f"lti-grades ({name})", f"exit {status}")
        for line in output.strip().splitlines():
            say("", f"| {line}")
    return {"runs": runs, "provisional": received_provisional, "landed": (url, title),
            "staff": landings}  # fmt: skip


def staff_launch(the_class, activity):
    """The instructor launches an activity; (the hub's redirect, the page it ends on)."""
    session, answer = launch(the_class.stand_in, the_class.hub, PEOPLE[hc.INSTRUCTOR], activity)
    assert answer.status_code == 302, answer.text[:2000]
    landing = answer.headers["Location"]
    page = session.get(f"{the_class.hub.url}{landing}", timeout=120)
    say(f"{hc.INSTRUCTOR} launches {activity.title!r}", f"{page.status_code} {page.url}")
    return landing, page


def grades_button(the_class):
    """The instructor's "Send, provisional too" on /course-lti/grades: (0 if sent, its report)."""
    form = {"lab": LAB, "provisional": "1"}
    page = the_class.servers[hc.INSTRUCTOR].request("POST", "/course-lti/grades", data=form)
    assert page.status_code == 200, page.text[:2000]
    report = re.search(r'<pre id="report">(.*?)</pre>', page.text, re.DOTALL).group(1)
    return (0 if f"{LAB}: sent" in page.text else 1), html.unescape(report)


def reopen_written_answers(the_class, student):
    """The instructor asks for a student's written answers to be graded again."""
    code = f"""
from course.coursedir.gradebook_db import open_gradebook
with open_gradebook() as book:
    for notebook in book.find_submission({LAB!r}, {student!r}).notebooks:
        for grade in notebook.grades:
            if grade.manual_score is not None:
                grade.manual_score, grade.needs_manual_grade = None, True
    book.db.commit()
"""
    the_class.instructor(the_class.python, "-c", code)
    say(f"instructor reopens {student}'s written answers", "to grade again")


def grade_written_answers(the_class, student):
    """The instructor gives full marks to a student's written answers (as in the formgrader)."""
    code = f"""
from course.coursedir.gradebook_db import open_gradebook
with open_gradebook() as book:
    for notebook in book.find_submission({LAB!r}, {student!r}).notebooks:
        for grade in notebook.grades:
            if grade.needs_manual_grade:
                grade.manual_score, grade.needs_manual_grade = grade.max_score, False
    book.db.commit()
"""
    the_class.instructor(the_class.python, "-c", code)
    say(f"instructor grades {student}'s written answers", "full marks")


def test_the_launch_lands_in_the_students_own_server_with_the_lab_open(flow, lti_class):
    url, _ = flow["landed"]
    assert url.split("?")[0].endswith(f"/user/{ADA}/lab/tree/{LAB}/{NOTEBOOK}")
    record = lti_class.launches()
    assert record["platform"]["token_url"] == lti_class.stand_in.endpoints["token_url"]
    ada = record["launches"][ATTN.id][ADA][LAB][ACTIVITY.instance]  # Moodle's resource link
    assert ada["sub"] == PEOPLE[ADA].id
    assert ada["lineitem"] == lti_class.stand_in.lineitem(ACTIVITY)
    state = lti_class.hub.api("GET", f"/users/{ADA}")["auth_state"]
    ags = state["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"]
    say(f"{ADA}'s auth_state (admin:auth_state)", f"role {state['course_role']}, "
        f"lineitem {ags['lineitem']}")  # fmt: skip
    assert state["course_role"] == "student" and ags["lineitem"] == ada["lineitem"]


def test_grades_go_back_provisional_then_final_and_once(flow, lti_class):
    runs, stand_in = flow["runs"], lti_class.stand_in
    held, provisional, final, again = (runs[n] for n in ("held", "provisional", "final", "again"))
    assert held[0] == 0 and "0 scores sent" in held[1]
    assert "grade in the formgrader first" in held[1]
    assert provisional[0] == 0 and "2 scores sent" in provisional[1]
    assert all(r["score"]["gradingProgress"] == "PendingManual" for r in flow["provisional"])
    assert final[0] == 0 and f"sent {ADA}: 10 / 10, final (FullyGraded)" in final[1]
    assert again[0] == 0 and "0 scores sent to the LMS, 2 unchanged" in again[1]
    assert runs["button"] == again
    kept = runs["final kept"]
    assert kept[0] == 0 and "a provisional one would erase it" in kept[1]
    assert f"not FullyGraded): {ADA}" in kept[1]
    ada, alan = (stand_in.grade(ACTIVITY, PEOPLE[name]) for name in (ADA, ALAN))
    print("\n  what the stand-in received (scores posted):")
    for received in stand_in.received:
        print(f"    POST {received['path']}")
        print(f"      {json.dumps(received['score'])}")
    print(f"  the stand-in's gradebook: {ADA} {ada}\n                            {ALAN} {alan}")
    assert ada["grade"] == 100.0 and ada["feedback"].startswith(f"{LAB}: 10 / 10")
    assert alan["grade"] is None and "Provisional" in alan["feedback"]
    assert len(stand_in.received) == 3


def test_the_course_serves_the_key_the_grades_are_signed_with(flow, lti_class):
    served = requests.get(f"{lti_class.hub.url}/hub/lti/jwks", timeout=10).json()
    printed = lti_class.instructor(lti_class.python, "-m", "course.lms.lti", "jwks").stdout
    assert served == json.loads(printed) and "d" not in served["keys"][0]
    say("/hub/lti/jwks", f"kid {served['keys'][0]['kid']}, the instructor's key")


def page_text(response):
    """A page's text, without its tags, unescaped."""
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", response.text).split()))


BAD_LAUNCHES = [
    ("expired", ADA, "Signature has expired"),
    ("forged", ADA, "Signature verification failed"),
    ("audience", ADA, "Audience doesn't match"),
    ("nonce", ADA, "nonce mismatch"),
    ("issuer", ADA, "Invalid issuer"),
    ("deployment", ADA, "deployment '99' is not this course's"),
    ("", "attn-ghost", "no account 'attn-ghost'"),
]


@pytest.mark.parametrize(("tamper", "user", "reason"), BAD_LAUNCHES)
def test_a_bad_launch_is_refused_with_a_page_that_says_why(flow, lti_class, tamper, user, reason):
    stand_in, before = lti_class.stand_in, lti_class.launches()
    stand_in.tamper = {tamper} - {""}
    try:
        session, answer = launch(stand_in, lti_class.hub, PEOPLE[user])
    finally:
        stand_in.tamper = set()
    text = page_text(answer)
    message = text[text.find(REFUSED) :][:200]
    say(f"launch: {tamper or 'no account'}", f"{answer.status_code}: {message}")
    assert answer.status_code in (400, 401, 403)
    assert REFUSED in text and reason in text
    assert lti_class.launches() == before


def test_a_learner_cannot_launch_into_the_instructors_account(flow, lti_class):
    impostor = Person("6", hc.INSTRUCTOR, "Not", "Teacher")
    lti_class.stand_in.enrol(impostor)
    _, answer = launch(lti_class.stand_in, lti_class.hub, impostor)
    say("launch: a Learner named as the instructor", str(answer.status_code))
    assert answer.status_code == 403 and "cannot open the instructor's account" in page_text(answer)


def test_the_instructors_launches_land_on_pages_that_exist(flow, lti_class):
    (link_url, link_page), (lab_url, lab_page) = flow["staff"]["link"], flow["staff"]["lab"]
    assert link_url.endswith("%2Fcourse-lti%2Fgrades") and link_page.status_code == 200
    assert 'linked to the LMS course "Attention, Step by Step" (ATTN, id 2)' in page_text(link_page)
    assert lab_url.endswith(f"%2Fformgrader%2Fmanage_submissions%2F{LAB}")
    assert lab_page.status_code == 200 and lab_page.url.endswith(f"manage_submissions/{LAB}")
    linked = launches.read_link(lti_class.course / launches.LTI_FOLDER)
    assert linked.id == ATTN.id and linked.linked_by == hc.INSTRUCTOR


def test_the_grades_command_runs_as_the_hubs_instructor_without_a_venv(flow, lti_class):
    assert not (lti_class.course / ".venv").exists()
    assert all(status == 0 for status, _ in flow["runs"].values())


def test_a_launch_from_another_course_is_refused_and_moves_no_grade(flow, lti_class):
    before = lti_class.launches()
    session, answer = launch(lti_class.stand_in, lti_class.hub, PEOPLE[ADA], ELSEWHERE)
    text = page_text(answer)
    say("launch from SANDBOX", f"{answer.status_code}: {text[text.find(REFUSED) :][:300]}")
    assert answer.status_code == 403 and text.count(REFUSED) == 1
    assert '"Attention, Step by Step" (ATTN, id 2)' in text
    assert '"Sandbox for teachers" (SANDBOX, id 3)' in text
    assert lti_class.launches() == before
    status, output = lti_class.lti_grades("--provisional")
    assert status == 0 and lti_class.stand_in.grade(ELSEWHERE, PEOPLE[ADA]) is None


def test_a_teaching_assistant_joins_the_graders_and_lands_in_the_formgrader(flow, lti_class):
    session, answer = launch(lti_class.stand_in, lti_class.hub, PEOPLE[TA])
    assert answer.status_code == 302, page_text(answer)[:500]
    landing = answer.headers["Location"]
    assert landing == f"/user/{hc.INSTRUCTOR}/formgrader/manage_submissions/{LAB}"
    page = session.get(f"{lti_class.hub.url}{landing}", timeout=120)
    say(f"{TA} (a teacher in the LMS) launches the lab", f"{page.status_code} {page.url[:90]}")
    ends = ("/hub/api/oauth2/authorize", f"/manage_submissions/{LAB}")  # the hub asks them first
    assert page.status_code == 200 and page.url.split("?")[0].endswith(ends)
    assert "formgrade-attention-step-by-step" in lti_class.hub.api("GET", f"/users/{TA}")["groups"]
