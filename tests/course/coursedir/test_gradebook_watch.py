"""The formgrader's kept gradebook is closed once its file is replaced, and only then."""

import sqlite3
from types import SimpleNamespace

from course.coursedir.gradebook_watch import GradebookWatch, gradebook_file


class KeptGradebook:
    """What the formgrader keeps: something it can close."""

    closed = False

    def close(self):
        self.closed = True


def settings_for(path):
    """Formgrader settings whose course names the SQLite gradebook at `path`, opened and kept."""
    coursedir = SimpleNamespace(db_url=f"sqlite:///{path}?timeout=600")
    return {"nbgrader_coursedir": coursedir, "nbgrader_gradebook": KeptGradebook()}


def test_a_replaced_gradebook_is_closed_so_that_the_new_one_is_opened(tmp_path):
    path = tmp_path / "gradebook.db"
    sqlite3.connect(path).close()
    settings = settings_for(path)
    kept = settings["nbgrader_gradebook"]
    watch = GradebookWatch(settings)
    watch.check()
    watch.check()
    assert settings["nbgrader_gradebook"] is kept and not kept.closed  # the same file
    replacement = tmp_path / "new term.db"
    sqlite3.connect(replacement).close()
    replacement.replace(path)  # as a new term's gradebook is put in place
    watch.check()
    assert kept.closed and settings["nbgrader_gradebook"] is None


def test_only_a_sqlite_gradebook_is_watched():
    postgres = SimpleNamespace(db_url="postgresql://db/course")
    assert gradebook_file({"nbgrader_coursedir": postgres}) is None
    assert gradebook_file({}) is None
