"""Findings about a submission: listed for the instructor's cells never, for the student's always.

`ListFindings` reads each code cell of a submission that is not the instructor's (its source
checked against the gradebook) and records the findings in the notebook's metadata, changing no
cell; `pages.ShowFindings` then shows them, as text, above the formgrader and feedback pages.
"""

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.api import Gradebook
from traitlets.config import Config

from course.coursedir import notebooks, paths
from course.coursedir.scratch import fill, solution_cells
from course.grading.preprocessors.feedback import FeedbackExporter
from course.grading.preprocessors.findings import FINDINGS_KEY, ListFindings, submission_findings
from course.grading.preprocessors.pages import ShowFindings
from utils.review import MAX_READ_CHARACTERS, LabPolicy

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
NOTEBOOK_NAME = Path(NOTEBOOK).stem
FORBIDDEN_SOFTMAX = "def softmax(scores, dim=-1):\n    return torch.softmax(scores, dim=dim)\n"
IMPORTS_OS = "import os\n\n\ndef log_softmax(scores, dim=-1):\n    return scores - scores\n"
SOFTMAX_FINDING = "softmax, line 2: it calls softmax, which this lab forbids"
OS_FINDING = "log_softmax, line 1: it imports os, which this lab does not use"


def release():
    """The student version of lab 01."""
    return notebooks.read(paths.RELEASE / LAB / NOTEBOOK)


def instructor_cells(nb):
    """grade_id -> source of each locked code cell: what the gradebook holds of a lab."""
    return {
        notebooks.nbgrader_meta(cell)["grade_id"]: cell.source
        for cell in nb.cells
        if cell.cell_type == "code" and notebooks.nbgrader_meta(cell).get("locked")
    }


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course folder with lab 01's source notebook and a gradebook of its locked cells."""
    root = tmp_path_factory.mktemp("findings")
    shutil.copytree(paths.SOURCE / LAB, root / "source" / LAB)
    url = f"sqlite:///{root / 'gradebook.db'}"
    with Gradebook(url) as gradebook:
        gradebook.add_assignment(LAB)
        gradebook.add_notebook(NOTEBOOK_NAME, LAB)
        for grade_id, source in instructor_cells(release()).items():
            gradebook.add_source_cell(
                grade_id, NOTEBOOK_NAME, LAB, cell_type="code", locked=True, source=source
            )
    return root, url


def listed(course, nb):
    """The findings ListFindings records about `nb`, checking that it changes no cell."""
    root, url = course
    config = Config()
    config.CourseDirectory.root = str(root)
    resources = {"nbgrader": {"db_url": url, "assignment": LAB, "notebook": NOTEBOOK_NAME}}
    before = copy.deepcopy(nb.cells)
    nb, _ = ListFindings(config=config).preprocess(nb, resources)
    assert nb.cells == before
    return nb.metadata[FINDINGS_KEY]


def test_the_solution_has_no_finding(course):
    assert listed(course, fill(release(), solution_cells(LAB))) == []


def test_the_students_cells_are_listed_with_where_and_what(course):
    nb = fill(release(), {"softmax": FORBIDDEN_SOFTMAX, "log_softmax": IMPORTS_OS})
    nb.cells.append(new_code_cell("import subprocess\n"))
    extra = f"cell {len(nb.cells)}, line 1: it imports subprocess, which this lab does not use"
    assert listed(course, nb) == [SOFTMAX_FINDING, OS_FINDING, extra]


def test_the_instructors_cells_are_skipped_unless_a_student_changed_them(course):
    nb = release()  # its test cells call torch.softmax, which the lab forbids its students
    assert any("torch.softmax(" in source for source in instructor_cells(nb).values())
    assert listed(course, nb) == []
    visible = next(
        cell for cell in nb.cells
        if notebooks.nbgrader_meta(cell).get("grade_id") == "test_softmax_visible"
    )
    visible.source = visible.source.rstrip("\n") + "\nimport os\n"
    line = len(visible.source.splitlines())
    found = listed(course, nb)
    assert f"test_softmax_visible, line {line}: it imports os, which this lab does not use" in found
    assert all(finding.startswith("test_softmax_visible, line ") for finding in found)


HIDES_SOFTMAX_IN_AN_ANNOTATION = '''import typing


def softmax(scores, dim=-1):
    def hidden(call: "torch.softmax"):
        pass

    return typing.get_type_hints(hidden)["call"](scores, dim=dim)
'''


def test_a_call_hidden_in_a_string_annotation_is_listed_with_what_runs_it(course):
    nb = fill(release(), {"softmax": HIDES_SOFTMAX_IN_AN_ANNOTATION})
    assert listed(course, nb) == [
        "softmax, line 5: it calls softmax, which this lab forbids",
        "softmax, line 8: it uses typing.get_type_hints, which runs code from a string: "
        "typing.get_type_hints evaluates string annotations",
    ]


def test_a_cell_nested_too_deeply_to_read_is_listed_not_fatal(course):
    nested = "scale = " + " + ".join(["1"] * 1500) + "\n" + solution_cells(LAB)["softmax"]
    nb = fill(release(), {"softmax": nested})
    assert listed(course, nb) == [
        "softmax, line 1: it nests its code too deeply to be read, so what it calls is not listed"
    ]


