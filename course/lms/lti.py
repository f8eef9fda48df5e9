"""LTI 1.3 Assignment and Grade Services: send a lab's grades to the LMS that launched it.

    python -m course.lms.lti grades ASSIGNMENT [--provisional] [--replace-final]
    python -m course.lms.lti jwks          the course's public key (JWKS)

Run from the course folder, with the course's Python: the hub's (on the hub, as the
instructor) or .venv's (`make lti-grades` runs the same).

The hub (deploy/lti_login.py) records each launch in the course folder's `lti/`
(`course.lms.launches`): the platform (issuer, client id, deployment id, token URL) and, per LMS
course, user, lab and resource link (the activity), the user's `sub`, the lineitem and the
course's `lineitems` service the launch carried. Grades go only to the LMS course the course is
linked to, into the lab's current column: the sender reads the course's line items
(its gradebook's columns for the tool) and takes the one whose resource link is an activity the
lab was launched from, by anyone, the teacher included. A student's score goes there whether
or not they launched that activity (their `sub` comes from any launch of theirs in the course),
as a share of the column's maximum. The course signs its token requests with its own key,
`lti/tool_key.pem`, made on first use; the hub serves its public half as a JWKS. What was sent
is kept in `lti/sent/<lab>.json`: a second run sends only what changed, and a provisional score
never replaces a final one already sent.
"""

import argparse
import base64
import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from course.coursedir import gradebook_db, paths, submissions
from course.coursedir.words import counted
from course.lms import launches as records
from course.lms.launches import hand_over, lti_folder

KEY_FILE = "tool_key.pem"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
MAX_PAGES = 100  # of line items: Moodle answers in one, Canvas ten to a page
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
FINAL, PROVISIONAL = "FullyGraded", "PendingManual"  # AGS gradingProgress of a graded score
TIMEOUT = 30
HELD_BACK = (
    "  not sent, written answers to grade in the formgrader first: {students}\n"
    "  (--provisional, or PROVISIONAL=1, sends them now, marked PendingManual)"
)
FINAL_KEPT = (
    "  not sent, a final score is already in the LMS, and a provisional one would erase it "
    "(Moodle keeps no grade for a score that is not FullyGraded): {students}\n"
    "  (--replace-final, or REPLACE_FINAL=1, sends them anyway)"
)


class LtiError(Exception):
    """The platform refused a request, or could not be reached; the message says which."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status  # the HTTP status of the platform's answer, None when none


@dataclass(frozen=True)
class Grade:
    """A student's grade for a lab, as it goes to the LMS."""

    student: str
    score: float
    maximum: float
    pending: list  # the cells of written answers still to grade by hand
    comment: str


# ---------------------------------------------------------------------------------------------
# The course's folder for LTI, and its key


def tool_key(root=paths.ROOT, owner=None):
    """The course's private RSA key (lti/tool_key.pem), made on first use (given to `owner`)."""
    path = lti_folder(root, owner) / KEY_FILE
    if not path.exists():
        with contextlib.suppress(FileExistsError):  # another process made it first: read theirs
            publish_new_key(path, owner)
    return serialization.load_pem_private_key(path.read_bytes(), password=None)


def publish_new_key(path, owner=None):
    """Make a new key and link it whole at `path`; FileExistsError if a key is there already.

    The key is written to a private file beside `path` first, so that a process that finds
    `path` never reads half a key.
    """
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    descriptor, written = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")  # mode 600
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(pem)
        hand_over(owner, written)
        os.link(written, path)
    finally:
        os.unlink(written)


def public_jwk(key):
    """The public half of `key` as a JWK, its `kid` the RFC 7638 thumbprint."""
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    canonical = json.dumps({name: jwk[name] for name in ("e", "kty", "n")}, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).digest()
    kid = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


def jwks(root=paths.ROOT):
    """The course's JSON Web Key Set: what the hub serves at /hub/lti/jwks."""
    return {"keys": [public_jwk(tool_key(root))]}


# ---------------------------------------------------------------------------------------------
# The launches the hub recorded


def lms_users(launches):
    """Each user's LMS id (`sub`), from their latest launch of any lab of the course."""
    latest = {}
    for launch in launches:
        if launch.user not in latest or launch.time > latest[launch.user].time:
            latest[launch.user] = launch
    return {user: launch.sub for user, launch in latest.items()}


