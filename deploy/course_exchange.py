"""nbgrader's exchange, with each submission and each feedback file private to its student.

nbgrader's own exchange leaves a submission world-readable in a folder anyone may write to,
feedback world-readable under a hashed name, and wants the exchange's root writable by all.
Here, in the course's folder of the exchange (owned by the instructor):

* `inbound/` is 1733: anyone may add a folder, no one but the instructor may list it, and the
  sticky bit lets no one rename or remove another's folder;
* a submission is 0700 with files 0600, owned by its student, and a POSIX ACL gives the
  instructor (the owner of the course's folder) access;
* a feedback file is 0600, owned by the instructor, with an ACL that lets its student read it;
* a submission whose folder is not owned by the student it names is not collected;
* the exchange's root only has to be searchable (0755, owned by root).

Configure it with `c.ExchangeFactory.<action> = "course_exchange.<Class>"` (deploy/jupyter/).
"""

import glob
import os
import pwd
import subprocess

from nbgrader.exchange import default
from nbgrader.utils import check_directory, notebook_hash

INBOUND_MODE = 0o1733
FEEDBACK_MODE = 0o711


def owner(path):
    """The name of the user who owns `path` (or their user id if they have no name)."""
    uid = os.stat(path).st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def make_private(path):
    """Give `path` and everything under it to its owner alone: folders 0700, files 0600."""
    os.chmod(path, 0o700)
    for folder, subfolders, files in os.walk(path):
        for name in subfolders:
            os.chmod(os.path.join(folder, name), 0o700)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o600)


def grant(path, user, permissions):
    """Add a POSIX ACL entry for `user` on `path` and everything under it (setfacl)."""
    command = ["setfacl", "-R", "-m", f"u:{user}:{permissions}", path]
    subprocess.run(command, check=True, capture_output=True, text=True)


class SearchableRoot:
    """The exchange's root needs only to be searchable, never writable by all."""

    def ensure_root(self):
        """Fail unless the exchange's root exists and can be searched."""
        if not check_directory(self.root, execute=True):
            self.fail(f"The exchange {self.root} is missing; please contact your instructor")


class ExchangeReleaseAssignment(SearchableRoot, default.ExchangeReleaseAssignment):
    """Release a lab; inbound/ accepts submissions but shows and yields none of them."""

    def init_dest(self):
        """nbgrader's folders, then inbound/ with the sticky bit."""
        super().init_dest()
        os.chmod(self.inbound_path, INBOUND_MODE)


class ExchangeSubmit(SearchableRoot, default.ExchangeSubmit):
    """Submit a lab into a folder that only its student and the instructor can open."""

    def copy_files(self):
        """nbgrader's copy, then the folder made private and shared with the instructor."""
        super().copy_files()
        submission = os.path.join(self.inbound_path, self.assignment_filename)
        make_private(submission)
        grant(submission, owner(os.path.dirname(self.inbound_path)), "rwX")


class ExchangeCollect(SearchableRoot, default.ExchangeCollect):
    """Collect the latest submission of each student that the student really made."""

    def genuine(self, record):
        """True when the folder of `record` is owned by the student its name gives."""
        found = owner(os.path.join(self.inbound_path, record["filename"]))
        if found != record["username"]:
            self.log.warning("Not collected: %s names %s but was made by %s",
                             record["filename"], record["username"], found)  # fmt: skip
        return found == record["username"]

    def _sort_by_timestamp(self, records):
        """A student's submissions, genuine ones first, newest first."""
        return sorted(records, key=lambda r: (self.genuine(r), r["timestamp"]), reverse=True)

    def init_src(self):
        """nbgrader's choice of submissions, without any that another user made."""
        super().init_src()
        self.src_records = [r for r in self.src_records if self.genuine(r)]


class ExchangeReleaseFeedback(SearchableRoot, default.ExchangeReleaseFeedback):
    """Release each student's feedback readable by that student alone."""

    def feedback_files(self):
        """(student, source HTML, released HTML) for each feedback file to release."""
        for html in sorted(glob.glob(os.path.join(self.src_path, "*.html"))):
            folder = os.path.dirname(html)
            student = os.path.basename(os.path.dirname(folder))
            with open(os.path.join(folder, "submission_secret.txt")) as secret:
                notebook_id = os.path.splitext(os.path.basename(html))[0]
                checksum = notebook_hash(secret=secret.read(), notebook_id=notebook_id)
            yield student, html, os.path.join(self.dest_path, f"{checksum}.html")

    def copy_files(self):
        """Copy the files as 0600 (so no one else can read them, even briefly), then share each."""
        files = list(self.feedback_files())
        for _, html, _ in files:
            os.chmod(html, 0o600)
        super().copy_files()
        os.chmod(self.dest_path, FEEDBACK_MODE)
        for student, _, released in files:
            if os.path.exists(released):
                self.share(released, student)

    def share(self, released, student):
        """Let `student` read `released`, or leave it private if they have no Unix account."""
        try:
            grant(released, student, "r")
        except subprocess.CalledProcessError as error:
            self.log.warning("Feedback %s left private: %s", released, error.stderr.strip())


class ExchangeFetchAssignment(SearchableRoot, default.ExchangeFetchAssignment):
    """nbgrader's fetch, with a root that is only searchable."""


class ExchangeFetchFeedback(SearchableRoot, default.ExchangeFetchFeedback):
    """nbgrader's fetch of feedback, with a root that is only searchable."""


class ExchangeList(SearchableRoot, default.ExchangeList):
    """nbgrader's list, with a root that is only searchable."""
