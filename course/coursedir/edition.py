"""The student edition: what a student gets, and nothing of the instructor's.

Usage, from the repository root (``make edition``):
``python -m course.coursedir.edition [--out build/student] [--repository OWNER/NAME] [--branch B]``

It holds the lectures (notebooks/), the labs of release/ (as labs/), the `utils` package with its
corpus, a pyproject.toml that installs `utils` alone with the course's JupyterLab settings
(jupyter-config/), binder/ and a student README: no solution, no hidden test, no source/ and no
instructor tool (nor utils/validate_findings.py, which serves nbgrader's Validate on a course's
JupyterHub: the edition's install has no nbgrader). In each lecture the output of the cell that
answers a "Predict, then run." question is left out, so the student runs it to see the answer;
every other output is kept. With a repository (where the edition is published on GitHub), each
notebook opens with an "Open in Colab" badge and a first cell that installs `utils` on Colab
only. The folder is also written as a zip beside it, the same bytes from the same sources.

It needs nbformat alone (`make edition` makes a small environment for it when .venv is not set
up), and it executes nothing: the outputs are those stored in notebooks/.
"""

import argparse
import os
import re
import shutil
import tomllib
import zipfile
from pathlib import Path

import nbformat

from course.coursedir import notebooks, paths

EDITION = paths.ROOT / "build" / "student"
BINDER = paths.ROOT / "binder"
STUDENT_FILES = Path(__file__).with_name("student")
PREDICTION = "**Predict, then run.**"
LABS = "labs"
REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")
BRANCH = re.compile(r"[A-Za-z0-9._/-]+")
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
COLAB_CELL = """\
# On Colab only: install the course's package `utils` (Colab's own torch and Jupyter stay).
# pip's "you may need to restart the kernel" does not apply the first time: nothing of `utils`
# was imported yet. (Installing a newer course over it: Runtime > Restart session, then go on.)
if "google.colab" in str(get_ipython()):
    %pip install --quiet --no-deps "git+https://github.com/{repository}@{branch}"
"""
NOT_SOURCE = ("__pycache__", "*.pyc", ".ipynb_checkpoints")
IGNORED = shutil.ignore_patterns(*NOT_SOURCE)
# utils/validate_findings.py is a server extension of the course's JupyterHub (it needs nbgrader).
UTILS_IGNORED = shutil.ignore_patterns(*NOT_SOURCE, "validate_findings.py")
# JupyterLab's settings for the course (no Jupyter news pop-up over the outputs), which the
# edition's pyproject.toml installs where JupyterLab reads them, as the Makefile does for .venv.
LAB_SETTINGS = "jupyter-config/lab/settings/overrides.d/course.json"
LAB_SETTINGS_HOME = "share/jupyter/lab/settings/overrides.d"  # under the environment's prefix
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # every file of the zip: the bytes do not depend on when
STUDENT_GITIGNORE = ".venv/\n__pycache__/\n*.egg-info/\n.ipynb_checkpoints/\nbuild/\n"


def check_repository(repository, branch):
    """ValueError unless `repository` is OWNER/NAME on GitHub and `branch` a branch name."""
    if not REPOSITORY.fullmatch(repository):
        raise ValueError(f"expected the edition's repository as OWNER/NAME, got {repository!r}")
    if not BRANCH.fullmatch(branch) or ".." in branch:
        raise ValueError(f"expected a branch name such as main, got {branch!r}")


def without_predicted_outputs(nb, name="notebook"):
    """Clear, in place, the outputs of the code cell right after each "Predict, then run."."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or PREDICTION not in cell.source:
            continue
        answer = nb.cells[index + 1] if index + 1 < len(nb.cells) else None
        if answer is None or answer.cell_type != "code":
            raise ValueError(f"{name}: cell {index} asks to predict, expected a code cell after it")
        answer.outputs = []
        answer.execution_count = None
    return nb


def colab_cells(relative_path, repository, branch):
    """The badge that opens `relative_path` of the edition in Colab, and Colab's install cell."""
    url = f"https://colab.research.google.com/github/{repository}/blob/{branch}/{relative_path}"
    badge = nbformat.v4.new_markdown_cell(f"[![Open In Colab]({COLAB_BADGE})]({url})",
                                          id="colab-badge")
    install = nbformat.v4.new_code_cell(COLAB_CELL.format(repository=repository, branch=branch),
                                        id="colab-install")
    return [badge, install]


def with_links_to_labs(nb):
    """Point, in place, the lectures' links to release/ at the edition's labs/."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace("](../release/", f"](../{LABS}/")
    return nb


def write_notebook(nb, edition, relative_path, online):
    """Write a notebook of the edition, opening with Colab's cells when `online` is given."""
    if online:
        nb.cells[:0] = colab_cells(relative_path, *online)
    notebooks.write(nb, edition / relative_path)


def write_lectures(root, edition, online):
    """Copy the lectures and the notation page, each without the outputs it asks to predict."""
    for path in sorted((Path(root) / "notebooks").glob("*.ipynb")):
        nb = with_links_to_labs(without_predicted_outputs(notebooks.read(path), path.name))
        write_notebook(nb, edition, f"notebooks/{path.name}", online)


