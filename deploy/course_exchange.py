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
* collect copies only the folders and regular files that the student made, without following
  a link (course.coursedir.safe_copy): links, hard links, FIFOs, sockets and devices are
  refused, each named in collect's summary, and the files and bytes taken are bounded;
* `nbgrader list --inbound` leaves out, and names, a submission whose notebook is a link or a
  FIFO (nbgrader's list reads each notebook);
* the exchange's root only has to be searchable (0755, owned by root).

Configure it with `c.ExchangeFactory.<action> = "course_exchange.<Class>"` (deploy/jupyter/).
"""

import fnmatch
import glob
import os
import pwd
import stat
import subprocess

from nbgrader.exchange import default
from nbgrader.utils import check_directory, notebook_hash

from course.coursedir import safe_copy

INBOUND_MODE = 0o1733
FEEDBACK_MODE = 0o711


def owner(path):
    """The name of the user who owns `path`, itself if a link (or their user id if no name)."""
    uid = os.lstat(path).st_uid
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


def oddity(path, should_be_folder):
    """What `path` is when it is not a plain folder (or file) as it should be, else None."""
    mode = os.lstat(path).st_mode
    if safe_copy.kind_of(mode):
        return safe_copy.kind_of(mode)
    if stat.S_ISDIR(mode) != should_be_folder:
        return "a file, not a folder" if should_be_folder else "a folder, not a file"
    return None


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
        """True when `record` is a folder, not a link, owned by the student its name gives."""
        path = os.path.join(self.inbound_path, record["filename"])
        found = owner(path)
        if found != record["username"]:
            self.log.warning("Not collected: %s names %s but was made by %s",
                             record["filename"], record["username"], found)  # fmt: skip
            return False
        reason = oddity(path, should_be_folder=True)
        if reason:
            self.log.warning("Not collected: %s is %s", record["filename"], reason)
            return False
        return True

    def _sort_by_timestamp(self, records):
        """A student's submissions, genuine ones first, newest first."""
        return sorted(records, key=lambda r: (self.genuine(r), r["timestamp"]), reverse=True)

    def init_src(self):
        """nbgrader's choice of submissions, without any that another user made."""
        super().init_src()
        self.src_records = [r for r in self.src_records if self.genuine(r)]

    def limits(self):
        """The bounds of one submission: nbgrader's max_dir_size and max_file_size (in kB)."""
        return safe_copy.Limits(total_bytes=1000 * self.coursedir.max_dir_size,
                                file_bytes=1000 * self.coursedir.max_file_size)  # fmt: skip

    def ignored(self, name, is_folder):
        """True for what nbgrader leaves behind: CourseDirectory.ignore, or not .include."""
        if any(fnmatch.fnmatch(name, pattern) for pattern in self.coursedir.ignore):
            return True
        include = self.coursedir.include
        return not is_folder and not any(fnmatch.fnmatch(name, pattern) for pattern in include)

    def do_copy(self, src, dest, log=None):
        """Copy only what the student made, never following a link; name what was refused."""
        student = self._path_to_record(src)["username"]
        try:
            uid = pwd.getpwnam(student).pw_uid
        except KeyError:
            self.log.warning("Not collected: %s: no user %s", os.path.basename(src), student)
            return
        try:
            copied = safe_copy.copy_tree(src, dest, uid, self.limits(), self.ignored)
        except ValueError as error:
            self.log.warning("Not collected: %s", error)
            return
        for refusal in copied.refused:
            self.log.warning("refused %s from student %s: %s",
                             refusal.path, student, refusal.reason)  # fmt: skip


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
    """nbgrader's list, with a root that is only searchable; `--inbound` opens no student's link.

    nbgrader's list reads a submission's notebooks (to find its feedback): one that is a FIFO
    would block it, and a link would be followed. Such a submission is named and not listed.
    """

    def init_dest(self):
        """nbgrader's submissions, without those whose notebooks are not plain files."""
        super().init_dest()
        if self.inbound:
            self.assignments = [path for path in self.assignments if self.plain(path)]

    def plain(self, submission):
        """True when `submission` is a folder, and each of its notebooks a file, none a link."""
        entries = [submission, *glob.glob(os.path.join(glob.escape(submission), "*.ipynb"))]
        for path in entries:
            reason = oddity(path, should_be_folder=path == submission)
            if reason:
                self.log.warning("Not listed: %s is %s", path, reason)
                return False
        return True
