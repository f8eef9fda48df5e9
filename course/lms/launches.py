"""The record of LTI launches: the one link from an LMS launch to the grade sent back.

Three processes share it, through the course folder's private `lti/` (the instructor's, 0700,
ignored by git): the hub (deploy/lti_login.py, as root) writes it at each launch; the grade
sender (`course.lms.lti`, `make lti-grades`) and the instructor's grades page
(deploy/lti_grades_page.py) read it. Two files, each written atomically, 0600, for the
instructor:

* `launches.json`: the platform the launches came from and, per LMS course (context id), user,
  lab and resource link (the activity), the latest launch's `sub`, AGS lineitem, the course's
  line-items service, the scopes granted and the time:
  `{"platform": {issuer, client_id, deployment_id, token_url},
  "launches": {context: {user: {lab: {link: {sub, lineitem, lineitems, scope, time}}}}}}`;
* `lms_course.json`: the LMS course the course is linked to: `{id, label, title,
  deployment_id, linked_by, time}`.
"""

import contextlib
import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

LTI_FOLDER = "lti"
LAUNCHES_FILE = "launches.json"
LMS_COURSE_FILE = "lms_course.json"
PLATFORM, LAUNCHES = "platform", "launches"  # the two parts of launches.json


@dataclass(frozen=True)
class LtiPlatform:
    """The LMS site the launches came from, as the grade sender needs it."""

    issuer: str
    client_id: str  # the tool's id on the platform: the sender's token requests name it
    deployment_id: str
    token_url: str  # where the sender asks for a bearer token


@dataclass(frozen=True)
class Launch:
    """A user's latest launch of a lab from one activity (resource link) of an LMS course."""

    context: str  # the LMS course's id
    user: str  # the course's name for the user
    lab: str  # NN_topic, "" when the activity names none
    link: str  # the resource link's id: the activity
    sub: str  # the LMS's id for the user
    lineitem: str = ""  # the AGS lineitem the launch carried, "" when none
    lineitems: str = ""  # the LMS course's line-items service, "" when none
    scope: tuple = ()  # the AGS scopes the platform grants the tool
    time: str = ""  # ISO 8601, UTC, to the second: later launches sort after

    def entry(self):
        """What launches.json keeps of the launch under its course, user, lab and link."""
        kept = {key: value for key, value in asdict(self).items() if key not in PLACE}
        return {**kept, "scope": list(self.scope)}


PLACE = ("context", "user", "lab", "link")  # where a launch sits in launches.json
ENTRY = tuple(f.name for f in fields(Launch) if f.name not in PLACE)


@dataclass(frozen=True)
class LinkedCourse:
    """The LMS course the course is linked to (or the one a launch comes from)."""

    id: str
    label: str = ""
    title: str = ""
    deployment_id: str = ""  # "" until the first instructor's launch completes the link
    linked_by: str = ""  # who linked it: a user, or COURSE_LTI_CONTEXT_ID
    time: str = ""

    @property
    def name(self):
        """The course as people know it: "Attention, Step by Step" (ATTN, id 2)."""
        known = [part for part in (self.label, f"id {self.id}") if part]
        return f'"{self.title}" ({", ".join(known)})' if self.title else ", ".join(known)


# ---------------------------------------------------------------------------------------------
# The folder, and its files


def lti_folder(root, owner=None):
    """`lti/` of the course folder `root`, private to its owner and ignored by git; made if
    missing. `owner` (a `pwd` entry) gets what is made here, when a root process (the hub)
    makes it."""
    folder = Path(root) / LTI_FOLDER
    if not folder.is_dir():
        with contextlib.suppress(FileExistsError):  # another process made it first: theirs
            folder.mkdir(mode=0o700)
            hand_over(owner, folder)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
        hand_over(owner, ignore)
    return folder


def hand_over(owner, path):
    """Give `path` to `owner` (a `pwd` entry), without following a link; nothing if None."""
    if owner is not None:
        os.chown(path, owner.pw_uid, owner.pw_gid, follow_symlinks=False)


def read_private(path):
    """A JSON file of lti/, or None when there is none yet."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else None


def write_private(path, value, owner=None):
    """Write a JSON file of lti/ atomically, 0600, given to `owner` (a `pwd` entry) if any."""
    path = Path(path)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(value, indent=1, sort_keys=True))
    hand_over(owner, partial)
    os.chmod(partial, 0o600)
    partial.replace(path)


# ---------------------------------------------------------------------------------------------
# launches.json


def decoded(kind, record):
    """A `kind` (a dataclass of text fields) from its JSON object; a field it lacks is ""."""
    return kind(**{f.name: str(record.get(f.name) or "") for f in fields(kind)})


def record_launch(folder, launch, platform, owner=None):
    """Add `launch` to lti/launches.json of `folder`, and the `platform` (an LtiPlatform) it
    came from.

    It replaces only the same user's earlier launch of the same lab from the same activity of
    the same LMS course: a launch from another LMS course never replaces this course's lineitem.
    """
    path = Path(folder) / LAUNCHES_FILE
    record = read_private(path) or {}
    record[PLATFORM] = asdict(platform)
    users = record.setdefault(LAUNCHES, {}).setdefault(launch.context, {})
    users.setdefault(launch.user, {}).setdefault(launch.lab, {})[launch.link] = launch.entry()
    write_private(path, record, owner)


def read_launches(folder):
    """(the LtiPlatform, every Launch) of lti/launches.json in `folder`; (None, []) before any."""
    record = read_private(Path(folder) / LAUNCHES_FILE)
    if record is None:
        return None, []
    return decoded(LtiPlatform, record.get(PLATFORM) or {}), [
        launch_of(context, user, lab, link, entry)
        for context, users in record.get(LAUNCHES, {}).items()
        for user, labs in users.items()
        for lab, links in labs.items()
        for link, entry in links.items()
    ]


def launch_of(context, user, lab, link, entry):
    """A Launch from its place in launches.json and its entry there (keys it lacks are empty)."""
    kept = {key: entry.get(key, "") for key in ENTRY}
    return Launch(context, user, lab, link, **{**kept, "scope": tuple(entry.get("scope") or ())})


def course_launches(launches, context):
    """The launches from the LMS course `context` (its id)."""
    return [launch for launch in launches if launch.context == context]


# ---------------------------------------------------------------------------------------------
# lms_course.json


def read_link(folder):
    """The LinkedCourse of lti/lms_course.json in `folder`, or None while the course is linked
    to no LMS course."""
    record = read_private(Path(folder) / LMS_COURSE_FILE)
    if record is None:
        return None
    return decoded(LinkedCourse, record)


def write_link(folder, linked, owner=None):
    """Link the course to the LMS course `linked` (a LinkedCourse): lti/lms_course.json."""
    write_private(Path(folder) / LMS_COURSE_FILE, asdict(linked), owner)
