"""The slow tier's check (tests/slow_tier.py): an unmarked test that starts a server fails."""

import os
import re
import subprocess
import sys
import textwrap

import pytest
import slow_tier

from course.coursedir import paths
from course.grading.kernels.provisioner import ForkProvisioner

STARTED = [
    (["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "kernel.json"], "a Jupyter kernel"),
    ([sys.executable, "-P", "-m", "course.grading.kernels.zygote", "16"], "a Jupyter kernel"),
    ([sys.executable, "-m", "nbgrader", "autograde", "01_softmax"], "nbgrader"),
    ([sys.executable, "-m", "course.instructor", "autograde", "01_softmax"], "nbgrader"),
    (["runuser", "-u", "postgres", "--", "/usr/lib/postgresql/15/bin/initdb", "-D", "x"],
     "PostgreSQL"),  # fmt: skip
    ([sys.executable, "-m", "jupyter", "lab", "--no-browser"], "a Jupyter server"),
    ("jupyter server --port=8888", "a Jupyter server"),
    ([paths.ROOT / ".venv" / "bin" / "jupyterhub", "-f", "config.py"], "JupyterHub"),
    (["/opt/playwright/driver/node", "/opt/playwright/driver/package/cli.js", "run-driver"],
     "Chromium"),  # fmt: skip
    (["sbatch", "--wrap", "true"], "Slurm"),
    ([sys.executable, "-m", "venv", "--without-pip", "env"], "a new Python environment"),
    ([sys.executable, "-c", "import sys\nimport torch\n"], "a new Python that imports torch"),
]
QUICK = [
    ["git", "ls-files"],
    ["/bin/true"],
    ["unshare", "-U", "-r", "true"],
    [sys.executable, "-c", "import platform; print(platform.python_version())"],
    [sys.executable, "-P", "-m", "course.grading.kernels.probe"],
    ["make", "-n", "-W", "requirements.txt", ".venv/.installed"],
    "jupyter nbconvert --to html lab.ipynb",
]


@pytest.mark.parametrize(("command", "what"), STARTED, ids=[what for _, what in STARTED])
def test_each_slow_program_is_named_by_its_command_line(command, what):
    assert slow_tier.program(command) == what


@pytest.mark.parametrize("command", QUICK, ids=str)
def test_a_quick_command_is_no_slow_program(command):
    assert slow_tier.program(command) is None


def test_the_kernels_the_zygote_forks_are_announced():
    assert type(ForkProvisioner.zygote_client).fork_kernel.announced


# A stand-in PostgreSQL (it exits at once), a test of each kind, and the run's verdicts.
TESTS = """
import subprocess, sys
import pytest

def start_postgres():
    subprocess.run([POSTGRES], check=True)

@pytest.fixture(scope="module")
def server():
    start_postgres()

def test_unmarked_starts_postgres():
    start_postgres()

@pytest.mark.slow
def test_marked_starts_postgres():
    start_postgres()

@pytest.mark.hub
def test_hub_starts_postgres():
    start_postgres()

@pytest.mark.slow
def test_marked_uses_the_server(server):
    pass

def test_unmarked_uses_the_server_started_before(server):
    pass

def test_unmarked_starts_a_quick_program():
    subprocess.run(["true"], check=True)

def test_unmarked_gets_a_kernel_from_the_zygote():
    sys.audit("course.grading.kernel_fork", [sys.executable, "-m", "ipykernel_launcher"])

@pytest.mark.skip("not run")
def test_unmarked_skipped():
    start_postgres()
"""
VERDICTS = {
    "test_unmarked_starts_postgres": "FAILED",
    "test_marked_starts_postgres": "PASSED",
    "test_hub_starts_postgres": "PASSED",
    "test_marked_uses_the_server": "PASSED",
    "test_unmarked_uses_the_server_started_before": "FAILED",
    "test_unmarked_starts_a_quick_program": "PASSED",
    "test_unmarked_gets_a_kernel_from_the_zygote": "FAILED",
    "test_unmarked_skipped": "SKIPPED",
}


def test_an_unmarked_test_that_starts_a_server_fails_and_a_marked_one_passes(tmp_path):
    postgres = tmp_path / "bin" / "postgres"
    postgres.parent.mkdir()
    postgres.write_text("#!/bin/sh\nexit 0\n")
    postgres.chmod(0o755)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["slow_tier"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n    hub: hub\n")
    code = f"POSTGRES = {str(postgres)!r}\n" + textwrap.dedent(TESTS)
    (tmp_path / "test_tiers.py").write_text(code)
    search_path = os.pathsep.join([str(paths.ROOT / "tests"), str(paths.ROOT)])
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "test_tiers.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": search_path},
    )
    verdicts = dict(re.findall(r"^test_tiers.py::(\w+) (\w+)", run.stdout, re.MULTILINE))
    assert {name: verdicts.get(name) for name in VERDICTS} == VERDICTS, run.stdout
    assert "mark it slow: it starts PostgreSQL" in run.stdout
    assert "mark it slow: it starts a Jupyter kernel" in run.stdout
