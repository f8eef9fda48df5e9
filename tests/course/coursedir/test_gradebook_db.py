"""The locked cells of a notebook being graded: read from its gradebook once, then kept."""

from nbgrader.api import Gradebook

from course.coursedir.gradebook_db import locked_cells


def gradebook_with_cells(path):
    """A gradebook of one notebook: a locked code cell, an answer cell, a locked markdown cell."""
    url = f"sqlite:///{path}"
    with Gradebook(url) as gradebook:
        gradebook.add_assignment("lab")
        gradebook.add_notebook("lab", "lab")
        gradebook.add_source_cell("setup", "lab", "lab", cell_type="code", locked=True,
                                  source="import torch\n")  # fmt: skip
        gradebook.add_source_cell("answer", "lab", "lab", cell_type="code", locked=False,
                                  source="# YOUR CODE HERE\n")  # fmt: skip
        gradebook.add_source_cell("intro", "lab", "lab", cell_type="markdown", locked=True,
                                  source="# Lab\n")  # fmt: skip
    return url


def test_the_locked_code_cells_are_read_once_for_the_steps_of_a_pass(tmp_path):
    path = tmp_path / "gradebook.db"
    resources = {"nbgrader": {"db_url": gradebook_with_cells(path), "assignment": "lab",
                              "notebook": "lab"}}  # fmt: skip
    assert locked_cells(resources) == {"setup": "import torch\n"}
    path.unlink()  # the next step of the pass reads nothing more
    cells = locked_cells(resources)
    cells["setup"] = "changed by a step"
    assert locked_cells(resources) == {"setup": "import torch\n"}


def test_another_notebook_is_read_again(tmp_path):
    first = {"nbgrader": {"db_url": gradebook_with_cells(tmp_path / "first.db"),
                          "assignment": "lab", "notebook": "lab"}}  # fmt: skip
    locked_cells(first)
    other = gradebook_with_cells(tmp_path / "other.db")
    with Gradebook(other) as gradebook:
        gradebook.find_source_cell("setup", "lab", "lab").source = "import numpy\n"
        gradebook.db.commit()
    first["nbgrader"]["db_url"] = other
    assert locked_cells(first) == {"setup": "import numpy\n"}
