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
* a submission's time is the later of what it claims (its timestamp.txt, or its folder's name)
  and when it really arrived: the newest change time (ctime, which no user can set back) of its
  folder and what is in it. Submitting (copying, chmod, the ACL) takes a while on a busy hub,
  so a claim up to CLAIM_SLACK_SECONDS older than the arrival stands; a claim further off is
  not used, but shown beside the arrival; collect writes the time it used to the collected
  timestamp.txt, which the late penalty reads;
* every name a student chose (a folder's, a file's) is logged with its control characters
  escaped (`course.lms.names.shown`): no escape sequence reaches the instructor's terminal;
* `nbgrader list --inbound` leaves out, and names, a submission whose notebook is a link or a
  FIFO (nbgrader's list reads each notebook);
* the exchange's root only has to be searchable (0755, owned by root).

Configure it with `c.ExchangeFactory.<action> = "course_exchange.<Class>"` (deploy/jupyter/).
"""

import datetime
import fnmatch
import glob
import os
import pwd
import stat
import subprocess

from nbgrader.exchange import default
from nbgrader.utils import check_directory, notebook_hash, parse_utc

from course.coursedir import safe_copy
from course.grading.kernels.policy import SUBMITTED_FILE_BYTES
from course.lms.names import shown

INBOUND_MODE = 0o1733
FEEDBACK_MODE = 0o711
# A claim at most this much older than the arrival stands (submitting takes a while on a busy
# hub); one further off, either way, is shown.
CLAIM_SLACK_SECONDS = 300
CLAIM_BYTES = 100  # of a timestamp.txt read: nbgrader writes 30
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's own


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


def arrival(path, limit=safe_copy.MAX_ENTRIES):
    """The newest change time of folder `path` and of what is in it, as a naive UTC datetime.

    Change times (ctime) move forward with every write, chmod or rename, and no user can set them
    back. No link is followed; at most `limit` entries are looked at (collect copies no more).
    An entry the instructor may not read (added after the submission shared it) is skipped.
    """
    status = os.lstat(path)
    newest, seen, pending = status.st_ctime, 0, [path] if stat.S_ISDIR(status.st_mode) else []
    while pending and seen < limit:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    seen += 1
                    newest = max(newest, entry.stat(follow_symlinks=False).st_ctime)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    if seen >= limit:
                        break
        except OSError:
            continue
    return datetime.datetime.fromtimestamp(newest, datetime.UTC).replace(tzinfo=None)


def submission_time(claimed, arrived):
    """The time of a submission that claims `claimed` and arrived at `arrived` (naive UTC)."""
    if claimed is None or claimed > arrived:
        return arrived if claimed is None else claimed
    if arrived - claimed <= datetime.timedelta(seconds=CLAIM_SLACK_SECONDS):
        return claimed
    return arrived


def read_claim(folder):
    """The time a submission's timestamp.txt in `folder` claims, or None (none, or not a time)."""
    try:
        descriptor = os.open(os.path.join(folder, "timestamp.txt"), safe_copy.FILE_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        text = os.read(descriptor, CLAIM_BYTES).decode("utf-8", "replace").strip()
    finally:
        os.close(descriptor)
    return parse_claim(text)


def parse_claim(text):
    """A claimed time as a naive UTC datetime, or None when it is not one."""
    try:
        return parse_utc(text)
    except (ValueError, OverflowError, TypeError):
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
    """Collect the latest submission of each student that the student really made, at the time
    it really arrived."""

    def _path_to_record(self, path):
        """nbgrader's record of a submission, its "timestamp" the time it really arrived.

        "claimed" is what its name says (None when that is no time, which nbgrader's own record
        would fail the whole collect on), "arrived" the newest change time of its files.
        """
        filename = os.path.basename(path)
        parts = filename.rsplit("+", 3)
        if len(parts) < 3:
            self.fail(f"Invalid filename: {shown(filename)}")
        full = os.path.join(self.inbound_path, filename)
        claimed = parse_claim(parts[2])
        arrived = arrival(full) if os.path.lexists(full) else claimed
        return {"username": parts[0], "filename": filename, "claimed": claimed,
                "arrived": arrived, "timestamp": submission_time(claimed, arrived)}  # fmt: skip

    def genuine(self, record):
        """True when `record` is a folder, not a link, owned by the student its name gives."""
        path = os.path.join(self.inbound_path, record["filename"])
        found = owner(path)
        if found != record["username"]:
            self.log.warning("Not collected: %s names %s but was made by %s",
                             shown(record["filename"]), shown(record["username"]),
                             shown(found))  # fmt: skip
            return False
        reason = oddity(path, should_be_folder=True)
        if reason:
            self.log.warning("Not collected: %s is %s", shown(record["filename"]), reason)
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
        """The bounds of one submission: nbgrader's max_dir_size and max_file_size (in kB), and
        no file over SUBMITTED_FILE_BYTES, since the grader reads a notebook whole."""
        most = min(1000 * self.coursedir.max_file_size, SUBMITTED_FILE_BYTES)
        return safe_copy.Limits(total_bytes=1000 * self.coursedir.max_dir_size, file_bytes=most)

    def ignored(self, name, is_folder):
        """True for what nbgrader leaves behind: CourseDirectory.ignore, or not .include."""
        if any(fnmatch.fnmatch(name, pattern) for pattern in self.coursedir.ignore):
            return True
        include = self.coursedir.include
        return not is_folder and not any(fnmatch.fnmatch(name, pattern) for pattern in include)

    def do_copy(self, src, dest, log=None):
        """Copy only what the student made, never following a link; name what was refused."""
        record = self._path_to_record(src)
        student = record["username"]
        try:
            uid = pwd.getpwnam(student).pw_uid
        except KeyError:
            self.log.warning("Not collected: %s: no user %s",
                             shown(os.path.basename(src)), shown(student))  # fmt: skip
            return
        try:
            copied = safe_copy.copy_tree(src, dest, uid, self.limits(), self.ignored)
        except ValueError as error:
            self.log.warning("Not collected: %s", shown(error))
            return
        for refusal in copied.refused:
            self.log.warning("refused %s from student %s: %s",
                             shown(refusal.path), student, shown(refusal.reason))  # fmt: skip
        self.record_time(record, dest)

    def record_time(self, record, dest):
        """Write the submission's time to the collected timestamp.txt; show a claim far off."""
        claimed = read_claim(dest) or record["claimed"]
        time = submission_time(claimed, record["arrived"])
        off = None if claimed is None else abs(record["arrived"] - claimed).total_seconds()
        if off is None or off > CLAIM_SLACK_SECONDS:
            said = "no time" if claimed is None else f"{claimed:%Y-%m-%d %H:%M:%S} UTC"
            self.log.warning("%s: the submission says %s, its files arrived at %s UTC: "
                             "collected as of %s UTC", shown(record["filename"]), said,
                             f"{record['arrived']:%Y-%m-%d %H:%M:%S}",
                             f"{time:%Y-%m-%d %H:%M:%S}")  # fmt: skip
        stamp = os.path.join(dest, "timestamp.txt")
        if os.path.lexists(stamp):
            os.unlink(stamp)
        with open(stamp, "x", encoding="utf-8") as file:
            file.write(time.strftime(TIMESTAMP_FORMAT))


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
                self.log.warning("Not listed: %s is %s", shown(path), reason)
                return False
        return True
