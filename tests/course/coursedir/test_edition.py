"""The student edition: no answer in it, it installs alone, and its lectures and labs run.

The edition is built once into a temporary folder. Installing it alone means into a new
environment that holds nothing of the repository: pip installs it there without its dependencies
and without downloading anything, and the packages it imports (torch, numpy, Jupyter) are read
from .venv's site-packages, after the new environment's own, never the repository's `utils`.
"""

import json
import re
import subprocess
import sys
import sysconfig
import zipfile
from os import environ
from pathlib import Path

import nbformat
import pytest
from autograded import autograded_scores
from IPython.core.inputtransformer2 import TransformerManager
from nbclient import NotebookClient

from course.coursedir import edition, notebooks, paths
from course.coursedir.scratch import autograde_scratch as run_autograde
from course.coursedir.scratch import fill, solution_cells, submit

REPOSITORY = "example-org/attention-student"
LAB = "01_softmax"
LECTURE = "01_softmax.ipynb"
FORBIDDEN_MARKERS = ("### BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "BEGIN MARK SCHEME")
SHORTEST_SOLUTION_LINE = 20  # shorter lines (`return out`) may be anyone's


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The student edition, published at REPOSITORY: (its folder, its zip)."""
    folder = tmp_path_factory.mktemp("edition") / "student"
    archive = edition.build(folder, repository=REPOSITORY, branch="main")
    return folder, archive


@pytest.fixture(scope="module")
def student_edition(built):
    """The student edition's folder."""
    return built[0]


def edition_notebooks(folder):
    """Every notebook of the edition, by its path inside it."""
    return {path.relative_to(folder).as_posix(): notebooks.read(path)
            for path in sorted(folder.rglob("*.ipynb"))}


def file_text(path):
    """A notebook's cell sources, or a text file's text, or None for a file of another kind."""
    if path.suffix == ".ipynb":
        return "\n".join(cell.source for cell in notebooks.read(path).cells)
    return path.read_text() if path.suffix in {".py", ".md", ".txt", ".toml", ""} else None


def edition_texts(folder):
    """The text of every file of the edition, by its path inside it."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    texts = {path.relative_to(folder).as_posix(): file_text(path) for path in files}
    return {name: text for name, text in texts.items() if text is not None}


def secret_and_shown(assignment):
    """The stripped lines of a lab's solutions and hidden tests, and of the rest of its source."""
    secret, shown = set(), set()
    for cell in notebooks.read(paths.source_lab(assignment)).cells:
        hidden = "".join(re.findall(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", cell.source,
                                    re.DOTALL))
        solved = "".join(re.findall(r"### BEGIN SOLUTION.*?### END SOLUTION", cell.source,
                                    re.DOTALL))
        if notebooks.is_solution(cell) and cell.cell_type == "markdown":
            solved = cell.source
        secret.update(line.strip() for line in (hidden + "\n" + solved).splitlines())
        public = notebooks.remove_hidden_tests(cell.source).replace(solved, "")
        shown.update(line.strip() for line in public.splitlines())
    return secret, shown


def answer_lines():
    """lab -> the lines of its solutions and hidden tests that the course shows nowhere else."""
    secrets, shown = {}, set()
    for assignment in paths.assignments():
        secrets[assignment], public = secret_and_shown(assignment)
        shown |= public
    for path in [*paths.lecture_notebooks(), *(paths.ROOT / "utils").glob("*.py")]:
        shown.update(line.strip() for line in file_text(path).splitlines())
    return {assignment: {line for line in secret - shown
                         if len(line) >= SHORTEST_SOLUTION_LINE and "SOLUTION" not in line}
            for assignment, secret in secrets.items()}


def test_the_edition_holds_the_lectures_labs_utils_and_a_readme_only(student_edition):
    top = {path.name for path in student_edition.iterdir()}
    assert top == {"README.md", "pyproject.toml", ".gitignore", "binder", "notebooks", "labs",
                   "utils", "jupyter-config"}
    lectures = {p.name for p in (paths.ROOT / "notebooks").glob("*.ipynb")}
    assert {p.name for p in (student_edition / "notebooks").iterdir()} == lectures
    labs = {f"{lab}/{paths.lab_filename(lab)}" for lab in paths.assignments()}
    assert {p.relative_to(student_edition / "labs").as_posix()
            for p in (student_edition / "labs").rglob("*") if p.is_file()} == labs
    assert not list(student_edition.rglob("__pycache__"))
    assert 'include = ["utils*"]' in (student_edition / "pyproject.toml").read_text()


def test_the_zip_holds_the_folder(built):
    folder, archive = built
    with zipfile.ZipFile(archive) as bundle:
        zipped = {name for name in bundle.namelist() if not name.endswith("/")}
    on_disk = {f"student/{p.relative_to(folder).as_posix()}" for p in folder.rglob("*")
               if p.is_file()}
    assert zipped == on_disk


def test_the_edition_is_the_same_bytes_when_written_again(tmp_path):
    first = edition.build(tmp_path / "first" / "student", repository=REPOSITORY)
    again = edition.build(tmp_path / "again" / "student", repository=REPOSITORY)
    assert again.read_bytes() == first.read_bytes()


def test_writing_the_edition_needs_nbformat_alone():
    heavy = ("nbclient", "nbconvert", "nbgrader", "jupyter_client", "torch", "numpy")
    check = ("import sys, course.coursedir.edition; "
             f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))")
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                            cwd=paths.ROOT, check=True)
    assert result.stdout.strip() == "[]", result.stdout


