"""LTI 1.3 end to end: a student launches lab 01 from the LMS, and the grade goes back by AGS.

No LMS is reachable from CI: the platform is a stand-in for Moodle 4.5 (lti_platform.py) on
loopback. Everything else is real: JupyterHub with deploy/jupyterhub_lti_config.py
(ltiauthenticator), configurable-http-proxy, the class's Unix users, nbgrader, the sandboxed
autograder and the AGS sender (course/lms/lti.py, what `make lti-grades` runs).

In headless Chromium, Ada logs in to the stand-in and opens the lab's activity: the OIDC flow
takes her into her own server, with lab 01 fetched and open. Alan launches the same way (without
a browser). Both submit; the instructor collects and autogrades; `lti-grades` holds both scores
back (written answers to grade), sends them as provisional with PROVISIONAL=1, sends Ada's
final score once her written answers are graded, and a last run (then the instructor's button,
/course-lti/grades) sends nothing. Then each bad
launch is refused with a page that says why, and changes no record.
`make test-hub` runs it, as root; `pytest -s` prints each step and what the stand-in received.
"""

import html
import json
import os
import re
import secrets
from html.parser import HTMLParser

import hub_course as hc
import pytest
import requests
from lti_platform import ADMINISTRATOR, INSTRUCTOR, Activity, Person, PlatformStandIn
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

pytestmark = pytest.mark.skipif(
    os.environ.get("COURSE_HUB_TEST") != "1",
    reason="make test-hub runs it: it needs root, configurable-http-proxy and setfacl",
)
PEOPLE = {
    ADA: Person("3", ADA, "Ada", "Lovelace"),
    ALAN: Person("4", ALAN, "Alan", "Turing"),
    hc.INSTRUCTOR: Person("2", hc.INSTRUCTOR, "Grace", "Hopper", [INSTRUCTOR, ADMINISTRATOR]),
    "attn-ghost": Person("5", "attn-ghost", "No", "Account"),
}
ACTIVITY = Activity("7", "5", LAB, "Lab 01: softmax")
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
        self.stand_in.add_activity(ACTIVITY)
        endpoints = self.stand_in.endpoints
        lti = {f"COURSE_LTI_{k.upper()}": v for k, v in endpoints.items()}
        environment = {**self.environment, **lti, "JUPYTERHUB_CRYPT_KEY": secrets.token_hex(32)}
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
        return json.loads((self.course / "lti" / "launches.json").read_text())

    def lti_grades(self, *options):
        """`make lti-grades` as the instructor: (exit status, output)."""
        result = self.as_user(hc.INSTRUCTOR, [self.python, *LTI_GRADES, *options], self.course)
        return result.returncode, result.stdout + result.stderr

    def close(self):
        """Stop the hub and the stand-in."""
        super().close()
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
    for name, (status, output) in runs.items():
        say(f"lti-grades ({name})", f"exit {status}")
        for line in output.strip().splitlines():
            say("", f"| {line}")
    return {"runs": runs, "provisional": received_provisional, "landed": (url, title)}


def grades_button(the_class):
    """The instructor's "Send, provisional too" on /course-lti/grades: (0 if sent, its report)."""
    form = {"lab": LAB, "provisional": "1"}
    page = the_class.servers[hc.INSTRUCTOR].request("POST", "/course-lti/grades", data=form)
    assert page.status_code == 200, page.text[:2000]
    report = re.search(r'<pre id="report">(.*?)</pre>', page.text, re.DOTALL).group(1)
    return (0 if f"{LAB}: sent" in page.text else 1), html.unescape(report)


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
    ada = record["launches"][ADA][LAB]
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
