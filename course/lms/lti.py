"""LTI 1.3 Assignment and Grade Services: send a lab's grades to the LMS that launched it.

    python -m course.lms.lti grades ASSIGNMENT [--provisional] [--replace-final]
    python -m course.lms.lti jwks          the course's public key (JWKS)

Run from the course folder, with the course's Python: the hub's (on the hub, as the
instructor) or .venv's (`make lti-grades` runs the same).

The hub (deploy/lti_login.py) records each launch in `lti/launches.json` of the course folder:
the platform (issuer, client id, deployment id, token URL) and, per LMS course, student, lab
and resource link, the student's `sub` and the lineitem the launch carried. Grades go only to
lineitems of the LMS course the course is linked to, `lti/lms_course.json`. The course signs its
token requests with its own key, `lti/tool_key.pem`, made on first use; the hub serves its
public half as a JWKS. What was sent is kept in `lti/sent/<lab>.json`: a second run sends only
what changed, and a provisional score never replaces a final one already sent.
"""

import argparse
import base64
import hashlib
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from course.coursedir import gradebook_db, paths, submissions
from course.coursedir.words import counted

LTI_FOLDER = "lti"
KEY_FILE = "tool_key.pem"
LAUNCHES_FILE = "launches.json"
LMS_COURSE_FILE = "lms_course.json"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
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


def lti_folder(root=paths.ROOT, owner=None):
    """`lti/` of the course folder, private to its owner and ignored by git; made if missing.

    `owner` (a `pwd` entry) is who gets what is made here, when a root process (the hub) makes it.
    """
    folder = Path(root) / LTI_FOLDER
    if not folder.is_dir():
        folder.mkdir(mode=0o700)
        hand_over(owner, folder)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
        hand_over(owner, ignore)
    return folder


def tool_key(root=paths.ROOT, owner=None):
    """The course's private RSA key (lti/tool_key.pem), made on first use (given to `owner`)."""
    path = lti_folder(root, owner) / KEY_FILE
    if not path.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(pem)
        hand_over(owner, path)
    return serialization.load_pem_private_key(path.read_bytes(), password=None)


def hand_over(owner, path):
    """Give `path` to `owner` (a `pwd` entry), without following a link; nothing if None."""
    if owner is not None:
        os.chown(path, owner.pw_uid, owner.pw_gid, follow_symlinks=False)


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
# The platform: token and scores


def read_record(root, name):
    """A JSON file the hub writes in lti/ (see the module's docstring), or None before any."""
    path = Path(root) / LTI_FOLDER / name
    return json.loads(path.read_text()) if path.exists() else None


def lab_launches(launches, context_id, assignment):
    """Each user's latest launch of a lab, with a lineitem, from the LMS course `context_id`."""
    chosen = {}
    for user, labs in launches.get("launches", {}).get(context_id, {}).items():
        links = [link for link in labs.get(assignment, {}).values() if link.get("lineitem")]
        if links:
            chosen[user] = max(links, key=lambda link: link["time"])
    return chosen