def test_no_solution_and_no_hidden_test_is_in_the_edition(student_edition):
    texts = edition_texts(student_edition)
    for name, text in texts.items():
        for marker in FORBIDDEN_MARKERS:
            assert marker not in text, f"{name} holds {marker!r}"
    given = {line.strip() for text in texts.values() for line in text.splitlines()}
    for assignment, lines in answer_lines().items():
        assert lines, f"no solution line found in {assignment}'s source"
        leaked = sorted(lines & given)
        assert not leaked, f"{assignment}'s answers are in the edition: {leaked[:3]}"


def test_no_instructor_tool_is_in_the_edition(student_edition):
    texts = edition_texts(student_edition)
    for name, text in texts.items():
        assert "course.coursedir" not in text and "nbgrader_config" not in text, name
        assert "solutions/" not in text and "source/" not in text, name
    assert json.dumps(sorted(texts)).count("release/") == 0


def test_the_edition_names_only_what_its_install_has(student_edition):
    texts = edition_texts(student_edition)
    assert "utils/validate_findings.py" not in texts  # a server extension that needs nbgrader
    readme = texts["README.md"]
    assert "Validate" not in readme and "validate" not in readme
    lectures = len(paths.lecture_notebooks())
    assert re.search(rf"\b{lectures}\s+lessons", readme)
    assert f"the lectures, 01 to {lectures:02d}," in readme
    check = "jupyter nbconvert --to notebook --execute --output-dir build labs/NN_topic/"
    assert check in readme  # a check a student can run, as the grader runs the lab


def test_the_linux_install_asks_pytorchs_index_for_torch_alone(student_edition):
    readme = (student_edition / "README.md").read_text()
    commands = [line for line in readme.splitlines() if line.startswith(".venv/bin/pip")]
    assert not [line for line in commands if "--extra-index-url" in line], commands
    from_pytorch = [line for line in commands if "download.pytorch.org" in line]
    torch = edition.torch_requirement(paths.ROOT)  # "torch>=2.13"
    assert from_pytorch == [
        f'.venv/bin/pip install --index-url https://download.pytorch.org/whl/cpu "{torch}"']
    binder = (student_edition / "binder" / "postBuild").read_text()
    assert "--extra-index-url" not in binder
    assert f'--index-url https://download.pytorch.org/whl/cpu "{torch}"\n' in binder


