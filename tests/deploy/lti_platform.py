"""A stand-in for Moodle 4.5 as an LTI 1.3 platform, on loopback, for the tests of LTI.

No LMS is reachable from CI. This stand-in plays the messages that Moodle 4.5 sends and answers,
as observed on a real Moodle 4.5.6 (mod/lti): the launch's form to the tool's login URL, the OIDC
authorization (`mod/lti/auth.php`, answering with a form that posts the id_token), its keys
(`mod/lti/certs.php`), the token endpoint (`mod/lti/token.php`: client credentials with a JWT
assertion, checked against the tool's JWKS URL) and scores posted to `<lineitem>/scores`, where
Moodle's lineitem URLs carry `?type_id=N`. As Moodle does, it keeps a score only when
`gradingProgress` is FullyGraded, rescales it to the activity's maximum, keeps the comment as
feedback, and refuses a score no newer than the one it holds (409).

It is not Moodle: no database, one course, activities and users given in Python.
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
AGS_SCOPES = [
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
]
COURSE_ID, TYPE_ID = "2", "1"  # Moodle's course id, and the id of the tool's registration


@dataclass
class Activity:
    """An External tool activity of the course, with its grade item (Moodle's default max 100)."""

    cmid: str
    item: str
    lab: str
    title: str
    grademax: float = 100.0


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
        self.people, self.activities = {}, {}
        self.tool = {}  # login_url, redirect_uri, jwks_url
        self.tamper = set()  # expired, forged, audience, nonce, issuer, deployment
        self.token_failure = None  # an HTTP status the token endpoint answers with
        self.tokens, self.grades, self.received = set(), {}, []
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

    def enrol(self, person):
        """Enrol a person in the course."""
        self.people[person.id] = person

    def add_activity(self, activity):
        """Add an External tool activity."""
        self.activities[activity.cmid] = activity

    def lineitem(self, activity):
        """The lineitem URL Moodle gives for an activity (with its query string)."""
        base = f"{self.url}/mod/lti/services.php/{COURSE_ID}/lineitems/{activity.item}/lineitem"
        return f"{base}?type_id={TYPE_ID}"

    def login_url(self, person):
        """Moodle's login, reduced to a cookie naming the user (the stand-in trusts it)."""
        return f"{self.url}/login/index.php?id={person.id}"

    def launch_url(self, activity):
        """The activity's page: the launch form of Moodle's mod/lti/launch.php."""
        return f"{self.url}/mod/lti/launch.php?id={activity.cmid}"

    def grade(self, activity, person):
        """The grade Moodle holds for a person in an activity: {grade, feedback, ...} or None."""
        return self.grades.get((activity.item, person.id))

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
        now = int(time.time())
        return {
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
                "id": COURSE_ID,
                "label": "ATTN",
                "title": "Attention, Step by Step",
                "type": ["CourseSection"],
            },
            LTI + "message_type": "LtiResourceLinkRequest",
            LTI + "resource_link": {
                "title": activity.title,
                "description": "",
                "id": activity.cmid,
            },
            LTI + "launch_presentation": {
                "locale": "en",
                "document_target": "window",
                "return_url": f"{self.url}/mod/lti/return.php?course={COURSE_ID}",
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
            "email": f"{person.username}@example.edu",
            LTI + "custom": {"uname": person.username, "lab": activity.lab},
            AGS: {
                "scope": AGS_SCOPES,
                "lineitems": f"{self.url}/mod/lti/services.php/{COURSE_ID}/lineitems"
                f"?type_id={TYPE_ID}",
                "lineitem": self.lineitem(activity),
            },
            NRPS: {
                "context_memberships_url": f"{self.url}/mod/lti/services.php/CourseSection/"
                f"{COURSE_ID}/bindings/{TYPE_ID}/memberships",
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

    def take_score(self, item, body):
        """Store a score as Moodle's gradebookservices does; (status, reason)."""
        activity = next((a for a in self.activities.values() if a.item == item), None)
        if activity is None:
            return 404, f"Not Found: Grade item {item} doesn't exist."
        score = json.loads(body)
        required = {"userId", "timestamp", "gradingProgress", "activityProgress"}
        if not required <= set(score) or score["userId"] not in self.people:
            return 400, "Incorrect score received"
        held = self.grades.get((item, score["userId"]))
        if held and held["timestamp"] >= score["timestamp"]:
            return 409, f"Refusing score with an earlier timestamp for item {item}"
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
        return 200, "OK"

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

    def answer(self, status, body, content_type="text/html; charset=utf-8", headers=()):
        """Send a response."""
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def json_answer(self, status, value):
        """Send JSON."""
        self.answer(status, json.dumps(value), "application/json")

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
        return self.answer(404, "Not found")

    def launch(self, args):
        """The activity's launch: a form posting the login initiation to the tool."""
        person, activity = self.session_user(), self.stand_in.activities.get(args.get("id"))
        if person is None or activity is None:
            return self.answer(403, "Not logged in, or no such activity")
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
        activity = stand_in.activities[cmid]
        token = stand_in.id_token(person, activity, args["nonce"])
        fields = {"id_token": token, "state": args.get("state", "")}
        self.answer(200, auto_post_form(args["redirect_uri"], fields, activity.title))

    def token(self, args):
        """mod/lti/token.php: an access token for a valid client assertion."""
        stand_in = self.stand_in
        if stand_in.token_failure:
            return self.json_answer(stand_in.token_failure, {"error": "stand-in failure"})
        try:
            stand_in.check_assertion(args)
        except Exception as error:  # noqa: BLE001 - Moodle answers 400 to any bad assertion
            return self.json_answer(400, {"error": "invalid_client", "detail": str(error)})
        token = secrets.token_hex(16)
        stand_in.tokens.add(token)
        scope = args.get("scope", "")
        self.json_answer(200, {"access_token": token, "token_type": "Bearer",
                               "expires_in": 3600, "scope": scope})  # fmt: skip

    def scores(self, path):
        """<lineitem>/scores: store a score posted with a valid bearer token."""
        stand_in = self.stand_in
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if token not in stand_in.tokens:
            return self.answer(401, "Unauthorized", "text/plain")
        query = parse_qs(urlsplit(self.path).query)
        if query.get("type_id") != [TYPE_ID]:
            return self.answer(400, "Bad Request: type_id", "text/plain")
        item = path.split("/lineitems/")[1].split("/")[0]
        stand_in.received.append({"path": self.path, "score": json.loads(self.body)})
        status, reason = stand_in.take_score(item, self.body)
        self.answer(status, "" if status == 200 else reason, "text/plain")


def oidc_query(url):
    """The arguments of an OIDC authorization request's URL, one value each."""
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def launch_query(stand_in, person, activity):
    """The login initiation's arguments, urlencoded (for tests that post it themselves)."""
    return urlencode(stand_in.initiation_form(person, activity))
