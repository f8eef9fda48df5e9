"""Course checks: sources validate, generated folders are fresh, the release leaks nothing."""

import ast
import difflib
import itertools
import re
import shutil

import nbformat
import pytest
from catalogue import ASSIGNMENTS
from nbgrader.validator import Validator
from substance import exercise_share, function_units, notebook_units

from course.coursedir import notebooks, paths, release
from utils.bindings import bound_names, free_names

SOLUTION_BLOCK = re.compile(r"### BEGIN SOLUTION(.*?)### END SOLUTION", re.DOTALL)
HIDDEN_BLOCK = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.DOTALL)
FORBIDDEN_IN_RELEASE = [
    "BEGIN SOLUTION",
    "END SOLUTION",
    "BEGIN HIDDEN TESTS",
    "END HIDDEN TESTS",
    "MARK SCHEME",
    "Mark scheme",
]


def source_notebook(assignment):
    """The instructor version of a lab."""
    return notebooks.read(paths.source_lab(assignment))


def generated(folder, assignment):
    """A generated notebook of the repository (release/ or solutions/)."""
    return paths.ROOT / folder / assignment / paths.lab_filename(assignment)


def secret_lines(assignment):
    """Lines that only the instructor may see: solution bodies, hidden tests, model answers."""
    secret, public = set(), set()
    for cell in source_notebook(assignment).cells:
        if cell.cell_type == "markdown" and notebooks.is_solution(cell):
            secret.update(cell.source.splitlines())
            continue
        hidden = "".join(SOLUTION_BLOCK.findall(cell.source) + HIDDEN_BLOCK.findall(cell.source))
        secret.update(hidden.splitlines())
        public.update(HIDDEN_BLOCK.sub("", SOLUTION_BLOCK.sub("", cell.source)).splitlines())
    public = {line.strip() for line in public}
    return {
        line.strip()
        for line in secret
        if len(line.strip()) >= 12
        and line.strip() not in public
        and not line.strip().startswith("#")
    }


def notebook_lines(nb):
    """Every stripped line of every cell source."""
    return {line.strip() for cell in nb.cells for line in cell.source.splitlines()}


@pytest.mark.slow  # nbgrader validates each lab's source in a kernel
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_passes_nbgrader_validation(assignment):
    results = Validator().validate(str(paths.source_lab(assignment)))
    assert results == {}, f"{assignment} does not validate: {results}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_lab_has_a_lecture(assignment):
    assert (paths.NOTEBOOKS / f"{assignment}.ipynb").exists()


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_leaks_no_solution_and_no_hidden_test(assignment):
    nb = notebooks.read(generated("release", assignment))
    text = nbformat.writes(nb)
    for marker in FORBIDDEN_IN_RELEASE:
        assert marker not in text, f"release of {assignment} contains {marker!r}"
    leaked = secret_lines(assignment) & notebook_lines(nb)
    assert not leaked, f"release of {assignment} shows instructor-only lines: {sorted(leaked)}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_has_no_outputs(assignment):
    for cell in notebooks.read(generated("release", assignment)).cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solutions_show_no_hidden_test(assignment):
    nb = notebooks.read(generated("solutions", assignment))
    hidden = {
        line.strip()
        for cell in source_notebook(assignment).cells
        for block in HIDDEN_BLOCK.findall(cell.source)
        for line in block.splitlines()
        if len(line.strip()) >= 12
    }
    assert "HIDDEN TESTS" not in nbformat.writes(nb)
    public = notebook_lines(
        release.solution_notebook(paths.source_lab(assignment))
    )
    assert not (hidden - public) & notebook_lines(nb)


def ignores_output(cell):
    """True for a cell tagged ``nbval-ignore-output``: nbval runs it but compares no output."""
    return "nbval-ignore-output" in cell.metadata.get("tags", [])