def write_labs(root, edition, online):
    """Copy each released lab into labs/<assignment>/."""
    for assignment in paths.assignments(root):
        filename = paths.lab_filename(assignment)
        released = Path(root) / "release" / assignment / filename
        if not released.exists():
            raise ValueError(f"{released}: expected the released lab; run make release first")
        write_notebook(notebooks.read(released), edition, f"{LABS}/{assignment}/{filename}", online)


def student_pyproject(root):
    """A pyproject.toml that installs `utils` alone, with the course's student dependencies."""
    project = tomllib.loads((Path(root) / "pyproject.toml").read_text())["project"]
    jupyter = project["optional-dependencies"]["jupyter"]
    return (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{project["name"]}"\nversion = "{project["version"]}"\n'
        f'description = "{project["description"]}"\n'
        f'requires-python = "{project["requires-python"]}"\n'
        f"dependencies = {toml_list(project['dependencies'])}\n\n"
        f"[project.optional-dependencies]\njupyter = {toml_list(jupyter)}\n\n"
        '[tool.setuptools.packages.find]\ninclude = ["utils*"]\n\n'
        '[tool.setuptools.package-data]\nutils = ["corpus/*.txt", "corpus/README.md"]\n\n'
        f'[tool.setuptools.data-files]\n"{LAB_SETTINGS_HOME}" = ["{LAB_SETTINGS}"]\n'
    )


def toml_list(strings):
    """A TOML array of strings, one a line."""
    return "[\n" + "".join(f'    "{text}",\n' for text in strings) + "]"


def lesson_range(root):
    """The lectures' numbers as the README gives them: "01 to 11"."""
    numbers = [path.name[:2] for path in paths.lecture_notebooks(root)]
    if not numbers:
        raise ValueError(f"{Path(root) / 'notebooks'}: expected the lectures, found none")
    return f"{numbers[0]} to {numbers[-1]}"


def torch_requirement(root):
    """The course's requirement on torch, as pyproject.toml states it: "torch>=2.13"."""
    project = tomllib.loads((Path(root) / "pyproject.toml").read_text())["project"]
    return next(need for need in project["dependencies"] if re.match(r"torch\b", need))


def student_readme(online, root=paths.ROOT):
    """The student README; its Colab and Binder section only when the edition is online."""
    text = (STUDENT_FILES / "README.md").read_text()
    for name, value in (("{lessons}", lesson_range(root)), ("{torch}", torch_requirement(root)),
                        ("{lesson_count}", str(len(paths.lecture_notebooks(root))))):
        text = text.replace(name, value)
    online_part = re.compile(r"<!-- online -->\n(.*?)<!-- /online -->\n", re.DOTALL)
    if not online:
        return online_part.sub("", text)
    repository, branch = online
    text = online_part.sub(r"\1", text)
    return text.replace("{repository}", repository).replace("{branch}", branch)


def write_zip(folder):
    """Write `folder` as folder.zip beside it: its files in order, all dated ZIP_TIME."""
    folder = Path(folder)
    archive = folder.with_name(folder.name + ".zip")
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in files:
            entry = zipfile.ZipInfo(path.relative_to(folder.parent).as_posix(), ZIP_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
            bundle.writestr(entry, path.read_bytes())
    return archive


def build(edition=EDITION, root=paths.ROOT, repository=None, branch="main", say=None):
    """Write the student edition into the new or emptied folder `edition`, and its zip beside it.

    `say(line)` is told what is written, step by step. Returns the path of the zip.
    """
    say = say or (lambda line: None)
    if repository:
        check_repository(repository, branch)
    online = (repository, branch) if repository else None
    edition = Path(edition)
    if edition.exists():
        shutil.rmtree(edition)
    edition.mkdir(parents=True)
    write_lectures(root, edition, online)
    say(f"  notebooks/  the lectures {lesson_range(root)} and the notation page, each without "
        "the outputs it asks to predict")
    write_labs(root, edition, online)
    say(f"  {LABS}/       the {len(paths.assignments(root))} labs of release/, to fill in")
    shutil.copytree(Path(root) / "utils", edition / "utils", ignore=UTILS_IGNORED)
    shutil.copytree(BINDER, edition / "binder", ignore=IGNORED)
    settings = edition / LAB_SETTINGS
    settings.parent.mkdir(parents=True)
    shutil.copy(Path(root) / LAB_SETTINGS, settings)
    (edition / "pyproject.toml").write_text(student_pyproject(root))
    (edition / "README.md").write_text(student_readme(online, root))
    (edition / ".gitignore").write_text(STUDENT_GITIGNORE)
    say("  utils/, pyproject.toml (installs utils and the course's JupyterLab settings), "
        f"binder/, README.md{' (with Colab and Binder)' if online else ''}")
    return write_zip(edition)


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=EDITION, help="the edition's folder")
    parser.add_argument("--repository", help="OWNER/NAME: where the edition is published on GitHub")
    parser.add_argument("--branch", default="main", help="the edition's branch there")
    args = parser.parse_args(argv)
    print(f"make edition: the student edition, from notebooks/ and release/ as they are stored, "
          f"into {args.out}/")
    try:
        archive = build(args.out, repository=args.repository, branch=args.branch, say=print)
    except ValueError as error:
        parser.error(str(error))
    size = archive.stat().st_size / 1e6
    print(f"student edition: {args.out}/ and {archive} ({size:.1f} MB)")


if __name__ == "__main__":
    main()
