"""Where the course's gradebook lives: gradebook.db by default, or `c.CourseDirectory.db_url`.

Every tool of the course opens the gradebook that nbgrader_config.py names, so a course that
points `db_url` at PostgreSQL is graded, reported and exported from PostgreSQL throughout.
"""

from pathlib import Path

from nbgrader.api import Gradebook
from traitlets.config.loader import PyFileConfigLoader

from course.coursedir import paths

CONFIG_FILE = "nbgrader_config.py"
# How long a connection to a SQLite gradebook waits for another grader's write to end.
SQLITE_BUSY_SECONDS = 600
LOCKED_CELLS_KEY = "course_locked_cells"  # in the resources of an nbgrader step


def configured_url(root=paths.ROOT):
    """`c.CourseDirectory.db_url` of the course's nbgrader_config.py, else its gradebook.db."""
    config_path = Path(root) / CONFIG_FILE
    if not config_path.is_file():
        return paths.default_gradebook_url(root)
    config = PyFileConfigLoader(CONFIG_FILE, path=str(root)).load_config()
    return config.CourseDirectory.get("db_url") or paths.default_gradebook_url(root)


def shared_url(url):
    """`url`, with SQLite told to wait for other writers rather than fail at once."""
    if not isinstance(url, str) or not url:
        raise ValueError(f"expected a SQLAlchemy database URL, got {url!r}")
    if url.startswith("sqlite") and "?" not in url:
        return f"{url}?timeout={SQLITE_BUSY_SECONDS}"
    return url


def connection_url(root=paths.ROOT):
    """The database URL every grader of the course connects to the gradebook with."""
    return shared_url(configured_url(root))


def open_gradebook(root=paths.ROOT):
    """Open the course's gradebook (use it in a `with` block)."""
    return Gradebook(connection_url(root))


def score_after_penalty(submission):
    """A submission's score less its late penalty (nbgrader's gradebook keeps them apart)."""
    return submission.score - (submission.late_submission_penalty or 0)


def locked_cells(resources):
    """grade_id -> source of each locked code cell of the notebook an nbgrader step is given.

    The gradebook is read once for each pass of nbgrader over the notebook: the first step that
    asks keeps the answer in `resources` for the next.
    """
    info = resources["nbgrader"]
    key = (info["db_url"], info["assignment"], info["notebook"])
    kept = resources.get(LOCKED_CELLS_KEY)
    if kept is None or kept[0] != key:
        with Gradebook(info["db_url"]) as gradebook:
            notebook = gradebook.find_notebook(info["notebook"], info["assignment"])
            cells = {
                cell.name: cell.source
                for cell in notebook.source_cells
                if cell.locked and cell.cell_type == "code"
            }
        kept = resources[LOCKED_CELLS_KEY] = (key, cells)
    return dict(kept[1])