def client_assertion(platform, key):
    """The signed JWT that authenticates the course at the platform's token endpoint."""
    now = int(time.time())
    claims = {
        "iss": platform["client_id"],
        "sub": platform["client_id"],
        "aud": platform["token_url"],
        "iat": now,
        "exp": now + 300,
        "jti": uuid.uuid4().hex,
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": public_jwk(key)["kid"]})


def access_token(platform, key, session):
    """A bearer token for posting scores (client credentials); LtiError with the answer if not."""
    form = {
        "grant_type": "client_credentials",
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": client_assertion(platform, key),
        "scope": SCORE_SCOPE,
    }
    answer = post(session, platform["token_url"], data=form)
    try:
        return answer.json()["access_token"]
    except (ValueError, KeyError):
        raise LtiError(f"token endpoint answered without a token: {answer.text[:300]}") from None


def post(session, url, **kwargs):
    """POST to the platform; the response if 2xx, else LtiError with its status and text."""
    try:
        answer = session.post(url, timeout=TIMEOUT, **kwargs)
    except requests.RequestException as error:
        raise LtiError(f"{url} could not be reached: {error}") from None
    if not answer.ok:
        raise LtiError(f"{url} answered {answer.status_code} {answer.reason}{details(answer)}")
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


def scores_url(lineitem):
    """The lineitem's scores endpoint: `/scores` at the end of its path, before any query."""
    parts = urlsplit(lineitem)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def score_body(sub, grade, timestamp):
    """The AGS score of `grade` for the user `sub`."""
    return {
        "userId": sub,
        "scoreGiven": round(grade.score, 4),
        "scoreMaximum": grade.maximum,
        "comment": grade.comment,
        "activityProgress": "Completed",
        "gradingProgress": "PendingManual" if grade.pending else "FullyGraded",
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
    path = sent_path(root, assignment)
    return json.loads(path.read_text()) if path.exists() else {}


def write_sent(root, assignment, sent):
    """Save what was sent of a lab (atomically: a failure never loses a grade already sent)."""
    path = sent_path(root, assignment)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(sent, indent=1, sort_keys=True))
    partial.replace(path)


def final_sent(record, lineitem):
    """True when the score last sent to `lineitem` (per `record`) was final (FullyGraded)."""
    if not record or record.get("lineitem") != lineitem:
        return False
    return record["score"].get("gradingProgress") == "FullyGraded"


def unchanged(record, lineitem, body):
    """True when `body` (timestamp aside) already went to `lineitem`."""
    if not record or record.get("lineitem") != lineitem:
        return False
    earlier = {k: v for k, v in record["score"].items() if k != "timestamp"}
    return earlier == {k: v for k, v in body.items() if k != "timestamp"}


@dataclass
class Delivery:
    """What a run did, student by student."""

    sent: list
    unchanged: list
    failed: list  # (student, the platform's answer)
    final_kept: list  # provisional scores held back: a final one is in the LMS


def send_grades(assignment, root=paths.ROOT, provisional=False, session=None,
                replace_final=False):  # fmt: skip
    """Send each graded student's score of a lab to their launch's lineitem; (ok, report)."""
    launches, linked = read_record(root, LAUNCHES_FILE), read_record(root, LMS_COURSE_FILE)
    if launches is None or linked is None:
        return False, f"{assignment}: no LTI launch recorded yet ({LTI_FOLDER}/{LAUNCHES_FILE})"
    grades, not_graded = lab_grades(assignment, root)
    held = [g.student for g in grades if g.pending and not provisional]
    to_send = [g for g in grades if g.student not in held]
    launched = lab_launches(launches, linked["id"], assignment)
    never = [g.student for g in to_send if g.student not in launched]
    to_send = [g for g in to_send if g.student in launched]
    outcome = deliver(assignment, root, launches["platform"], to_send, launched, session,
                      replace_final)  # fmt: skip
    lines = report(assignment, outcome, never, not_graded, held, grades)
    return not outcome.failed, "\n".join(lines)


def deliver(assignment, root, platform, grades, launched, session=None, replace_final=False):
    """Post each grade that changed; record each success at once. A Delivery.

    A provisional score for a student whose final score is in the LMS is held back, unless
    `replace_final`.
    """
    session = session or requests.Session()
    sent = read_sent(root, assignment)
    outcome = Delivery([], [], [], [])
    timestamp = datetime.now(UTC).isoformat(timespec="milliseconds")
    waiting = []
    for grade in grades:
        launch, record = launched[grade.student], sent.get(grade.student)
        body = score_body(launch["sub"], grade, timestamp)
        if unchanged(record, launch["lineitem"], body):
            outcome.unchanged.append(grade.student)
        elif grade.pending and final_sent(record, launch["lineitem"]) and not replace_final:
            outcome.final_kept.append(grade.student)
        else:
            waiting.append((grade.student, launch["lineitem"], body))
    if not waiting:
        return outcome
    try:
        token = access_token(platform, tool_key(root), session)
    except LtiError as error:
        outcome.failed.extend((student, f"no token: {error}") for student, _, _ in waiting)
        return outcome
    headers = {"Authorization": f"Bearer {token}", "Content-Type": SCORE_TYPE}
    for student, lineitem, body in waiting:
        try:
            post(session, scores_url(lineitem), headers=headers, data=json.dumps(body))
        except LtiError as error:
            outcome.failed.append((student, str(error)))
            continue
        sent[student] = {"lineitem": lineitem, "score": body}
        write_sent(root, assignment, sent)
        outcome.sent.append(student)
    return outcome


def report(assignment, outcome, never, not_graded, held, grades):
    """The lines `make lti-grades` prints."""
    by_student = {g.student: g for g in grades}
    lines = [
        f"{assignment}: {counted(len(outcome.sent), 'score')} sent to the LMS, "
        f"{len(outcome.unchanged)} unchanged since the last run, {len(outcome.failed)} not sent"
    ]
    for student in outcome.sent:
        grade = by_student[student]
        state = "provisional (PendingManual)" if grade.pending else "final (FullyGraded)"
        lines.append(f"  sent {student}: {grade.score:g} / {grade.maximum:g}, {state}")
    for student, answer in outcome.failed:
        lines.append(f"  NOT SENT {student} (kept for the next run): {answer}")
    if never:
        lines.append(
            f"  no lineitem (never launched {assignment} from the LMS, or its activity takes no "
            f"grades): {', '.join(never)}"
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
