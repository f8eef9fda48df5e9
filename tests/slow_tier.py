"""The slow tier, checked: a test that starts a kernel, a browser or a server says it is slow.

A test declares what it needs: `pytestmark = pytest.mark.slow` at the top of a file whose every
test needs it, `@pytest.mark.slow` on a single test (`make quick` leaves both out). This plugin
(loaded by tests/conftest.py) notes each program a test starts, in its call and in the setup of
its fixtures (a fixture shared by several tests is charged to each of them), and fails a test
that is marked neither slow nor hub and started one of PROGRAMS, or a `python -c` that imports
torch (seconds of start-up): "mark it slow: it starts ...".

Python's audit hooks see every `subprocess.Popen` (asyncio's subprocesses too), `os.posix_spawn`,
`os.spawn*`, `os.system` and `os.exec*`. A kernel forked by the course's zygote starts no
program: the zygote client's `fork_kernel` is wrapped to raise the audit event KERNEL_FORK. An audit
hook cannot be removed: it returns at once for any other event, and when no test is running.
"""

import functools
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

KERNEL_FORK = "course.grading.kernel_fork"
TIER_MARKS = ("slow", "hub")

# What starts in seconds or holds a port: what the message calls it, its programs (any word of the
# command line, by file name) and its Python modules (`python -m MODULE`, or a module below it).
PROGRAMS = [
    (
        "a Jupyter kernel",
        set(),
        {"ipykernel", "ipykernel_launcher", "course.grading.kernels.zygote"},
    ),
    ("nbgrader", {"nbgrader"}, {"nbgrader", "course.instructor", "course.grading.pool"}),
    ("Chromium", {"chromium", "chromium-browser", "chrome", "headless_shell"}, {"playwright"}),
    ("PostgreSQL", {"postgres", "initdb", "pg_ctl", "pg_ctlcluster", "pg_createcluster"}, set()),
    (
        "JupyterHub",
        {"jupyterhub", "jupyterhub-singleuser", "configurable-http-proxy"},
        {"jupyterhub"},
    ),
    (
        "a Jupyter server",
        {"jupyter-server", "jupyter-lab", "jupyter-notebook"},
        {"jupyter_server", "jupyterlab", "notebook"},
    ),
    ("Slurm", {"slurmctld", "slurmd", "slurmdbd", "munged", "sbatch", "srun", "salloc"}, set()),
    ("a new Python environment", {"virtualenv", "pip", "pip3"}, {"venv", "virtualenv", "pip"}),
]
JUPYTER_SERVERS = {"lab", "server", "notebook", "nbclassic"}  # `jupyter lab`, `-m jupyter lab`
PYTHON = re.compile(r"python[0-9.]*")
IMPORTS_TORCH = re.compile(r"^\s*(import|from)\s+torch\b", re.MULTILINE)
# The audit events that start a program, and where each holds the command line in its arguments.
COMMAND_LINE = {"subprocess.Popen": 1, "os.posix_spawn": 1, "os.spawn": 2, "os.system": 0,
                "os.exec": 1, KERNEL_FORK: 0}  # fmt: skip


