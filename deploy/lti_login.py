"""Students launch the course from their LMS (LTI 1.3): the hub's side of it.

`ltiauthenticator` checks the launch (the OIDC flow, the id_token's signature against the
platform's keys, its issuer, audience, age and nonce). Here, on top of it:

* the launch's deployment must be one of COURSE_LTI_DEPLOYMENT_ID;
* its context (the LMS course) must be the one the course is linked to, `<course>/lti/
  lms_course.json`: COURSE_LTI_CONTEXT_ID when the hub's configuration names it, else the course
  of the first instructor's launch, shown on the page that launch lands on. Until then only
  instructors get in;
* its roles map to the course's: Instructor, Administrator, TeachingAssistant or
  ContentDeveloper to `instructor`, Learner to `student`. A student must be a member of the
  class's Unix group, and may not use the instructor's account; an instructor is the course's
  instructor or a Unix user outside the students' group (a teaching assistant);
* the lab the launch names (custom parameter `lab=NN_topic`, or `?lab=NN_topic` in the
  activity's URL) is where the student lands, fetched for them by deploy/lti_lab.py; an
  instructor or teaching assistant lands on the lab's page of the formgrader (the course's
  grades page when the launch names no lab), in the instructor's server;
* each launch is recorded in the course's private folder, `<course>/lti/launches.json`: the
  platform and, per LMS course, user, lab and resource link, the `sub`, the AGS lineitem and
  the course's line-items service the launch carried. With these course/lms/lti.py finds each
  lab's column and each student; the id_token itself is also the user's auth_state (read with
  `admin:auth_state`), but only the latest launch's;
* the record is course/lms/launches.py's: its files, their schema, reading and writing;
* the course's key pair (`<course>/lti/tool_key.pem`, made on first use, owned by the
  instructor) signs the grade sender's token requests; the hub serves its public half as a
  JWKS at /hub/lti/jwks, the tool's "Public keyset URL".

A refused launch gets the hub's error page, saying why.
"""

import grp
import json
import os
import pwd
from dataclasses import replace
from datetime import UTC, datetime
from urllib.parse import parse_qs, quote, urlsplit

import class_settings
from jupyterhub import orm
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.error import ValidationError
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler
from tornado import web
from traitlets import Bool, Set, Unicode

from course.coursedir import paths
from course.lms import launches, lti

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
INSTRUCTOR_ROLES = ("#Instructor", "#Administrator", "#TeachingAssistant", "#ContentDeveloper")
SETTINGS = {
    "issuer": "COURSE_LTI_ISSUER",
    "client_id": "COURSE_LTI_CLIENT_ID",
    "deployment_id": "COURSE_LTI_DEPLOYMENT_ID",
    "auth_url": "COURSE_LTI_AUTH_URL",
    "token_url": "COURSE_LTI_TOKEN_URL",
    "jwks_url": "COURSE_LTI_JWKS_URL",
}
REFUSED = "This launch from your LMS was refused: {reason}. Open the lab again from the LMS; " \
    "if it is refused again, tell your instructor what this page says."  # fmt: skip


def platform_settings(environment=os.environ):
    """The platform's settings from COURSE_LTI_*; SystemExit naming those missing."""
    missing = [name for name in SETTINGS.values() if not environment.get(name)]
    if missing:
        raise SystemExit(f"LTI 1.3 needs the platform's settings: set {', '.join(missing)}")
    if not environment.get("JUPYTERHUB_CRYPT_KEY"):
        raise SystemExit("LTI 1.3 keeps each launch as auth_state: set JUPYTERHUB_CRYPT_KEY "
                         "(openssl rand -hex 32)")  # fmt: skip
    return {key: environment[name] for key, name in SETTINGS.items()}


def refused(status, reason):
    """An HTTPError whose page tells the user why their launch was refused."""
    message = REFUSED.format(reason=reason.rstrip("."))
    error = web.HTTPError(status, message, reason="Launch refused")
    error.jupyterhub_message = message
    return error


# ---------------------------------------------------------------------------------------------
# The course's private folder for LTI, and its key