def test_each_prediction_is_left_to_run_and_every_other_output_kept(student_edition):
    for path in sorted((paths.ROOT / "notebooks").glob("*.ipynb")):
        stored = notebooks.read(path).cells
        given = notebooks.read(student_edition / "notebooks" / path.name).cells[2:]
        linked = edition.with_links_to_labs(notebooks.read(path)).cells
        assert [cell.source for cell in given] == [cell.source for cell in linked]
        predicted = {index + 1 for index, cell in enumerate(stored)
                     if cell.cell_type == "markdown" and edition.PREDICTION in cell.source}
        for index, (before, after) in enumerate(zip(stored, given, strict=True)):
            if before.cell_type != "code":
                continue
            if index in predicted:
                assert after.outputs == [] and after.execution_count is None, (path.name, index)
            else:
                assert after.outputs == before.outputs, (path.name, index)


def test_a_prediction_must_be_answered_by_a_code_cell():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"{edition.PREDICTION} What comes next?"),
        nbformat.v4.new_markdown_cell("Not code."),
    ])
    with pytest.raises(ValueError, match="expected a code cell after it"):
        edition.without_predicted_outputs(nb, "lecture.ipynb")


def test_each_notebook_opens_in_colab_from_its_own_path(student_edition):
    for name, nb in edition_notebooks(student_edition).items():
        badge, install = nb.cells[:2]
        url = f"https://colab.research.google.com/github/{REPOSITORY}/blob/main/{name}"
        assert badge.cell_type == "markdown" and f"]({url})" in badge.source, name
        assert install.cell_type == "code" and install.outputs == [], name


class Shell:
    """A stand-in for the IPython shell: its name, and the magics run through it."""

    def __init__(self, name):
        self.name, self.magics = name, []

    def __str__(self):
        return f"<{self.name} object>"

    def run_line_magic(self, magic, line):
        self.magics.append((magic, line))


def run_install_cell(source, shell):
    """Run an install cell as IPython would, in `shell`; the magics it ran."""
    code = TransformerManager().transform_cell(source)
    exec(compile(code, "<install cell>", "exec"), {"get_ipython": lambda: shell})
    return shell.magics


def test_the_install_cell_installs_utils_alone_on_colab_only(student_edition):
    lab = notebooks.read(student_edition / "labs" / LAB / paths.lab_filename(LAB))
    source = lab.cells[1].source
    assert run_install_cell(source, Shell("ipykernel.zmqshell.ZMQInteractiveShell")) == []
    ((magic, line),) = run_install_cell(source, Shell("google.colab._shell.Shell"))
    assert magic == "pip" and "--no-deps" in line.split()
    assert f"git+https://github.com/{REPOSITORY}@main" in line


def test_an_edition_without_a_repository_has_no_colab_cell(tmp_path):
    folder = tmp_path / "student"
    edition.build(folder)
    for name, text in edition_texts(folder).items():
        assert "colab" not in text.lower() and "mybinder" not in text, name
    assert "Hand in a lab" in (folder / "README.md").read_text()


def test_the_readme_names_the_repository_and_every_way_to_hand_in(student_edition):
    readme = (student_edition / "README.md").read_text()
    assert f"mybinder.org/v2/gh/{REPOSITORY}/main" in readme and "{repository}" not in readme
    for way in ("Assignments", "learning-management system", "By file to your instructor",
                "make collect", "download.pytorch.org/whl/cpu", "Python 3.11"):
        assert way in readme, way


@pytest.mark.parametrize("repository, branch", [
    ("not a repository", "main"), ("owner", "main"), ("owner/name", "a b"), ("owner/name", "..")])
def test_a_bad_repository_or_branch_is_refused(tmp_path, repository, branch):
    with pytest.raises(ValueError, match="expected"):
        edition.build(tmp_path / "student", repository=repository, branch=branch)