def words(argv):
    """The words of a command line (a shell string is split); each as text."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        try:
            return shlex.split(os.fsdecode(argv))
        except ValueError:
            return os.fsdecode(argv).split()
    return [os.fsdecode(word) if isinstance(word, (bytes, os.PathLike)) else str(word)
            for word in argv]  # fmt: skip


def program(argv):
    """What `argv` starts, when it is one of PROGRAMS or a Python that imports torch; else None.

    Every word counts by its file name (`runuser -u postgres -- initdb`), and `-m MODULE`.
    """
    found = words(argv)
    names = [Path(word).name for word in found]
    modules = {found[index + 1] for index, word in enumerate(found[:-1]) if word == "-m"}
    if "jupyter" in names and set(names[names.index("jupyter") + 1 :][:1]) & JUPYTER_SERVERS:
        return "a Jupyter server"
    for what, programs, python_modules in PROGRAMS:
        if programs & set(names) or any(within(module, python_modules) for module in modules):
            return what
    if any("/playwright/driver/" in word or "/ms-playwright/" in word for word in found):
        return "Chromium"  # Playwright's driver, which starts the browser
    if names and PYTHON.fullmatch(names[0]) and "-c" in found[:-1]:
        if IMPORTS_TORCH.search(found[found.index("-c") + 1]):
            return "a new Python that imports torch"
    return None


def within(module, packages):
    """True when `module` is one of `packages` or lies below one of them."""
    return any(module == package or module.startswith(package + ".") for package in packages)


class Recorder:
    """The programs started in this process while a test sets up and runs."""

    def __init__(self):
        self.pid = None  # the process of the test run (a forked child's events are its own)
        self.started = None  # (what, command) while a test sets up or runs, else None
        self.by_fixture = {}  # (fixture name, where it is defined) -> what its setup started

    def audit(self, event, args):
        """The audit hook: note a process start, or a kernel forked by the zygote."""
        if self.started is None or event not in COMMAND_LINE or os.getpid() != self.pid:
            return
        argv = args[COMMAND_LINE[event]]
        what = "a Jupyter kernel" if event == KERNEL_FORK else program(argv)
        if what is not None:
            self.started.append((what, " ".join(words(argv))[:200]))

    def begin(self):
        """Start noting programs, for a test's setup."""
        self.pid, self.started = os.getpid(), []

    def end(self):
        """Stop noting programs: what the test and its fixtures started."""
        started, self.started = self.started or [], None
        return started


RECORDER = Recorder()
sys.addaudithook(RECORDER.audit)


def announce_kernel_forks():
    """Make every kernel the zygote forks for this process raise the audit event KERNEL_FORK."""
    try:
        from course.grading.kernels.provisioner import ForkProvisioner
    except (ImportError, AttributeError):  # no grading here, or it is broken: its tests say so
        return
    client = type(ForkProvisioner.zygote_client)  # where this process's kernels come from
    fork_kernel = client.fork_kernel
    if getattr(fork_kernel, "announced", False):
        return

    @functools.wraps(fork_kernel)
    def announced(self, request):
        sys.audit(KERNEL_FORK, request.get("argv", []))
        return fork_kernel(self, request)

    announced.announced = True
    client.fork_kernel = announced


def pytest_configure(config):
    """Kernels forked by the zygote count as started programs."""
    announce_kernel_forks()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Note what a fixture's setup started: each test that uses the fixture is charged with it."""
    before = len(RECORDER.started) if RECORDER.started is not None else None
    yield
    if before is not None:
        key = fixturedef.argname, fixturedef.baseid
        started = RECORDER.started[before:]
        if started:
            RECORDER.by_fixture[key] = started
        else:
            RECORDER.by_fixture.pop(key, None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    """Note what the test's fixtures start."""
    RECORDER.begin()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Fail a test that is marked neither slow nor hub and started one of PROGRAMS."""
    outcome = yield
    if call.when == "setup" and call.excinfo is None:
        return  # the test runs next: go on noting
    started = RECORDER.end() if call.when != "teardown" else []
    if call.when != "call" or any(item.get_closest_marker(mark) for mark in TIER_MARKS):
        return
    for (name, where), by_fixture in RECORDER.by_fixture.items():
        if name in item.fixturenames and visible(where, item.nodeid):
            started += by_fixture
    if started:
        fail(outcome.get_result(), started)


def visible(where, nodeid):
    """True when a fixture defined at node `where` ("" for a plugin) serves the test `nodeid`."""
    return not where or nodeid == where or nodeid.startswith((where + "/", where + "::"))


def fail(report, started):
    """Make `report` a failure that names each program the test started."""
    names = list(dict.fromkeys(what for what, _ in started))
    message = f"mark it slow: it starts {', '.join(names)} (tests/slow_tier.py):\n" + "\n".join(
        f"  {what}: {command}" for what, command in dict.fromkeys(started)
    )
    if report.failed:
        report.sections.append(("slow tier", message))
    else:
        report.outcome, report.longrepr = "failed", message
        vars(report).pop("wasxfail", None)
