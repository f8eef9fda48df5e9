"""The formgrader's kept gradebook is closed once its file is replaced, and only then."""

import sqlite3
from types import SimpleNamespace

from nbgrader.coursedir import CourseDirectory
from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

from course.coursedir.gradebook_watch import GradebookWatch, gradebook_file


class KeptGradebook:
    """What the formgrader keeps: something it can close."""

    closed = False

    def close(self):
        self.closed = True


def settings_for(path):
    """Formgrader settings whose course names the SQLite gradebook at `path`, opened and kept.

    As nbgrader's formgrader leaves them: the extension, with its course directory, and the
    gradebook its handlers keep.
    """
    coursedir = SimpleNamespace(db_url=f"sqlite:///{path}?timeout=600")
    formgrader = SimpleNamespace(coursedir=coursedir)
    return {"nbgrader_formgrader": formgrader, "nbgrader_gradebook": KeptGradebook()}


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
    postgres = SimpleNamespace(coursedir=SimpleNamespace(db_url="postgresql://db/course"))
    assert gradebook_file({"nbgrader_formgrader": postgres}) is None
    assert gradebook_file({"nbgrader_db_url": "postgresql://db/course"}) is None
    assert gradebook_file({}) is None


def test_the_gradebook_is_the_one_nbgraders_formgrader_names(tmp_path):
    """The settings' keys are nbgrader's own: a real formgrader's course and gradebook."""
    formgrader = FormgradeExtension()
    formgrader.coursedir = CourseDirectory(parent=formgrader, root=str(tmp_path))  # as initialize()
    settings = {"nbgrader_formgrader": formgrader, "nbgrader_db_url": "sqlite:///elsewhere.db"}
    assert gradebook_file(settings) == str(tmp_path / "gradebook.db")
    assert gradebook_file({"nbgrader_db_url": f"sqlite:///{tmp_path}/x.db"}) == f"{tmp_path}/x.db"
