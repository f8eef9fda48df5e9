"""A Jupyter server extension: the formgrader notices a gradebook replaced while it runs.

nbgrader's formgrader opens the course's gradebook once and keeps it, while its lists open it
anew at each request. When gradebook.db is replaced (a new term, another LMS), the lists show
the new students and their pages answer "Invalid submission" from the old file. Here the server
checks every few seconds which file the gradebook's path names, and when it is another file,
closes the kept gradebook so that the formgrader opens the new one at its next request.
"""

import os

from tornado.ioloop import PeriodicCallback

CHECK_MILLISECONDS = 2000
SQLITE_PREFIX = "sqlite:///"


def gradebook_file(settings):
    """The path of the course's SQLite gradebook that the formgrader uses, or None.

    The formgrader (nbgrader's `FormgradeExtension`, in the server's settings) reads its URL
    from its course directory at each request, as its handlers do.
    """
    coursedir = getattr(settings.get("nbgrader_formgrader"), "coursedir", None)
    url = getattr(coursedir, "db_url", None) or settings.get("nbgrader_db_url") or ""
    if not url.startswith(SQLITE_PREFIX):
        return None
    return url[len(SQLITE_PREFIX) :].split("?", 1)[0]


def file_identity(path):
    """(device, inode) of the file at `path`, or None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


class GradebookWatch:
    """Closes the formgrader's kept gradebook once its file has been replaced."""

    def __init__(self, settings, log=None):
        self.settings, self.log = settings, log
        self.kept = None  # the gradebook the formgrader keeps, as last seen
        self.seen = None  # the identity of the file it was opened on

    def check(self):
        """Forget the kept gradebook if the file at its path is not the one it was opened on."""
        path = gradebook_file(self.settings)
        kept = self.settings.get("nbgrader_gradebook")
        now = file_identity(path) if path else None
        if kept is None or kept is not self.kept:
            self.kept, self.seen = kept, now
            return
        if now != self.seen:
            kept.close()
            self.settings["nbgrader_gradebook"] = self.kept = None
            if self.log is not None:
                self.log.info("Gradebook %s replaced: the formgrader reads the new one", path)


def _jupyter_server_extension_points():
    """This module is a Jupyter server extension."""
    return [{"module": "course.coursedir.gradebook_watch"}]


def _load_jupyter_server_extension(server):
    """Check the gradebook's file every few seconds while the server runs."""
    watch = GradebookWatch(server.web_app.settings, server.log)
    PeriodicCallback(watch.check, CHECK_MILLISECONDS).start()