def lti_folder(owner=class_settings.INSTRUCTOR):
    """<course>/lti/: the instructor's, 0700, ignored by git; made if missing."""
    return launches.lti_folder(class_settings.course_folder(owner), pwd.getpwnam(owner))


def instructor_account():
    """The instructor's `pwd` entry: who owns what the hub writes in <course>/lti/."""
    return pwd.getpwnam(class_settings.INSTRUCTOR)


def tool_key(owner=class_settings.INSTRUCTOR):
    """The course's private key (<course>/lti/tool_key.pem), made on first use: the one key
    that `course.lms.lti` signs the grades with."""
    return lti.tool_key(class_settings.course_folder(owner), pwd.getpwnam(owner))


def public_jwks(key):
    """The public half of `key` as a JWKS, as `course.lms.lti` makes it."""
    return {"keys": [lti.public_jwk(key)]}


class JwksHandler(web.RequestHandler):
    """/hub/lti/jwks: the course's public key, which the platform checks token requests with."""

    def get(self):
        """The JWKS, read from the course's key."""
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps(public_jwks(tool_key())))


# ---------------------------------------------------------------------------------------------
# The launch


def course_role(roles):
    """The course's role for LTI `roles`: "instructor", "student", or None if it knows none."""
    if any(role.endswith(INSTRUCTOR_ROLES) for role in roles):
        return "instructor"
    if any(role.endswith("#Learner") for role in roles):
        return "student"
    return None


def is_student(name, group=class_settings.STUDENTS_GROUP):
    """True when the Unix user `name` is a member of the students' group."""
    try:
        account, members = pwd.getpwnam(name), grp.getgrnam(group)
    except KeyError:
        return False
    return name in members.gr_mem or account.pw_gid == members.gr_gid


def account_problem(name, role, instructor=class_settings.INSTRUCTOR):
    """Why the Unix account `name` may not take `role`, or "" when it may."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        return f"the course's machine has no account {name!r} (the LMS's username)"
    if role == "student" and name == instructor:
        return "a launch as a student cannot open the instructor's account"
    if role == "student" and not is_student(name):
        return f"{name} is not a student of this class on the course's machine"
    if role == "instructor" and name != instructor and is_student(name):
        return f"{name} is a student of this class, but the LMS launched them as an instructor"
    return ""


def launched_lab(claims):
    """The lab a launch names, "" when none; refused if malformed.

    The activity's custom parameter `lab=NN_topic` (Moodle), else `?lab=NN_topic` at the end of
    the activity's tool URL, its target_link_uri (Canvas's external tool assignments).
    """
    target = parse_qs(urlsplit(claims.get(CLAIM + "target_link_uri", "")).query)
    lab = claims.get(CLAIM + "custom", {}).get("lab") or target.get("lab", [""])[0]
    lab = str(lab).strip()
    if lab and not paths.LAB_NAME.match(lab):
        raise refused(400, f"the activity names the lab {lab!r}, which is not NN_topic")
    return lab


def now():
    """The time of day in UTC, to the second, as the course's records write it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def record_launch(name, claims, lab, platform):
    """Record a launch in <course>/lti/launches.json, under its LMS course, user, lab and link.

    It replaces only the same user's earlier launch of the same resource link: a launch from
    another LMS course never replaces this course's lineitem.
    """
    endpoint = claims.get(AGS_CLAIM, {})
    launch = launches.Launch(
        context=context_of(claims).id,
        user=name,
        lab=lab,
        link=claims.get(CLAIM + "resource_link", {}).get("id", ""),
        sub=claims["sub"],
        lineitem=endpoint.get("lineitem", ""),
        lineitems=endpoint.get("lineitems", ""),
        scope=tuple(endpoint.get("scope", [])),
        time=now(),
    )
    launches.record_launch(lti_folder(), launch, platform, instructor_account())


# ---------------------------------------------------------------------------------------------
# The LMS course the course is linked to


def context_of(claims):
    """The LMS course a launch comes from (a LinkedCourse): the `id`, `label` and `title` of its
    context claim."""
    context = claims.get(CLAIM + "context") or {}
    return launches.LinkedCourse(*(str(context.get(key, "")) for key in ("id", "label", "title")))