@pytest.fixture(scope="module")
def installed(student_edition, tmp_path_factory):
    """A new environment with the edition installed alone in it: its Python."""
    environment = tmp_path_factory.mktemp("environment") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(environment)], check=True)
    python = environment / "bin" / "python"
    own_site = subprocess.run([str(python), "-c", "import sysconfig; "
                               "print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
    # torch, Jupyter, pip and setuptools come from .venv, after this environment's own packages.
    Path(own_site, "course_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--disable-pip-version-check", str(student_edition)],
                   check=True, cwd=environment, env=plain_environment())
    return python


def plain_environment():
    """The environment of this process without the repository on PYTHONPATH."""
    return {key: value for key, value in environ.items() if key != "PYTHONPATH"}


@pytest.mark.slow  # a virtual environment of its own
def test_the_edition_installs_alone(installed, student_edition):
    check = ("import utils, utils.text, utils.grading; "
             "print(utils.__file__); print(len(utils.text.load_corpus()))")
    result = subprocess.run([str(installed), "-c", check], cwd=installed.parent, text=True,
                            capture_output=True, env=plain_environment())
    assert result.returncode == 0, result.stderr
    location, characters = result.stdout.split()
    assert Path(location).is_relative_to(installed.parents[1]), location
    assert int(characters) > 60_000
    pip_list = subprocess.run([str(installed), "-m", "pip", "list", "--path",
                               str(Path(location).parents[1])],
                              capture_output=True, text=True, env=plain_environment()).stdout
    assert "attention-step-by-step" in pip_list and "torch" not in pip_list


@pytest.mark.slow  # a virtual environment of its own
def test_the_install_brings_the_courses_jupyterlab_settings(installed):
    settings = installed.parents[1] / edition.LAB_SETTINGS_HOME / "course.json"
    assert settings.read_text() == (paths.ROOT / edition.LAB_SETTINGS).read_text()
    assert json.loads(settings.read_text())["@jupyterlab/apputils-extension:notification"] == {
        "fetchNews": "false"}


def run_in_edition(nb, folder, python, monkeypatch, tmp_path):
    """Execute `nb` in `folder` in a kernel of the new environment; the notebook, executed."""
    kernels = tmp_path / "jupyter" / "kernels" / "edition"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "the student edition", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    nb.cells.append(nbformat.v4.new_code_cell("import utils\nprint(utils.__file__)"))
    NotebookClient(nb, timeout=notebooks.CELL_TIMEOUT, kernel_name="edition",
                   extra_arguments=notebooks.KERNEL_QUIET,
                   resources={"metadata": {"path": str(folder)}}).execute()
    where = nb.cells[-1].outputs[0].text.strip()
    assert Path(where).is_relative_to(python.parents[1]), where
    return nb


@pytest.mark.slow  # a lecture, run in a kernel of that environment
def test_a_lecture_runs_in_the_edition(installed, student_edition, monkeypatch, tmp_path):
    folder = student_edition / "notebooks"
    nb = run_in_edition(notebooks.read(folder / LECTURE), folder, installed, monkeypatch, tmp_path)
    assert not [output for cell in nb.cells for output in cell.get("outputs", [])
                if output.output_type == "error"]


def filled_edition_lab(student_edition):
    """The edition's lab 01 with the solution written into its student cells."""
    lab = notebooks.read(student_edition / "labs" / LAB / paths.lab_filename(LAB))
    return fill(lab, solution_cells(LAB))


@pytest.mark.slow  # a lab, run in a kernel of that environment
def test_a_filled_in_lab_passes_its_tests_in_the_edition(installed, student_edition,
                                                          monkeypatch, tmp_path):
    folder = student_edition / "labs" / LAB
    nb = run_in_edition(filled_edition_lab(student_edition), folder, installed, monkeypatch,
                        tmp_path)
    assert "Error" not in notebooks.output_text(nb)


@pytest.mark.slow
def test_a_lab_handed_in_from_the_edition_gets_every_point(student_edition, lab_01_course):
    submit(lab_01_course, LAB, "ada", filled_edition_lab(student_edition))
    run_autograde(lab_01_course, LAB)
    score, maximum = autograded_scores(lab_01_course, LAB)["ada"]
    assert score == maximum
