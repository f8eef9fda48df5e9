"""A stand-in for Moodle 4.5 as an LTI 1.3 platform, on loopback, for the tests of LTI.

No LMS is reachable from CI. This stand-in plays the messages that Moodle 4.5 sends and answers,
as observed on a real Moodle 4.5.6 (mod/lti): the launch's form to the tool's login URL, the OIDC
authorization (`mod/lti/auth.php`, answering with a form that posts the id_token), its keys
(`mod/lti/certs.php`), the token endpoint (`mod/lti/token.php`: client credentials with a JWT
assertion, checked against the tool's JWKS URL), and the gradebook services
(`mod/lti/services.php`, Moodle's ltiservice_gradebookservices): the course's line items,
scores posted to `<lineitem>/scores` and results read from `<lineitem>/results`.

What a real Moodle 4.5.6 was seen to do, and the stand-in does too:
* one site, several courses: a tool registered for the site can be added to any of them, and
  its launches carry that course as the context (`id` the course's id, `label` its short
  name, `title` its full name); lineitems are per course;
* an activity has three ids: its course module (`launch.php?id=`, the `cmid` of the
  `lti_message_hint`), its LTI instance (the launch's resource link id, and the line item's
  `resourceLinkId`), and its grade item (the line item's number); each is new when an activity
  is deleted and added again, and the deleted one's grade item answers 404 "Not Found: Grade
  item N doesn't exist" with its grades gone;
* an activity of Grade type None (`grademax` 0 here) has no grade item: its launches carry the
  course's `lineitems` but no `lineitem`, and the course's line items leave it out;
* renaming an activity renames its line item (`label`), changing its maximum grade changes the
  line item's `scoreMaximum` (existing grades rescaled only if the teacher asks), hiding it
  keeps its line item and takes scores, but a student's launch gets "Sorry, this activity is
  currently hidden";
* the course's line items (`<course>/lineitems?type_id=N`) are listed only with the Accept
  header `application/vnd.ims.lis.v2.lineitemcontainer+json` (or none; `*/*` gets 400), as a
  JSON list of {id, label, scoreMaximum, resourceId, tag, resourceLinkId, ltiLinkId}, the
  filters `resource_link_id`, `resource_id` and `tag` applied; an activity's own line item has
  an empty `resourceId` and `tag` (its form cannot set them);
* `token.php` grants the scopes asked for that the tool's services allow (the README's
  setting, grade sync and column management, allows all four AGS scopes), and each service
  refuses a token without its scope (401);
* storing a student's grade in one grade item leaves empty grade rows (no grade, no time) for
  them in the course's other items; the results service lists only rows with a time, and an
  empty row refuses no later score;
* the lineitem URLs carry `?type_id=N`, and a score is taken with or without it;
* the id_token's `exp` is its `iat` + 60 s; it has no `email` claim unless the tool's privacy
  settings share the e-mail address (the README's do not);
* a site administrator launches with the roles Instructor, system Administrator and
  institution Administrator;
* `token.php` answers its JSON as `text/html`, and does not check the assertion's `jti` (a
  replayed assertion gets a token);
* a score service error has the reason in its status line ("404 Not Found: Grade item 66
  doesn't exist", "400 Incorrect score received..."), and a JSON body that repeats the status
  and reason with the request;
* a score is kept as a grade only when `gradingProgress` is FullyGraded (any other stores an
  empty grade, erasing one held), rescaled to the activity's maximum, with the comment as
  feedback; a score no newer than the one held is refused (409), as is a user not enrolled in
  the lineitem's course (400).

It is not Moodle: no database; courses, activities and users are given in Python.
"""

import html
import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
ADMINISTRATOR = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"
SYSTEM_ADMINISTRATOR = "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"
SITE_ADMIN_ROLES = [INSTRUCTOR, SYSTEM_ADMINISTRATOR, ADMINISTRATOR]  # a Moodle site admin's
AGS_SCOPES = [
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
]
TYPE_ID = "1"  # the id of the tool's registration for the site: its deployment id
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"


@dataclass(frozen=True)
class Course:
    """A Moodle course: its id, short name and full name (the launch's context)."""

    id: str
    label: str
    title: str