def host_independent(nb):
    """Notebook JSON without what may differ between hosts.

    Image data is blanked (pixels differ between font installations), and so are the outputs of
    cells tagged ``nbval-ignore-output``: they print training, which differs between CPUs, and
    assert their claims instead.
    """
    nb = notebooks.read_copy(nb)
    for cell in nb.cells:
        if ignores_output(cell):
            cell.outputs = []
        for output in cell.get("outputs", []):
            for key in list(output.get("data", {})):
                if key.startswith("image/"):
                    output["data"][key] = "<image>"
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    """release/ and solutions/ rebuilt from source/ in a scratch course directory."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy(paths.CONFIG, root / "nbgrader_config.py")
    shutil.copytree(paths.SOURCE, root / "source")
    release.build(root)
    return root


def relative_files(folder):
    """Files under a folder, relative to it."""
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow  # nbgrader rebuilds release/ and solutions/, running every solution
@pytest.mark.parametrize("folder", ["release", "solutions"])
def test_generated_folder_is_fresh(folder, regenerated):
    fresh, committed = regenerated / folder, paths.ROOT / folder
    assert relative_files(fresh) == relative_files(committed), "run `make release` and commit"
    for name in relative_files(fresh):
        if folder == "release":
            new, old = ((side / name).read_bytes().decode() for side in (fresh, committed))
        else:
            new = host_independent(notebooks.read(fresh / name))
            old = host_independent(notebooks.read(committed / name))
        changed = "".join(itertools.islice(difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), "committed", "fresh"
        ), 40))
        assert not changed, f"{folder}/{name} is stale: run `make release` and commit\n{changed}"


def test_freshness_ignores_only_what_differs_between_hosts():
    committed = notebooks.read(generated("solutions", "10_tiny_gpt"))
    trained, checked = notebooks.read_copy(committed), notebooks.read_copy(committed)

    def printing(nb, tagged):
        """The cells of nb with outputs, tagged nbval-ignore-output or not."""
        return [cell for cell in nb.cells if cell.get("outputs") and ignores_output(cell) == tagged]

    printing(trained, True)[0].outputs[0].text = "training loss every 50 steps: 4.31 2.66\n"
    printing(checked, False)[0].outputs[0].text = "Visible tests failed.\n"
    assert host_independent(trained) == host_independent(committed)
    assert host_independent(checked) != host_independent(committed)


@pytest.mark.parametrize(
    "path",
    paths.lecture_notebooks() + sorted(paths.SOLUTIONS.rglob("*.ipynb")),
    ids=lambda p: p.name,
)
def test_notebook_is_seeded_single_threaded_and_executed(path):
    nb = notebooks.read(path)
    code = [cell for cell in nb.cells if cell.cell_type == "code" and cell.source.strip()]
    setup = next(cell.source for cell in code if "import torch" in cell.source)
    assert "torch.set_num_threads(1)" in setup and "torch.manual_seed(" in setup
    unexecuted = [cell.source[:60] for cell in code if cell.execution_count is None]
    assert not unexecuted, f"{path.name} has cells without stored outputs: {unexecuted}"


TIMING = re.compile(r"seconds|time")
CLAIM_CHECK = re.compile(r"^(assert |check_\w+\()", re.MULTILINE)  # a lab test checks too


@pytest.mark.parametrize(
    "path",
    paths.lecture_notebooks() + sorted(paths.SOLUTIONS.rglob("*.ipynb")),
    ids=lambda p: p.name,
)
def test_only_timings_and_checked_figures_escape_nbval(path):
    # nbval compares every other stored output under each CPU code path. A cell may skip the
    # comparison when it prints timings, or figures from training whose last digit can move
    # between CPUs: then it must assert what the text claims of them (a lab's test cell: check
    # them with utils.grading), which nbval still runs.
    ignored = [cell.source for cell in notebooks.read(path).cells if ignores_output(cell)]
    unchecked = [source[:60] for source in ignored
                 if not TIMING.search(source) and not CLAIM_CHECK.search(source)]
    assert not unchecked, f"{path.name}: nbval-ignore-output where nothing is checked: {unchecked}"


PREDICTION = "**Predict, then run.**"
MIN_PREDICTIONS = 2
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def relative_links(text):
    """Targets of the Markdown links in `text` that point into the course (not to the web)."""
    return [target for target in LINK.findall(text) if "://" not in target]


@pytest.mark.parametrize("path", paths.lecture_notebooks(), ids=lambda p: p.name)
def test_lecture_asks_for_predictions_before_its_cells(path):
    # "Predict, then run": the question, then the answer folded away, then the cell that shows it.
    cells = notebooks.read(path).cells
    asked = [n for n, cell in enumerate(cells) if cell.cell_type == "markdown"
             and PREDICTION in cell.source]
    assert len(asked) >= MIN_PREDICTIONS, f"{path.name} asks for {len(asked)} predictions"
    for n in asked:
        folded = re.search(r"<details>\s*<summary>.+?</summary>.+?</details>", cells[n].source,
                           re.DOTALL)
        assert folded, f"{path.name} cell {n}: put the answer in a <details> block"
        assert n + 1 < len(cells) and cells[n + 1].cell_type == "code", (
            f"{path.name} cell {n}: a prediction comes right before the cell that answers it"
        )


@pytest.mark.parametrize("path", paths.lecture_notebooks(), ids=lambda p: p.name)
def test_lecture_links_the_notation_and_ends_with_next(path):
    cells = notebooks.read(path).cells
    assert paths.NOTATION in relative_links(cells[0].source), (
        f"{path.name}: the first cell links the notation page {paths.NOTATION}"
    )
    last = cells[-1]
    assert last.cell_type == "markdown" and "**Next:**" in last.source, (
        f"{path.name} ends with a **Next:** cell"
    )
    lab = f"../release/{path.stem}/{paths.lab_filename(path.stem)}"
    assert lab in relative_links(last.source), f"{path.name}: Next links its lab {lab}"


# A control only where a static figure cannot teach: these lectures answer with static figures.
WITHOUT_CONTROL = {"06_seq2seq_attention.ipynb", "11_encoder_decoder.ipynb"}


@pytest.mark.parametrize("path", paths.lecture_notebooks(), ids=lambda p: p.name)
def test_lecture_has_a_control_stored_at_its_starting_value(path):
    # A control's cell keeps its figure and readout as ordinary outputs, and no widget id.
    cells = [cell for cell in notebooks.read(path).cells if cell.cell_type == "code"]
    controls = [cell for cell in cells if "interactive.show(" in cell.source]
    if path.name in WITHOUT_CONTROL:
        assert not controls, f"{path.name} answers with static figures, not a control"
        return
    assert controls, f"{path.name} has no control (utils.interactive.show)"
    for cell in controls:
        data = [output.get("data", {}) for output in cell.outputs]
        kinds = [next(iter(sorted(d)), "stream") for d in data]
        assert any("image/png" in d for d in data), f"{path.name}: no stored figure: {kinds}"
        texts = [d.get("text/plain", "") for d in data]
        assert any(text.startswith("Controls: ") for text in texts), texts
    stored = nbformat.writes(notebooks.read(path))
    assert notebooks.WIDGET_VIEW not in stored, f"{path.name} stores a widget view"


@pytest.mark.parametrize(
    "path", paths.lecture_notebooks() + [paths.NOTEBOOKS / paths.NOTATION], ids=lambda p: p.name
)
def test_links_between_notebooks_resolve(path):
    text = "\n".join(cell.source for cell in notebooks.read(path).cells
                     if cell.cell_type == "markdown")
    broken = [t for t in relative_links(text) if not (path.parent / t).resolve().exists()]
    assert not broken, f"{path.name} links to missing files: {broken}"


UNGUARDED_COMPARISONS = [
    "torch.allclose",
    "torch.equal",
    "assert_close",
    "np.allclose",
    "numpy.allclose",
    "np.testing",
    "torch.isclose",
]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cells_compare_only_through_the_grading_checks(assignment):
    # A student's cell can replace torch.allclose and friends; utils.grading cannot be fooled.
    for cell in source_notebook(assignment).cells:
        if notebooks.is_test(cell):
            grade_id = notebooks.nbgrader_meta(cell)["grade_id"]
            for comparison in UNGUARDED_COMPARISONS:
                assert comparison not in cell.source, f"{assignment}/{grade_id} uses {comparison}"


# The smallest tolerances of a closeness check: what a correct float32 computation still meets,
# so that a test never asks for a precision (float64 arithmetic, say) the exercise does not state.
FLOAT32_TOLERANCES = {"atol": 1e-6, "rtol": 1e-5}


def tolerances(source):
    """(keyword, value) of every constant atol or rtol given to a check in `source`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg in FLOAT32_TOLERANCES and isinstance(keyword.value, ast.Constant):
                    yield keyword.arg, keyword.value.value


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cells_ask_for_no_precision_beyond_float32(assignment):
    for cell in source_notebook(assignment).cells:
        if notebooks.is_test(cell):
            grade_id = notebooks.nbgrader_meta(cell)["grade_id"]
            for name, value in tolerances(cell.source):
                assert value >= FLOAT32_TOLERANCES[name], f"{assignment}/{grade_id}: {name}={value}"


