"""The project's set-up files agree with each other."""

import re
import subprocess
import sys
import sysconfig
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from course.coursedir import paths

README = (paths.ROOT / "README.md").read_text()


def requirement_lines():
    """Non-comment lines of requirements.txt."""
    text = (paths.ROOT / "requirements.txt").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_every_requirement_is_pinned_exactly():
    for line in requirement_lines():
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][0-9A-Za-z.+]*", line), line


def test_torch_is_the_cpu_build_on_disk():
    import torch

    assert "torch==2.13.0" in requirement_lines()
    assert torch.__version__.startswith("2.13.0") and torch.version.cuda is None
    installed = {dist.metadata["Name"].lower() for dist in metadata.distributions()}
    assert not {name for name in installed if name.startswith(("nvidia-", "triton"))}


def test_the_makefile_takes_torch_from_the_cpu_index_on_linux():
    dry_run = subprocess.run(["make", "-n", "-W", "requirements.txt", ".venv/.installed"],
                             cwd=paths.ROOT, capture_output=True, text=True, check=True).stdout
    assert "--extra-index-url https://download.pytorch.org/whl/cpu \"torch==2.13.0+cpu\"" in (
        dry_run.replace("\\\n\t\t", ""))


def lock_pins():
    """requirements.lock's pins: normalised name -> version."""
    text = (paths.ROOT / "requirements.lock").read_text()
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    pins = {}
    for line in lines:
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][0-9A-Za-z.]*", line), line
        name, version = line.split("==")
        pins[canonicalize_name(name)] = version
    return pins


def test_the_lock_holds_every_pin_of_requirements():
    lock = lock_pins()
    for pin in map(Requirement, requirement_lines()):
        (version,) = (spec.version for spec in pin.specifier)
        assert lock.get(canonicalize_name(pin.name)) == version, pin


def test_the_environment_is_the_lock():
    site_packages = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    installed = {canonicalize_name(dist.metadata["Name"]): dist.version.removesuffix("+cpu")
                 for dist in metadata.distributions(path=sorted(site_packages))}
    installed.pop("pip", None)
    installed.pop(canonicalize_name(pyproject()["project"]["name"]), None)
    assert installed == lock_pins(), "run make lock after changing requirements.txt"


def test_the_makefile_installs_under_the_lock():
    dry_run = subprocess.run(["make", "-n", "-W", "requirements.txt", ".venv/.installed"],
                             cwd=paths.ROOT, capture_output=True, text=True, check=True).stdout
    assert "-r requirements.txt -c requirements.lock" in dry_run


def pyproject():
    """pyproject.toml, parsed."""
    return tomllib.loads((paths.ROOT / "pyproject.toml").read_text())


def test_pyproject_declares_every_pin_by_audience_as_a_range_it_admits():
    project = pyproject()["project"]
    declared = [Requirement(line) for line in project["dependencies"]]
    for extra in ("jupyter", "instructor", "hub", "dev"):
        declared += [Requirement(line) for line in project["optional-dependencies"][extra]]
    by_name = {requirement.name.lower(): requirement for requirement in declared}
    pins = [Requirement(line) for line in requirement_lines()]
    assert sorted(by_name) == sorted(pin.name.lower() for pin in pins)
    for pin in pins:
        (version,) = (spec.version for spec in pin.specifier)
        assert by_name[pin.name.lower()].specifier.contains(version), pin


def test_students_need_what_the_notebooks_import_with_floors_only():
    project = pyproject()["project"]
    students = [Requirement(line) for line in project["dependencies"]]
    jupyter = [Requirement(line) for line in project["optional-dependencies"]["jupyter"]]
    assert {r.name for r in students} == {"torch", "numpy", "matplotlib", "ipywidgets"}
    assert {r.name for r in jupyter} == {"jupyterlab", "notebook", "ipykernel"}
    for requirement in students + jupyter:
        assert {spec.operator for spec in requirement.specifier} == {">="}, requirement


def test_environment_yml_installs_requirements():
    text = (paths.ROOT / "environment.yml").read_text()
    pip_section = text.split("- pip:", 1)[1]
    entries = [line.strip()[2:].strip() for line in pip_section.splitlines()
               if line.strip().startswith("- ")]
    assert entries == ["--extra-index-url https://download.pytorch.org/whl/cpu",
                       "-r requirements.txt", "-c requirements.lock", "-e ."]
    assert "conda-forge" in text and "python=3.11" in text


def test_readme_starts_with_the_two_commands():
    first_block = README.split("```", 2)[1]
    assert "make lab" in first_block and "make test" in first_block
    assert README.index("make lab") < 1200


def test_ci_runs_make_test():
    assert "make test" in (paths.ROOT / ".ci" / "run").read_text()


def test_local_grading_files_are_ignored():
    ignored = (paths.ROOT / ".gitignore").read_text().split()
    for entry in [
        "gradebook.db",
        "submitted/",
        "autograded/",
        "feedback/",
        "downloaded/",
        ".venv/",
    ]:
        assert entry in ignored


def test_gradebook_is_not_committed():
    tracked = subprocess.run(["git", "ls-files"], cwd=paths.ROOT, capture_output=True, text=True)
    assert "gradebook.db" not in tracked.stdout.split()


@pytest.mark.slow  # collects the whole tree again
def test_pytest_collects_every_test_file():
    listing = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "tests"],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
    ).stdout
    collected = {line.split("::", 1)[0] for line in listing.splitlines() if "::" in line}
    on_disk = {str(p.relative_to(paths.ROOT)) for p in (paths.ROOT / "tests").rglob("test_*.py")}
    assert on_disk - collected == set(), f"pytest never collects {sorted(on_disk - collected)}"


def test_the_oldest_python_claimed_is_the_one_tested():
    claimed = pyproject()["project"]["requires-python"]
    assert claimed == ">=3.11" and "python=3.11" in (paths.ROOT / "environment.yml").read_text()
    assert "Python 3.11+" in README.split("```", 1)[0]