def context_problem(linked, course, deployment, role):
    """Why a launch from the LMS course `course` may not enter the course `linked` to, or ""."""
    if not course.id:
        return "the launch names no LMS course (its context claim is missing)"
    if linked is None:
        if role == "instructor":
            return ""
        return ("the course is not linked to an LMS course yet: the instructor opens one of its "
                "activities in the LMS first")  # fmt: skip
    if course.id != linked.id:
        return (f"this course's hub serves the LMS course {linked.name}, and this activity is "
                f"in the LMS course {course.name}: open the lab from {linked.name}")  # fmt: skip
    if linked.deployment_id and deployment != linked.deployment_id:
        return (f"the LMS course {course.name} launched through deployment {deployment!r}, "
                f"and the course is linked to deployment {linked.deployment_id!r}")  # fmt: skip
    return ""


def link_course(linked, course, deployment, name):
    """Link the course to the LMS course of a launch, or complete a link made by configuration.

    The link's file names the LMS course (id, label, title), the deployment, who linked it and
    when; what the launch adds to a link already complete changes nothing.
    """
    if linked and linked.deployment_id:
        return linked
    by = linked.linked_by if linked else name
    linked = replace(course, deployment_id=deployment, linked_by=by, time=now())
    launches.write_link(lti_folder(), linked, instructor_account())
    return linked


def link_from_configuration(context_id):
    """COURSE_LTI_CONTEXT_ID: link the course to that LMS course (relinking it if need be)."""
    linked = launches.read_link(lti_folder())
    if linked and linked.id == context_id:
        return
    link = launches.LinkedCourse(context_id, linked_by="COURSE_LTI_CONTEXT_ID", time=now())
    launches.write_link(lti_folder(), link, instructor_account())


class CourseLTIAuthenticator(LTI13Authenticator):
    """ltiauthenticator's LTI 1.3 login, with the course's deployments, roles and record."""

    deployment_ids = Set(Unicode(), config=True, help="The platform's deployments of the tool.")
    token_url = Unicode(config=True, help="The platform's token endpoint (for grades back).")
    graders_from_lms = Bool(
        False, config=True, help="A teaching assistant's launch adds them to the graders' group."
    )

    def get_handlers(self, app):
        """ltiauthenticator's handlers, with the course's launch (callback) handler."""
        return [
            (self.login_url(""), self.login_handler),
            (self.callback_url(""), LaunchHandler),
            (self.config_json_url(""), self.config_handler),
        ]

    async def authenticate(self, handler, data=None):
        """The user a verified launch names, if the course accepts the launch."""
        model = await super().authenticate(handler, data)
        claims = model["auth_state"]
        deployment = claims.get(CLAIM + "deployment_id")
        if deployment not in self.deployment_ids:
            raise refused(403, f"the LMS's deployment {deployment!r} is not this course's")
        role = course_role(claims.get(CLAIM + "roles", []))
        if role is None:
            raise refused(403, "the LMS gave no role this course knows (Learner, Instructor)")
        name = self.normalize_username(model["name"])
        problem = account_problem(name, role)
        if problem:
            raise refused(403, problem)
        lab = launched_lab(claims)
        linked, course = launches.read_link(lti_folder()), context_of(claims)
        problem = context_problem(linked, course, deployment, role)
        if problem:
            raise refused(403, problem)
        newly_linked = linked is None
        link_course(linked, course, deployment, name)
        platform = launches.LtiPlatform(self.issuer, audience(claims), deployment, self.token_url)
        record_launch(name, claims, lab, platform)
        model["name"] = name
        model["auth_state"] = {**claims, "course_role": role, "course_lab": lab,
                               "course_newly_linked": newly_linked}  # fmt: skip
        return model


def audience(claims):
    """The client id a launch was for: its `aud`, or `azp` when `aud` names several."""
    return claims["aud"] if isinstance(claims["aud"], str) else claims.get("azp", "")


