"""Measure the grader's peak memory while a kernel floods it with outputs: one JSON line per flood.

Run as a script (`python output_memory.py NAME...`, names from `attacks.floods`, "honest" for the
baseline), in a process of its own: each flood is one cell of a notebook that the course's
executor (`JudgeExecute`, with a sandboxed kernel) runs, or, for a name that ends in " during a
test", the body of a function that a locked test cell calls from the grader. The peak growth of
this process's resident memory while the notebook is graded is printed with the characters the
last cell's outputs kept and their text's end.
"""

import gc
import json
import sys
import tempfile
from pathlib import Path

import nbformat
from attacks.floods import FLOODS, HONEST
from nbgrader.api import Gradebook
from traitlets.config import Config

from course.grading.preprocessors.judge import JudgeExecute

ASSIGNMENT = NOTEBOOK = "floods"
TEST_ID = "test_flood"
TEST = "assert flood() == 1"
CELL_SECONDS = 30  # the course's cell limit
DURING_A_TEST = " during a test"  # a name ending so: the flood runs when a test calls the student


def kilobytes(field):
    """A memory figure of this process from /proc/self/status, in kB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:"))


def resources_in(folder):
    """nbgrader's resources for the notebook of a gradebook in `folder` with one locked test."""
    db_url = f"sqlite:///{folder}/gradebook.db"
    with Gradebook(db_url) as gradebook:
        gradebook.add_assignment(ASSIGNMENT)
        gradebook.add_notebook(NOTEBOOK, ASSIGNMENT)
        gradebook.add_source_cell(
            TEST_ID, NOTEBOOK, ASSIGNMENT, source=TEST, locked=True, cell_type="code"
        )
    nbgrader = {"db_url": db_url, "assignment": ASSIGNMENT, "notebook": NOTEBOOK}
    return {"nbgrader": nbgrader, "metadata": {"path": str(folder)}}


def grading_cell():
    """The locked test cell that calls the student's `flood`, run by the grader."""
    cell = nbformat.v4.new_code_cell(TEST)
    cell.metadata.nbgrader = {
        "grade": True,
        "grade_id": TEST_ID,
        "locked": True,
        "points": 1,
        "solution": False,
    }
    return cell


def graded(code, folder, during_a_test):
    """The notebook with `code` as a cell (or in the function a test calls), once graded."""
    config = Config()
    config.Execute.timeout = CELL_SECONDS
    if during_a_test:
        body = "\n".join(f"    {line}" for line in code.splitlines())
        cells = [nbformat.v4.new_code_cell(f"def flood():\n{body}\n    return 1\n"), grading_cell()]
    else:
        cells = [nbformat.v4.new_code_cell(code)]
    notebook = nbformat.v4.new_notebook(cells=cells)
    return JudgeExecute(config=config).preprocess(notebook, resources_in(folder))[0]


def peak_growth(code, during_a_test=False):
    """The peak growth of resident memory (MB) while `code` is graded, and what its cell kept."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the peak resident memory starts again from the current one
    before = kilobytes("VmRSS")
    with tempfile.TemporaryDirectory() as folder:
        outputs = graded(code, Path(folder), during_a_test).cells[-1].outputs
    growth = (kilobytes("VmHWM") - before) / 1024
    kept = sum(len(json.dumps(output)) for output in outputs)
    return growth, kept, text_of(outputs[-1]) if outputs else ""


def text_of(output):
    """The text an output shows: a stream's, an error's traceback or a display's plain text."""
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return "\n".join(output.traceback)
    return output.data.get("text/plain", "")


if __name__ == "__main__":
    cells = {flood.name: flood.cell() for flood in [HONEST, *FLOODS]}
    for name in sys.argv[1:]:
        during_a_test = name.endswith(DURING_A_TEST)
        growth, kept, last = peak_growth(cells[name.removesuffix(DURING_A_TEST)], during_a_test)
        print(json.dumps([name, growth, kept, last[-300:]]), flush=True)