# The answer stays in the lab: lines of a solution that are long enough to be the answer
MIN_ANSWER_LINE = 25
LECTURE_SHARE = 0.25


def answer_lines(text):
    """The stripped lines of code in `text` long enough to give an answer away (no comments)."""
    lines = (line.strip() for line in text.splitlines())
    return {line for line in lines if len(line) >= MIN_ANSWER_LINE and not line.startswith("#")}


# Exercises whose specification is a model of utils/: the tests copy its weights into the
# student's, so its lines are the public reference by design. Lab 10's GPT is utils.gpt.TinyGPT
# rebuilt from the student's own parts of labs 07-09, and trained by the student's own loop.
REBUILDS_UTILS = {"10_tiny_gpt": {"gpt", "train"}}


def solution_lines(assignment, skip=()):
    """The answer lines of a lab's solution cells, but those of the cells named in `skip`."""
    found = set()
    for cell in source_notebook(assignment).cells:
        meta = notebooks.nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("solution") and meta["grade_id"] not in skip:
            found |= answer_lines(cell.source)
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_solution_line_is_in_utils(assignment):
    utils = answer_lines("\n".join(p.read_text() for p in (paths.ROOT / "utils").glob("*.py")))
    shared = sorted(solution_lines(assignment, REBUILDS_UTILS.get(assignment, ())) & utils)
    assert not shared, f"{assignment}: utils/ holds lines of the solution: {shared}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_lectures_show_the_idea_not_the_labs_lines(assignment):
    lectures = [p for p in paths.lecture_notebooks() if p.name[:2] <= assignment[:2]]
    shown = answer_lines(
        "\n".join(
            cell.source
            for path in lectures
            for cell in notebooks.read(path).cells
            if cell.cell_type == "code"
        )
    )
    solution = solution_lines(assignment)
    shared = sorted(solution & shown)
    assert len(shared) <= LECTURE_SHARE * len(solution), (
        f"{assignment}: {len(shared)} of {len(solution)} solution lines are in its lecture or an "
        f"earlier one: {shared}"
    )