ATTN = Course("2", "ATTN", "Attention, Step by Step")
SANDBOX = Course("3", "SANDBOX", "Sandbox for teachers")


@dataclass
class Activity:
    """An External tool activity of a course: its course module, LTI instance and grade item
    (Moodle's default maximum grade 100)."""

    cmid: str
    instance: str
    item: str
    lab: str
    title: str
    grademax: float = 100.0
    course: Course = ATTN
    visible: bool = True


@dataclass
class Person:
    """A Moodle user enrolled in the course."""

    id: str
    username: str
    first: str
    last: str
    roles: list = field(default_factory=lambda: [LEARNER])


class PlatformStandIn:
    """The stand-in platform: start it, register the tool, then launch and read the grades."""

    def __init__(self, client_id="attn-client-7Qx", deployment_id=TYPE_ID):
        self.client_id, self.deployment_id = client_id, deployment_id
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = uuid.uuid4().hex
        self.people, self.activities, self.enrolments = {}, {}, set()
        self.share_email = False  # the tool's privacy setting "Share launcher's email"
        self.tool = {}  # login_url, redirect_uri, jwks_url
        self.tamper = set()  # expired, forged, audience, nonce, issuer, deployment
        self.token_failure = None  # an HTTP status the token endpoint answers with
        self.permitted = set(AGS_SCOPES)  # grade sync and column management
        self.highest = {"cmid": 0, "instance": 0, "item": 0}  # the ids of Moodle's tables
        self.tokens, self.grades, self.received = {}, {}, []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        """Serve on loopback until `stop`."""
        self.thread.start()
        return self

    def stop(self):
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()

    @property
    def endpoints(self):
        """The URLs a tool is configured with: issuer, auth, token and keys."""
        return {
            "issuer": self.url,
            "client_id": self.client_id,
            "deployment_id": self.deployment_id,
            "auth_url": f"{self.url}/mod/lti/auth.php",
            "token_url": f"{self.url}/mod/lti/token.php",
            "jwks_url": f"{self.url}/mod/lti/certs.php",
        }

    def register_tool(self, login_url, redirect_uri, jwks_url="", public_key=None):
        """What an administrator types in Moodle's tool registration: a keyset URL or an RSA key."""
        self.tool = {"login_url": login_url, "redirect_uri": redirect_uri, "jwks_url": jwks_url,
                     "public_key": public_key}  # fmt: skip

    def enrol(self, person, course=ATTN):
        """Enrol a person in a course (the course of test's activities, unless told)."""
        self.people[person.id] = person
        self.enrolments.add((course.id, person.id))

    def add_activity(self, activity):
        """Add an External tool activity."""
        self.activities[activity.cmid] = activity
        for name in self.highest:
            self.highest[name] = max(self.highest[name], int(getattr(activity, name)))
        return activity

    def delete_activity(self, activity):
        """Delete an activity, as the course page's Delete: its grade item and grades go too."""
        del self.activities[activity.cmid]
        self.grades = {key: row for key, row in self.grades.items() if key[0] != activity.item}

    def recreate_activity(self, activity):
        """Delete an activity and add it again as it was: new course module, instance and grade
        item (each the next id of its table), and an empty column."""
        self.delete_activity(activity)
        ids = {name: str(highest + 1) for name, highest in self.highest.items()}
        return self.add_activity(Activity(**{**vars(activity), **ids}))

    def set_grademax(self, activity, grademax, rescale=False):
        """The activity's Maximum grade changed; existing grades rescaled only if `rescale`."""
        for (item, _), row in self.grades.items():
            if item == activity.item and rescale and row["grade"] is not None:
                row["grade"] = round(row["grade"] * grademax / activity.grademax, 5)
            if item == activity.item:
                row["grademax"] = grademax
        activity.grademax = grademax

    def lineitems(self, course=ATTN):
        """The course's line-items service URL, as the launches carry it."""
        return f"{self.url}/mod/lti/services.php/{course.id}/lineitems?type_id={TYPE_ID}"

    def lineitem(self, activity):
        """The lineitem URL Moodle gives for an activity (with its query string)."""
        course = activity.course.id
        return f"{self.url}/mod/lti/services.php/{course}/lineitems/{activity.item}/lineitem" \
            f"?type_id={TYPE_ID}"  # fmt: skip

    def lineitem_json(self, activity):
        """An activity's line item as the line-items service lists it."""
        return {"id": self.lineitem(activity), "label": activity.title,
                "scoreMaximum": float(activity.grademax), "resourceId": "", "tag": "",
                "resourceLinkId": activity.instance, "ltiLinkId": activity.instance}  # fmt: skip

    def login_url(self, person):
        """Moodle's login, reduced to a cookie naming the user (the stand-in trusts it)."""
        return f"{self.url}/login/index.php?id={person.id}"

    def launch_url(self, activity):
        """The activity's page: the launch form of Moodle's mod/lti/launch.php."""
        return f"{self.url}/mod/lti/launch.php?id={activity.cmid}"

    def grade(self, activity, person):
        """The grade Moodle holds for a person in an activity: {grade, feedback, ...}, or None
        when there is none, or only an empty grade row."""
        row = self.grades.get((activity.item, person.id))
        return row if row and row["timestamp"] else None

    def is_teacher(self, person):
        """True when the person's roles let them see hidden activities."""
        return any(role in person.roles for role in (INSTRUCTOR, ADMINISTRATOR))

    # -----------------------------------------------------------------------------------------
    # Messages

    def initiation_form(self, person, activity):
        """The third-party login initiation that Moodle posts to the tool."""
        hint = json.dumps({"cmid": activity.cmid, "launchid": f"ltilaunch{secrets.randbelow(999)}"})
        return {
            "iss": self.url,
            "target_link_uri": self.tool["redirect_uri"].rsplit("/hub/", 1)[0] + "/hub/",
            "login_hint": person.id,
            "lti_message_hint": hint,
            "client_id": self.client_id,
            "lti_deployment_id": self.deployment_id,
        }

    def claims(self, person, activity, nonce):
        """The id_token's claims of a resource link launch, as Moodle 4.5 writes them."""
        now, course = int(time.time()), activity.course
        email = {"email": f"{person.username}@example.edu"} if self.share_email else {}
        return {
            **email,
            "nonce": nonce,
            "iat": now,
            "exp": now + 60,
            "iss": self.url,
            "aud": self.client_id,
            "sub": person.id,
            LTI + "deployment_id": self.deployment_id,
            LTI + "target_link_uri": self.tool["redirect_uri"].rsplit("/hub/", 1)[0] + "/hub/",
            "https://purl.imsglobal.org/spec/lti/claim/lis": {
                "person_sourcedid": "",
                "course_section_sourcedid": "",
            },
            LTI + "roles": person.roles,
            LTI + "context": {
                "id": course.id,
                "label": course.label,
                "title": course.title,
                "type": ["CourseSection"],
            },
            LTI + "message_type": "LtiResourceLinkRequest",
            LTI + "resource_link": {
                "title": activity.title,
                "description": "",
                "id": activity.instance,
            },
            LTI + "launch_presentation": {
                "locale": "en",
                "document_target": "window",
                "return_url": f"{self.url}/mod/lti/return.php?course={course.id}",
            },
            LTI + "ext": {"user_username": person.username, "lms": "moodle-2"},
            LTI + "tool_platform": {
                "product_family_code": "moodle",
                "version": "2024100706",
                "guid": "127.0.0.1",
                "name": "Moodle stand-in",
                "description": "Moodle 4.5 stand-in (tests/deploy/lti_platform.py)",
            },
            LTI + "version": "1.3.0",
            "given_name": person.first,
            "family_name": person.last,
            "name": f"{person.first} {person.last}",
            LTI + "custom": {"uname": person.username, "lab": activity.lab},
            AGS: {
                "scope": AGS_SCOPES,
                "lineitems": self.lineitems(course),
                **({"lineitem": self.lineitem(activity)} if activity.grademax else {}),
            },
            NRPS: {
                "context_memberships_url": f"{self.url}/mod/lti/services.php/CourseSection/"
                f"{course.id}/bindings/{TYPE_ID}/memberships",
                "service_versions": ["1.0", "2.0"],
            },
        }

    def id_token(self, person, activity, nonce):
        """The signed id_token, altered as `tamper` asks."""
        claims = self.claims(person, activity, nonce)
        if "expired" in self.tamper:
            claims.update(iat=claims["iat"] - 3600, exp=claims["iat"] - 3540)
        if "audience" in self.tamper:
            claims["aud"] = "someone-else"
        if "nonce" in self.tamper:
            claims["nonce"] = "0" * 64
        if "issuer" in self.tamper:
            claims["iss"] = "https://moodle.elsewhere.example"
        if "deployment" in self.tamper:
            claims[LTI + "deployment_id"] = "99"
        key = self.key
        if "forged" in self.tamper:
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid})

    def jwks(self):
        """The platform's keys (mod/lti/certs.php)."""
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def check_assertion(self, form):
        """The tool's client credentials: its JWT signed with a key of its JWKS URL."""
        if form.get("grant_type") != "client_credentials" or "client_assertion" not in form:
            raise ValueError("invalid_request")
        assertion = form["client_assertion"]
        key = self.tool["public_key"]
        if key is None:
            key = jwt.PyJWKClient(self.tool["jwks_url"]).get_signing_key_from_jwt(assertion).key
        claims = jwt.decode(assertion, key, algorithms=["RS256"],
                            audience=f"{self.url}/mod/lti/token.php")  # fmt: skip
        if claims["iss"] != self.client_id or claims["sub"] != self.client_id:
            raise ValueError("invalid_client")

    def activity_of(self, item):
        """The activity whose grade item is `item`, or None (also when it takes no grades)."""
        return next((a for a in self.activities.values() if a.item == item and a.grademax), None)

    def take_score(self, item, body):
        """Store a score as Moodle's gradebookservices does; (status, reason)."""
        activity = self.activity_of(item)
        if activity is None:
            return 404, f"Not Found: Grade item {item} doesn't exist"
        score = json.loads(body)
        required = {"userId", "timestamp", "gradingProgress", "activityProgress"}
        enrolled = (activity.course.id, score.get("userId")) in self.enrolments
        if not required <= set(score) or not enrolled:
            return 400, f"Incorrect score received {' '.join(body.split())}"[:200]
        held = self.grades.get((item, score["userId"]))
        if held and held["timestamp"] and held["timestamp"] >= score["timestamp"]:
            return 409, f"Refusing score with an earlier timestamp for item {item} and user " \
                f"{score['userId']}"  # fmt: skip
        given = score.get("scoreGiven")
        if score["gradingProgress"] != "FullyGraded":
            given = None
        maximum = float(score.get("scoreMaximum", 1))
        grade = None if given is None else round(given * activity.grademax / maximum, 5)
        self.grades[(item, score["userId"])] = {
            "grade": grade,
            "grademax": activity.grademax,
            "feedback": score.get("comment", ""),
            "timestamp": score["timestamp"],
        }
        for other in self.activities.values():
            if other.course == activity.course:
                empty = {"grade": None, "grademax": other.grademax, "feedback": ""}
                self.grades.setdefault((other.item, score["userId"]), {**empty, "timestamp": None})
        return 200, "OK"

    def lineitems_json(self, course_id, filters):
        """The course's line items for the tool, filtered as Moodle's get_lineitems does."""
        ours = [a for a in self.activities.values() if a.course.id == course_id and a.grademax]
        items = [self.lineitem_json(activity) for activity in ours]
        keys = {"resource_link_id": "resourceLinkId", "resource_id": "resourceId", "tag": "tag"}
        for name, key in keys.items():
            if name in filters:
                items = [item for item in items if item[key] == filters[name]]
        return sorted(items, key=lambda item: int(item["id"].split("/lineitems/")[1].split("/")[0]))

    def results_json(self, activity):
        """The results of an activity's line item: its rows that hold a time (Moodle's)."""
        rows = [(user, row) for (item, user), row in self.grades.items()
                if item == activity.item and row["timestamp"]]  # fmt: skip
        url = self.lineitem(activity)
        base, query = url.split("?")
        return [{"id": f"{base}/results?{query}&user_id={user}", "userId": user,
                 **({"resultScore": row["grade"], "resultMaximum": row["grademax"],
                     "comment": row["feedback"], "scoreOf": url, "timestamp": row["timestamp"]}
                    if row["grade"] is not None else {})}
                for user, row in sorted(rows)]  # fmt: skip

    def handler_class(self):
        """The HTTP handler, bound to this stand-in."""
        platform = self

        class Handler(StandInHandler):
            stand_in = platform

        return Handler