def lab_links(launches, assignment):
    """The activities a lab was launched from, by anyone: {resource link: its latest launch}."""
    links = {}
    for launch in launches:
        if launch.lab == assignment and (launch.link not in links
                                         or launch.time > links[launch.link].time):  # fmt: skip
            links[launch.link] = launch
    return links


def service_of(launches):
    """(the course's `lineitems` URL, the AGS scopes) of its latest launch that names them."""
    named = [launch for launch in launches if launch.lineitems]
    if not named:
        return "", []
    latest = max(named, key=lambda launch: launch.time)
    return latest.lineitems, list(latest.scope)


# ---------------------------------------------------------------------------------------------
# The platform: token, columns and scores


def client_assertion(platform, key):
    """The signed JWT that authenticates the course at the platform's token endpoint."""
    now = int(time.time())
    claims = {
        "iss": platform.client_id,
        "sub": platform.client_id,
        "aud": platform.token_url,
        "iat": now,
        "exp": now + 300,
        "jti": uuid.uuid4().hex,
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": public_jwk(key)["kid"]})


def token_scope(granted):
    """The scopes to ask for: scores, and reading the columns (read-only when the LMS grants it).

    `granted` is the AGS claim's `scope` of a launch: what the platform lets the tool do.
    """
    read = [scope for scope in (LINEITEM_READ_SCOPE, LINEITEM_SCOPE) if scope in granted]
    return " ".join((read or [LINEITEM_READ_SCOPE])[:1] + [SCORE_SCOPE])


def access_token(platform, key, session, scope=SCORE_SCOPE):
    """A bearer token for `scope` (client credentials); LtiError with the answer if not."""
    form = {
        "grant_type": "client_credentials",
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": client_assertion(platform, key),
        "scope": scope,
    }
    answer = call(session, "POST", platform.token_url, data=form)
    try:
        return answer.json()["access_token"]
    except (ValueError, KeyError):
        raise LtiError(f"token endpoint answered without a token: {answer.text[:300]}") from None


def call(session, method, url, **kwargs):
    """A request to the platform; the response if 2xx, else LtiError with its status and text."""
    try:
        answer = session.request(method, url, timeout=TIMEOUT, **kwargs)
    except requests.RequestException as error:
        raise LtiError(f"{url} could not be reached: {error}") from None
    if not answer.ok:
        raise LtiError(f"{url} answered {answer.status_code} {answer.reason}{details(answer)}",
                       answer.status_code)  # fmt: skip
    return answer


def details(answer):
    """What an error's body adds to its reason phrase: ": <text>", or "" when nothing.

    Moodle's services answer an error with JSON that repeats the status and reason phrase,
    and the request; the token endpoint answers with {"error": ...}.
    """
    try:
        body = answer.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "reason" in body:
        return ""
    if isinstance(body, dict) and "error" in body:
        return f": {body['error']}"
    text = " ".join(answer.text.split())[:300]
    return f": {text}" if text else ""


@dataclass(frozen=True)
class Column:
    """A column of the LMS course's gradebook that takes the tool's scores (an AGS line item)."""

    url: str
    label: str
    maximum: float | None  # the LMS's maximum grade, None when it gives none
    link: str  # the resource link (activity) it belongs to, "" when none


def read_columns(session, url, token):
    """The LMS course's columns for the tool (its line items), page after page.

    Only line items on the service's own site are kept: a score never goes elsewhere.
    """
    headers = {"Authorization": f"Bearer {token}", "Accept": CONTAINER_TYPE}
    site, columns = urlsplit(url)[:2], []
    for _ in range(MAX_PAGES):
        answer = call(session, "GET", url, headers=headers)
        try:
            items = answer.json()
        except ValueError:
            items = None
        if not isinstance(items, list):
            raise LtiError(f"{url} answered without a list of line items: {answer.text[:200]}")
        items = [item for item in items if isinstance(item, dict) and item.get("id")]
        columns += [column_of(item) for item in items if urlsplit(str(item["id"]))[:2] == site]
        url = answer.links.get("next", {}).get("url")
        if not url:
            break
    return columns


def column_of(item):
    """A Column from an AGS line item (JSON)."""
    maximum = item.get("scoreMaximum")
    valid = isinstance(maximum, int | float) and not isinstance(maximum, bool) and maximum > 0
    link = item.get("resourceLinkId") or item.get("ltiLinkId") or ""
    return Column(str(item["id"]), str(item.get("label", "")), float(maximum) if valid else None,
                  str(link))  # fmt: skip


def scores_url(lineitem):
    """The lineitem's scores endpoint: `/scores` at the end of its path, before any query."""
    parts = urlsplit(lineitem)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def score_body(sub, grade, timestamp, maximum=None):
    """The AGS score of `grade` for the user `sub`, as a share of `maximum` (the column's
    maximum grade; the lab's when None)."""
    maximum = maximum or grade.maximum
    share = grade.score / grade.maximum if grade.maximum else 0.0
    return {
        "userId": sub,
        "scoreGiven": round(share * maximum, 4),
        "scoreMaximum": maximum,
        "comment": grade.comment,
        "activityProgress": "Completed",
        "gradingProgress": PROVISIONAL if grade.pending else FINAL,
        "timestamp": timestamp,
    }


# ---------------------------------------------------------------------------------------------
# The grades, from nbgrader's gradebook


def lab_grades(assignment, root=paths.ROOT):
    """(grades of the students autograded, students with a submission not graded) of a lab."""
    with gradebook_db.open_gradebook(root) as book:
        states = submissions.lab_states(book, assignment, root)
    grades = [grade_of(state, assignment) for state in states if state.graded]
    return grades, [state.student for state in states if not state.graded]


def grade_of(state, assignment):
    """A submission's Grade, from its SubmissionState: its score after any late penalty, and the
    feedback's summary."""
    pending = list(state.to_grade)
    comment = grade_comment(assignment, state.score, state.max_score, pending, state.late_penalty)
    return Grade(state.student, state.score, state.max_score, pending, comment)


def grade_comment(assignment, score, maximum, pending, penalty):
    """The comment that goes with a score: the feedback's summary in a few lines."""
    total = f"{assignment}: {score:g} / {maximum:g}"
    lines = [total + (f" (late penalty {penalty:g})" if penalty else "")]
    if pending:
        lines.append(
            f"Provisional: {counted(len(pending), 'written answer')} still to be graded, "
            f"counted as 0 ({', '.join(pending)})."
        )
    lines.append("Your feedback: in the course's JupyterHub, Assignments, Fetch Feedback.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Sending


def sent_path(root, assignment):
    """Where what was sent of a lab is kept: lti/sent/<lab>.json."""
    folder = lti_folder(root) / "sent"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"{assignment}.json"


def read_sent(root, assignment):
    """What was sent of a lab, per student: {student: {"lineitem", "score": body}}."""
    return records.read_private(sent_path(root, assignment)) or {}


def write_sent(root, assignment, sent):
    """Save what was sent of a lab (atomically: a failure never loses a grade already sent)."""
    records.write_private(sent_path(root, assignment), sent)


def final_sent(record, lineitem):
    """True when the score last sent to `lineitem` (per `record`) was final (FullyGraded)."""
    if not record or record.get("lineitem") != lineitem:
        return False
    return record["score"].get("gradingProgress") == FINAL


def unchanged(record, lineitem, body):
    """True when `body` (timestamp aside) already went to `lineitem`."""
    if not record or record.get("lineitem") != lineitem:
        return False
    earlier = {k: v for k, v in record["score"].items() if k != "timestamp"}
    return earlier == {k: v for k, v in body.items() if k != "timestamp"}


OPEN_ONCE = (
    "open {lab}'s activity in the LMS course once, as the teacher (the launch tells the hub "
    "which activity, and so which column, is the lab's), then run this again"
)
NO_SERVICE = (
    "the launches from the LMS course name no line-items service (its tool's Assignment and "
    "Grade Services are off): in Moodle, set the tool's IMS LTI Assignment and Grade Services "
    "to 'Use this service for grade sync and column management', then open the lab once"
)
NOT_READ = (
    "the LMS course's columns could not be read: {error} (the tool needs to see them: in "
    "Moodle, the tool's IMS LTI Assignment and Grade Services is 'Use this service for grade "
    "sync and column management'; in Canvas, its key can view assignment data)"
)


@dataclass
class Delivery:
    """What a run did, student by student."""

    sent: list
    unchanged: list
    failed: list  # (student, why it was not sent and what to do)
    final_kept: list  # provisional scores held back: a final one is in the LMS
    columns: list = field(default_factory=list)  # the lab's columns in the LMS course
    moved: bool = False  # a column that scores went to before is gone

    def fail(self, students, why):
        """Record the same reason for several students."""
        self.failed.extend((student, why) for student in students)
        return self


def recorded(root):
    """(the platform, the Launches from the LMS course the course is linked to) that the hub
    recorded in the course folder `root`; (None, []) before the course is linked and launched."""
    folder = Path(root) / records.LTI_FOLDER
    (platform, launches), linked = records.read_launches(folder), records.read_link(folder)
    if platform is None or linked is None:
        return None, []
    return platform, records.course_launches(launches, linked.id)


def send_grades(assignment, root=paths.ROOT, provisional=False, session=None,
                replace_final=False):  # fmt: skip
    """Send each graded student's score of a lab to the lab's column in the linked LMS course;
    (ok, report)."""
    platform, course = recorded(root)
    if platform is None:
        where = f"{records.LTI_FOLDER}/{records.LAUNCHES_FILE}"
        return False, f"{assignment}: no LTI launch recorded yet ({where})"
    grades, not_graded = lab_grades(assignment, root)
    held = [g.student for g in grades if g.pending and not provisional]
    to_send = [g for g in grades if g.student not in held]
    users = lms_users(course)
    never = [g.student for g in to_send if g.student not in users]
    to_send = [g for g in to_send if g.student in users]
    outcome = Delivery([], [], [], [])
    if to_send:
        deliver(assignment, root, platform, to_send, course,
                outcome, session, replace_final)  # fmt: skip
    lines = report(assignment, outcome, never, not_graded, held, grades)
    return not outcome.failed, "\n".join(lines)


def deliver(assignment, root, platform, grades, course, outcome, session=None,
            replace_final=False):  # fmt: skip
    """Find the lab's column, then post each grade that changed; record each success at once.

    `course` is the Launches from the linked LMS course. A provisional score
    for a student whose final score is in the column is held back, unless `replace_final`.
    """
    session = session or requests.Session()
    try:
        token, columns = find_columns(root, platform, course, session)
    except LtiError as error:
        return outcome.fail([grade.student for grade in grades], str(error))
    links, users = lab_links(course, assignment), lms_users(course)
    outcome.columns = lab_columns(columns, links)
    sent, current = read_sent(root, assignment), {bare(column.url) for column in columns}
    outcome.moved = any(bare(sent[g.student]["lineitem"]) not in current for g in grades
                        if g.student in sent)  # fmt: skip
    timestamp = datetime.now(UTC).isoformat(timespec="milliseconds")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": SCORE_TYPE}
    for grade in grades:
        column = column_for(grade.student, outcome.columns, course, assignment)
        if column is None:
            outcome.failed.append((grade.student, unplaced(assignment, outcome.columns, links)))
            continue
        record = sent.get(grade.student)
        body = score_body(users[grade.student], grade, timestamp, column.maximum)
        if unchanged(record, column.url, body):
            outcome.unchanged.append(grade.student)
            continue
        if grade.pending and final_sent(record, column.url) and not replace_final:
            outcome.final_kept.append(grade.student)
            continue
        try:
            call(session, "POST", scores_url(column.url), headers=headers, data=json.dumps(body))
        except LtiError as error:
            outcome.failed.append((grade.student, refusal(error, assignment)))
            continue
        sent[grade.student] = {"lineitem": column.url, "score": body}
        write_sent(root, assignment, sent)
        outcome.sent.append(grade.student)
    return outcome


def find_columns(root, platform, course, session):
    """(a bearer token, the LMS course's columns for the tool); LtiError saying what to do."""
    url, granted = service_of(course)
    if not url:
        raise LtiError(NO_SERVICE)
    try:
        token = access_token(platform, tool_key(root), session, token_scope(granted))
    except LtiError as error:
        raise LtiError(f"no token: {error}", error.status) from None
    try:
        return token, read_columns(session, url, token)
    except LtiError as error:
        raise LtiError(NOT_READ.format(error=error), error.status) from None


def lab_columns(columns, links):
    """The lab's columns: those of the activities (resource links) it was launched from, or
    whose lineitem a launch of it carried."""
    carried = {bare(launch.lineitem) for launch in links.values() if launch.lineitem}
    return [column for column in columns if column.link in links or bare(column.url) in carried]


def bare(lineitem):
    """A lineitem URL without its query (Moodle takes a score with or without `?type_id=`)."""
    return lineitem.split("?")[0]


def column_for(student, columns, course, assignment):
    """The column a student's score goes to: the lab's only one; of several, the one the
    student launched last; None when there is none, or several and they launched none."""
    if len(columns) == 1:
        return columns[0]
    launched = [launch for launch in course if (launch.user, launch.lab) == (student, assignment)]
    mine = sorted(((launch.time, launch.link, launch.lineitem) for launch in launched),
                  reverse=True)  # fmt: skip
    for _, link, lineitem in mine:
        for column in columns:
            if column.link == link or (lineitem and bare(column.url) == bare(lineitem)):
                return column
    return None


def unplaced(assignment, columns, links):
    """Why a score has no column to go to, and what to do."""
    if columns:
        labels = ", ".join(f'"{column.label}"' for column in columns)
        return (f"{assignment} has {len(columns)} activities in the LMS course ({labels}), and "
                "this student opened none of them: delete the extra one in the LMS, or "
                f"ask the student to open {assignment} once")  # fmt: skip
    if not links:
        return f"no activity of {assignment} was ever opened from the LMS course: " + \
            OPEN_ONCE.format(lab=assignment)  # fmt: skip
    if not any(launch.lineitem for launch in links.values()):
        return (f"{assignment}'s activity takes no grades in the LMS (its launches carry no "
                "column): give it a grade (Grade type Point) in its settings, then "
                + OPEN_ONCE.format(lab=assignment))  # fmt: skip
    again = OPEN_ONCE.format(lab=assignment)
    return (f"the LMS column of {assignment} is gone: the activity was deleted, or deleted and "
            f"re-created, in the LMS. If re-created, {again}")  # fmt: skip


def refusal(error, assignment):
    """The platform's answer to a score, and what to do when its column is gone."""
    if error.status == 404 and "doesn't exist" in str(error):
        again = OPEN_ONCE.format(lab=assignment)
        return (f"{assignment}'s column was deleted in the LMS during this run (the activity was "
                f"deleted or re-created): {again} ({error})")  # fmt: skip
    return str(error)


def report(assignment, outcome, never, not_graded, held, grades):
    """The lines `make lti-grades` prints."""
    by_student = {g.student: g for g in grades}
    lines = [
        f"{assignment}: {counted(len(outcome.sent), 'score')} sent to the LMS, "
        f"{len(outcome.unchanged)} unchanged since the last run, {len(outcome.failed)} not sent"
    ]
    for column in outcome.columns:
        share = (f"each score sent as its share of {column.maximum:g}" if column.maximum
                 else "it gives no maximum: each score sent out of the lab's points")  # fmt: skip
        lines.append(f'  the lab\'s column in the LMS: "{column.label}" ({share})')
    if outcome.moved and outcome.columns:
        lines.append(f"  {assignment}'s activity was re-created in the LMS: the column scores went "
                     "to before is gone, and every score goes to the current one")  # fmt: skip
    for student in outcome.sent:
        grade = by_student[student]
        state = f"provisional ({PROVISIONAL})" if grade.pending else f"final ({FINAL})"
        lines.append(f"  sent {student}: {grade.score:g} / {grade.maximum:g}, {state}")
    reasons = {}
    for student, why in outcome.failed:
        reasons.setdefault(why, []).append(student)
    for why, students in reasons.items():
        lines.append(f"  NOT SENT {', '.join(students)} (kept for the next run): {why}")
    if never:
        lines.append(
            f"  not sent, never launched anything from the LMS course (the LMS's id for them is "
            f"not known yet; their score goes once they open {assignment} in the LMS): "
            f"{', '.join(never)}"
        )
    if not_graded:
        lines.append(f"  not graded (see make autograde): {', '.join(not_graded)}")
    if held:
        lines.append(HELD_BACK.format(students=", ".join(held)))
    if outcome.final_kept:
        lines.append(FINAL_KEPT.format(students=", ".join(outcome.final_kept)))
    return lines


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    grades = commands.add_parser("grades", help="send a lab's grades by AGS")
    grades.add_argument("assignment", help="the lab, e.g. 01_softmax")
    grades.add_argument(
        "--provisional",
        action="store_true",
        help="also scores with written answers still to grade (PendingManual)",
    )
    grades.add_argument(
        "--replace-final",
        action="store_true",
        help="send a provisional score even where a final one is already in the LMS",
    )
    grades.add_argument("--root", default=str(paths.ROOT), help="course directory")
    keys = commands.add_parser("jwks", help="print the course's public key set")
    keys.add_argument("--root", default=str(paths.ROOT), help="course directory")
    args = parser.parse_args(argv)
    if args.command == "jwks":
        print(json.dumps(jwks(args.root), indent=1))
        return
    ok, message = send_grades(args.assignment, Path(args.root), args.provisional,
                              replace_final=args.replace_final)  # fmt: skip
    print(message)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