# ... and in substance: an exercise that a lecture shows with other names, or one lecture cell in a
# wrapper of checks and conversions, is a copy.
SUBSTANCE_LIMIT = 0.5  # an exercise half of whose code one lecture cell shows restates it
WARM_UP_POINTS = 2
# Exercises that a lecture still shows, with their share when they were listed. Each is to ask for
# more than its lecture (the general, offset or streaming form) and then leave this set: the test
# fails for an exercise listed here that no longer restates a lecture.
KNOWN_RESTATEMENTS = {
}


def lecture_code_units(assignment):
    """Token units of the code cells of a lab's lecture and every earlier one."""
    return [
        unit
        for path in paths.lecture_notebooks()
        if path.name[:2] <= assignment[:2]
        for unit in notebook_units(notebooks.read(path).cells, path.name[:2])
    ]


def lab_code_units(assignment):
    """Token units of the code cells a student sees in a lab: its released notebook."""
    return notebook_units(notebooks.read(generated("release", assignment)).cells, "lab")


def exercise_shares(assignment, shown):
    """{grade_id: (share, [(function, share, where)], points)} of the exercises against `shown`.

    An exercise is a solution cell and the test cells that follow it, up to the next one.
    """
    shares, current = {}, None
    for cell in source_notebook(assignment).cells:
        meta = notebooks.nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("solution"):
            functions = [unit for unit in function_units(cell.source) if unit[0] != "__init__"]
            current = meta["grade_id"] if functions else None  # __init__ only declares layers
            if current:
                shares[current] = [*exercise_share(functions, shown), 0]
        elif current and notebooks.is_test(cell):
            shares[current][2] += meta.get("points", 0)
    return shares


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_lectures_show_the_idea_not_the_labs_substance(assignment):
    # An exercise asks for more than its lecture shows (the general, batched, causal or
    # streaming form): less than half of its code is in any one lecture cell, whatever the names,
    # the spelling and the checks around it. A lab may open with one warm-up worth at most
    # WARM_UP_POINTS that restates its lecture; the points go where the thinking is.
    copies, rewritten = [], []
    shares = exercise_shares(assignment, lecture_code_units(assignment))
    for grade_id, (share, found, points), warm_up in graded_exercises(shares):
        known = (assignment, grade_id) in KNOWN_RESTATEMENTS
        if share >= SUBSTANCE_LIMIT and not known and not warm_up:
            copies.append(shown_where(grade_id, share, found, points, "lecture "))
        if share < SUBSTANCE_LIMIT and known:
            rewritten.append(f"{grade_id} ({share:.0%})")
    assert not copies, f"{assignment}: exercises that a lecture already shows: {copies}"
    assert not rewritten, (
        f"{assignment}: no longer restates a lecture, remove from KNOWN_RESTATEMENTS: {rewritten}"
    )