class LaunchHandler(LTI13CallbackHandler):
    """The launch's last step: every refusal on a page that says why, then the user's lab."""

    async def post(self):
        """Check the launch, log the user in, and send them to their lab."""
        try:
            claims = self.decode_and_validate_launch_request()
        except ValidationError as error:
            raise refused(401, f"its id_token is not valid ({error})") from None
        except web.HTTPError as error:
            raise refused(error.status_code, error.log_message or "bad request") from None
        user = await self.login_user(claims)
        if user is None:
            raise refused(403, "the hub did not accept this user")
        state = await user.get_auth_state()
        role, lab = state["course_role"], state["course_lab"]
        if role == "instructor" and user.name != class_settings.INSTRUCTOR:
            self.admit_grader(user)
        lab = "" if state.get("course_newly_linked") else lab
        self.redirect(landing_url(self.base_url, self.hub.base_url, user.name, lab, role))

    def admit_grader(self, user):
        """A teaching assistant opens the formgrader as a member of formgrade-<course>."""
        group = orm.Group.find(self.db, class_settings.GRADERS_GROUP)
        if group is not None and any(member.name == user.name for member in group.users):
            return
        if group is None or not self.authenticator.graders_from_lms:
            raise refused(403, f"{user.name} is a teaching assistant in the LMS, but not in the "
                          f"hub's group {class_settings.GRADERS_GROUP}, which opens the "
                          "formgrader: the instructor adds them there (the hub's admin page, "
                          "Groups)")  # fmt: skip
        group.users.append(user.orm_user)
        self.db.commit()


def landing_url(base, hub_base, name, lab, role="student", instructor=class_settings.INSTRUCTOR):
    """Where a launch lands: a student's own lab; the instructor's formgrader or grades page.

    The user's own server is started if need be; a teaching assistant goes to the instructor's.
    """
    if role == "student":
        if not lab:
            return f"{hub_base}spawn/{quote(name)}"
        target = f"{base}user/{quote(name)}/course-lab/{lab}"
    else:
        page = f"formgrader/manage_submissions/{lab}" if lab else "course-lti/grades"
        target = f"{base}user/{quote(instructor)}/{page}"
        if name != instructor:
            return target
    return f"{hub_base}spawn/{quote(name)}?next={quote(target, safe='')}"


def configure(c, environment=os.environ):
    """Set up the hub `c` for LTI 1.3 launches from the platform COURSE_LTI_* names."""
    platform = platform_settings(environment)
    if not class_settings.course_folder().is_dir():
        raise SystemExit(f"LTI 1.3 keeps its key and launches in {class_settings.course_folder()}"
                         ": make the instructor's copy of the course first")  # fmt: skip
    c.JupyterHub.authenticator_class = CourseLTIAuthenticator
    c.Authenticator.allow_all = True  # ltiauthenticator has no allow logic: authenticate() checks
    c.Authenticator.enable_auth_state = True
    c.CourseLTIAuthenticator.issuer = platform["issuer"]
    c.CourseLTIAuthenticator.client_id = {platform["client_id"]}
    c.CourseLTIAuthenticator.deployment_ids = set(platform["deployment_id"].split(","))
    c.CourseLTIAuthenticator.authorize_url = platform["auth_url"]
    c.CourseLTIAuthenticator.jwks_endpoint = platform["jwks_url"]
    c.CourseLTIAuthenticator.token_url = platform["token_url"]
    graders = environment.get("COURSE_LTI_GRADERS_FROM_LMS", "") == "1"
    c.CourseLTIAuthenticator.graders_from_lms = graders
    c.CourseLTIAuthenticator.username_key = "custom_uname"  # Moodle: uname=$User.username
    c.CourseLTIAuthenticator.tool_name = "Attention, Step by Step"
    c.CourseLTIAuthenticator.tool_description = "The course's labs in JupyterLab"
    c.JupyterHub.extra_handlers = [(r"/lti/jwks", JwksHandler)]
    tool_key()  # made now, so that the platform finds the keys before the first grade
    if environment.get("COURSE_LTI_CONTEXT_ID"):
        link_from_configuration(environment["COURSE_LTI_CONTEXT_ID"].strip())