def test_notebook_findings_reads_with_the_labs_policy():
    nb = fill(release(), {"softmax": FORBIDDEN_SOFTMAX})
    instructor = instructor_cells(release())
    policy = LabPolicy.from_metadata(notebooks.read(paths.source_lab(LAB)).metadata)
    assert submission_findings(nb, instructor, policy) == [SOFTMAX_FINDING]
    assert submission_findings(nb, instructor, LabPolicy()) == []


# The pages.

HOSTILE_FINDINGS = [
    SOFTMAX_FINDING,
    "cell 3, line 1: it imports <script>window.pwned=1</script>, which this lab does not use",
    "cell 4, line 2: it uses ```\n<img src=x onerror=window.pwned=1>, [a](javascript:alert(1))",
]


def with_findings(listed_findings):
    """A one-cell submission with these findings in its metadata, as ListFindings leaves it."""
    nb = new_notebook(cells=[new_code_cell("submitted_answer = 1\n")])
    nb.metadata[FINDINGS_KEY] = listed_findings
    return nb


def test_show_findings_puts_them_first_in_a_text_block():
    nb, _ = ShowFindings().preprocess(with_findings(HOSTILE_FINDINGS), {})
    first = nb.cells[0]
    assert first.cell_type == "markdown" and "```text\n" in first.source
    assert first.source.count("```") == 2  # the findings cannot close the block
    assert SOFTMAX_FINDING in first.source


def test_a_submission_without_findings_gets_no_cell():
    nb = with_findings([])
    cells = len(nb.cells)
    assert len(ShowFindings().preprocess(nb, {})[0].cells) == cells


def formgrader_page(nb, config):
    """The page the formgrader renders, with the course's configuration."""
    return HTMLExporter(config=config, template_name="classic").from_notebook_node(nb)[0]


def feedback_page(nb, config):
    """The feedback page a student gets, with the course's configuration of it."""
    resources = {"nbgrader": {"notebook": LAB, "score": 8, "max_score": 8, "late_penalty": 0}}
    return FeedbackExporter(config=config).from_notebook_node(nb, resources=resources)[0]


@pytest.mark.parametrize(
    ("render", "config"),
    [(formgrader_page, "course_config"), (feedback_page, "feedback_config")],
)
def test_the_pages_show_the_findings_as_text(render, config, request):
    html = render(with_findings(HOSTILE_FINDINGS), request.getfixturevalue(config))
    assert html.index("Findings") < html.index("submitted_answer")
    assert SOFTMAX_FINDING in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=window.pwned=1&gt;" in html
    assert "[a](javascript:alert(1))" in html
    assert "<script>window.pwned" not in html and "<img src=x" not in html
    assert 'href="javascript' not in html


# A correct softmax cell that also holds a list literal of `size` characters: what the grader's
# findings add to its peak memory (MiB) beyond holding the notebook, and what they list.
LARGE_CELL_FINDINGS = """
import gc, json, sys
from nbformat.v4 import new_code_cell, new_notebook
from course.grading.preprocessors.findings import submission_findings
from utils.review import LabPolicy

def kilobytes(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))

size = int(sys.argv[1])
source = "CONSTANTS = [" + "1, " * (size // 3) + "]\\n" + sys.argv[2]
nb = new_notebook(cells=[new_code_cell(source)])
gc.collect()
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # the peak resident memory starts again from the current one
before = kilobytes("VmRSS")
found = submission_findings(nb, {}, LabPolicy(forbidden_calls=frozenset({"softmax"})))
print(json.dumps([(kilobytes("VmHWM") - before) / 1024, found]))
"""
FINDINGS_MEMORY_LIMIT_MIB = 256


def large_cell_findings(size):
    """(peak growth in MiB, findings) of a correct softmax cell with `size` characters more."""
    result = subprocess.run(
        [sys.executable, "-c", LARGE_CELL_FINDINGS, str(size), FORBIDDEN_SOFTMAX],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    return json.loads(result.stdout)


@pytest.mark.slow  # a Python of its own reads a notebook of many megabytes
@pytest.mark.parametrize("size", [4_000_000, 100_000_000], ids=["4 MB", "100 MB"])
def test_a_cell_too_large_to_be_read_is_a_finding_and_costs_the_grader_little(size):
    growth, found = large_cell_findings(size)
    print(f"a cell of {size:,} characters: findings add {growth:.0f} MiB to the grader's peak")
    assert growth < FINDINGS_MEMORY_LIMIT_MIB, growth
    assert len(found) == 1
    assert found[0].startswith("cell 1, line 1: it is too large to be read (")
    assert f"cells of up to {MAX_READ_CHARACTERS:,} are read" in found[0]


@pytest.mark.slow  # a Python of its own reads a notebook of many megabytes
def test_a_cell_just_under_the_size_read_is_read_whole():
    padding = MAX_READ_CHARACTERS - len(FORBIDDEN_SOFTMAX) - len("CONSTANTS = [\n]") - 3
    growth, found = large_cell_findings(padding)
    assert found == ["cell 1, line 3: it calls softmax, which this lab forbids"], found
    assert growth < FINDINGS_MEMORY_LIMIT_MIB, growth