def graded_exercises(shares):
    """(grade_id, (share, found, points), warm_up) of each exercise; a warm-up opens a lab."""
    for index, (grade_id, measured) in enumerate(shares.items()):
        yield grade_id, measured, index == 0 and measured[2] <= WARM_UP_POINTS


def shown_where(grade_id, share, found, points, prefix):
    """One exercise's share and the cells that show each of its functions, for a message."""
    where = ", ".join(f"{name} {part:.0%} in {prefix}{cell}" for name, part, cell in found)
    return f"{grade_id} ({points} points, {share:.0%}: {where})"


# ... nor does the lab itself: no cell a student sees (a helper, a reference, an example or a
# visible test, as released) holds half of an exercise's code. A reference that follows the
# answer lives in a hidden test; visible tests compare with numbers worked out once, or with the
# course's own models. The limit is the lecture measure's; beyond their warm-ups the labs stay
# below 45%, while a visible reference of the answer gives 50% to 80% and more.
LAB_SUBSTANCE_LIMIT = 0.5


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_labs_show_no_exercise_s_substance(assignment):
    shares = exercise_shares(assignment, lab_code_units(assignment))
    copies = [
        shown_where(grade_id, share, found, points, "")
        for grade_id, (share, found, points), warm_up in graded_exercises(shares)
        if share >= LAB_SUBSTANCE_LIMIT and not warm_up
    ]
    assert not copies, f"{assignment}: exercises that a visible cell of the lab shows: {copies}"


MAX_VISIBLE_TEST_LINES = 25


def graded_test_cells(assignment):
    """(grade_id, source) of every test cell of a lab, in order."""
    return [
        (notebooks.nbgrader_meta(cell)["grade_id"], cell.source)
        for cell in source_notebook(assignment).cells
        if notebooks.is_test(cell)
    ]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_visible_test_cells_are_short(assignment):
    # A visible test reads as a list of checks: inputs, references and helper models live in
    # locked cells above it.
    for grade_id, source in graded_test_cells(assignment):
        visible = source.split("### BEGIN HIDDEN TESTS")[0]
        lines = len(visible.splitlines())
        assert lines <= MAX_VISIBLE_TEST_LINES, (
            f"{assignment}/{grade_id} has {lines} visible lines (at most "
            f"{MAX_VISIBLE_TEST_LINES}): move inputs and helpers into a locked cell"
        )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cells_use_no_name_from_another_test_cell(assignment):
    # Each test cell stands alone: a helper it needs is defined in a locked (or solution) cell,
    # never in an earlier test cell that may have failed or been skipped.
    cells = [cell for cell in source_notebook(assignment).cells if cell.cell_type == "code"]
    elsewhere = set().union(
        *(bound_names(cell.source) for cell in cells if not notebooks.is_test(cell))
    )
    earlier = {}  # name -> grade_id of the first test cell that binds it
    for cell in cells:
        if not notebooks.is_test(cell):
            continue
        grade_id = notebooks.nbgrader_meta(cell)["grade_id"]
        borrowed = sorted(
            f"{name} (from {earlier[name]})"
            for name in free_names(cell.source) - elsewhere
            if name in earlier
        )
        assert not borrowed, f"{assignment}/{grade_id} uses names of other test cells: {borrowed}"
        for name in bound_names(cell.source):
            earlier.setdefault(name, grade_id)


def test_readme_and_package_docstring_list_every_utils_module():
    import utils

    modules = {p.stem for p in (paths.ROOT / "utils").glob("*.py")} - {"__init__"}
    layout = (paths.ROOT / "README.md").read_text().split("## Layout", 1)[1].split("```")[1]
    block = re.search(r"^utils/.*?(?=^\S)", layout, re.MULTILINE | re.DOTALL).group(0)
    listed = set(re.findall(r"^ {15}(\w+(?:, \w+)?)\s", block, re.MULTILINE))
    in_readme = {name for entry in listed for name in entry.split(", ")}
    assert modules == in_readme, f"README lists {sorted(in_readme)}, utils has {sorted(modules)}"
    missing = [name for name in modules if name not in utils.__doc__]
    assert not missing, f"utils/__init__.py does not name {missing}"