def auto_post_form(action, fields, title):
    """A page whose form posts itself, as Moodle's launch and auth pages do."""
    inputs = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
        for k, v in fields.items()
    )
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
        f'<form id="ltiLaunchForm" method="post" action="{html.escape(action)}">{inputs}</form>'
        "<script>document.getElementById('ltiLaunchForm').submit();</script></body></html>"
    )


class StandInHandler(BaseHTTPRequestHandler):
    """Moodle's endpoints, as the stand-in plays them."""

    stand_in: PlatformStandIn

    def log_message(self, *args):
        """Quiet: the test prints what matters."""

    def answer(
        self, status, body, content_type="text/html; charset=utf-8", headers=(), reason=None
    ):
        """Send a response, with `reason` in its status line if given."""
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status, reason)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def json_answer(self, status, value, content_type="application/json"):
        """Send JSON."""
        self.answer(status, json.dumps(value), content_type)

    def service_error(self, status, reason):
        """An error of Moodle's LTI services: the reason in the status line and in a JSON body."""
        content_type = (self.headers.get("Content-Type") or "").split(";")[0]
        request = {"method": self.command, "url": self.path, "contentType": content_type}
        body = json.dumps({"status": status, "reason": reason, "request": request}, indent=4)
        self.answer(status, body, "application/json; charset=utf-8", reason=reason)

    def arguments(self):
        """The query's and (for POST) the form's arguments, one value each."""
        query = parse_qs(urlsplit(self.path).query)
        if self.command == "POST":
            length = int(self.headers.get("Content-Length") or 0)
            self.body = self.rfile.read(length).decode()
            if "form-urlencoded" in (self.headers.get("Content-Type") or ""):
                query.update(parse_qs(self.body))
        return {k: v[-1] for k, v in query.items()}

    def session_user(self):
        """The person the MoodleSession cookie names, or None."""
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == "MoodleSession":
                return self.stand_in.people.get(value)
        return None

    def do_GET(self):  # noqa: N802 - http.server's name
        """Route a GET."""
        self.route()

    def do_POST(self):  # noqa: N802 - http.server's name
        """Route a POST."""
        self.route()

    def route(self):
        """Dispatch on the path."""
        path = urlsplit(self.path).path
        args = self.arguments()
        if path == "/login/index.php":
            cookie = ("Set-Cookie", f"MoodleSession={args.get('id', '')}; Path=/; HttpOnly")
            return self.answer(200, "<p>Logged in to the Moodle stand-in</p>", headers=[cookie])
        if path == "/mod/lti/launch.php":
            return self.launch(args)
        if path == "/mod/lti/auth.php":
            return self.authorize(args)
        if path == "/mod/lti/certs.php":
            return self.json_answer(200, self.stand_in.jwks())
        if path == "/mod/lti/token.php":
            return self.token(args)
        if path.startswith("/mod/lti/services.php/") and path.endswith("/lineitem/scores"):
            return self.scores(path)
        if path.startswith("/mod/lti/services.php/") and path.endswith("/lineitem/results"):
            return self.results(path)
        if path.startswith("/mod/lti/services.php/") and path.endswith("/lineitems"):
            return self.lineitems(path, args)
        return self.answer(404, "Not found")

    def launch(self, args):
        """The activity's launch: a form posting the login initiation to the tool."""
        person, activity = self.session_user(), self.stand_in.activities.get(args.get("id"))
        if person is None or activity is None:
            return self.answer(403, "Not logged in, or no such activity")
        if not activity.visible and not self.stand_in.is_teacher(person):
            return self.answer(403, "<p>Sorry, this activity is currently hidden</p>")
        form = self.stand_in.initiation_form(person, activity)
        self.answer(200, auto_post_form(self.stand_in.tool["login_url"], form, activity.title))

    def authorize(self, args):
        """mod/lti/auth.php: check the request, answer with the id_token posted to the tool."""
        stand_in, person = self.stand_in, self.session_user()
        problems = [
            ("scope", args.get("scope") != "openid"),
            ("response_type", args.get("response_type") != "id_token"),
            ("client_id", args.get("client_id") != stand_in.client_id),
            ("redirect_uri", args.get("redirect_uri") != stand_in.tool["redirect_uri"]),
            ("login_hint", person is None or args.get("login_hint") != person.id),
            ("nonce", not args.get("nonce")),
        ]
        wrong = [name for name, bad in problems if bad]
        if wrong:
            return self.answer(400, f"invalid_request: {', '.join(wrong)}")
        cmid = json.loads(args.get("lti_message_hint") or "{}").get("cmid")
        activity = stand_in.activities.get(cmid)
        if activity is None:
            return self.answer(400, "invalid_request: the activity no longer exists")
        token = stand_in.id_token(person, activity, args["nonce"])
        fields = {"id_token": token, "state": args.get("state", "")}
        self.answer(200, auto_post_form(args["redirect_uri"], fields, activity.title))

    def token(self, args):
        """mod/lti/token.php: an access token for a valid client assertion."""
        stand_in, as_moodle = self.stand_in, "text/html; charset=utf-8"  # JSON, as text/html
        if stand_in.token_failure:
            failure = {"error": "stand-in failure"}
            return self.json_answer(stand_in.token_failure, failure, as_moodle)
        try:
            stand_in.check_assertion(args)
        except Exception:  # noqa: BLE001 - Moodle answers 400 to any bad assertion
            return self.json_answer(400, {"error": "invalid_client"}, as_moodle)
        scopes = [s for s in args.get("scope", "").split(" ") if s in stand_in.permitted]
        if not scopes:
            return self.json_answer(400, {"error": "invalid_scope"}, as_moodle)
        token = secrets.token_hex(16)
        stand_in.tokens[token] = set(scopes)
        granted = {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                   "scope": " ".join(scopes)}  # fmt: skip
        self.json_answer(200, granted, as_moodle)

    def token_scopes(self):
        """The scopes of the request's bearer token (none for no token or an unknown one)."""
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        return self.stand_in.tokens.get(token, set())

    def lineitems(self, path, args):
        """<course>/lineitems: the course's line items for the tool (GET)."""
        if not self.token_scopes() & {AGS_SCOPES[0], AGS_SCOPES[1]}:
            return self.service_error(401, "Unauthorized")
        accept = self.headers.get("Accept") or ""
        if accept not in ("", CONTAINER_TYPE):
            return self.service_error(400, "No context or unsupported content type")
        course = path.split("/services.php/")[1].split("/")[0]
        known = {a.course.id for a in self.stand_in.activities.values()}
        known |= {course_id for course_id, _ in self.stand_in.enrolments}
        if course not in known:
            return self.service_error(404, f"Not Found: Course {course} doesn't exist")
        items = self.stand_in.lineitems_json(course, args)
        self.answer(200, json.dumps(items), f"{CONTAINER_TYPE}; charset=utf-8")

    def results(self, path):
        """<lineitem>/results: the line item's results (GET)."""
        if AGS_SCOPES[2] not in self.token_scopes():
            return self.service_error(403, "This resource does not support GET requests.")
        item = path.split("/lineitems/")[1].split("/")[0]
        activity = self.stand_in.activity_of(item)
        if activity is None:
            return self.service_error(404, f"Not Found: Grade item {item} doesn't exist")
        results = self.stand_in.results_json(activity)
        self.answer(200, json.dumps(results), "application/vnd.ims.lis.v2.resultcontainer+json")

    def scores(self, path):
        """<lineitem>/scores: store a score posted with a valid bearer token."""
        stand_in = self.stand_in
        if AGS_SCOPES[3] not in self.token_scopes():
            return self.service_error(401, "This resource does not support POST requests.")
        item = path.split("/lineitems/")[1].split("/")[0]
        stand_in.received.append({"path": self.path, "score": json.loads(self.body)})
        status, reason = stand_in.take_score(item, self.body)
        if status != 200:
            return self.service_error(status, reason)
        self.answer(200, "", "application/json")


def oidc_query(url):
    """The arguments of an OIDC authorization request's URL, one value each."""
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def launch_query(stand_in, person, activity):
    """The login initiation's arguments, urlencoded (for tests that post it themselves)."""
    return urlencode(stand_in.initiation_form(person, activity))
