"""A class graded by a real Slurm job array through the gradebook's work queue, one task killed.

Debian's Slurm (`slurmctld`, `slurmd`, `munge`; `.ci/install-system` installs them) is started in
a temporary folder on loopback: one node, this machine, with its own munge key and socket. The
course's gradebook is a real PostgreSQL (`tests/postgres_server.py`). The README's job array
(its `#SBATCH` line, with two tasks) grades a class of 40 of lab 01; each task runs the
README's one command, `make autograde ASSIGNMENT=$1`, as its recipe does (`python -m
course.instructor autograde`, on the scratch course, one worker per task on this shared host).
One task is killed with SIGKILL while it grades, as a lost node would be; its lease runs out and
the other task grades what it held. Every submission must be graded exactly once, in full.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from autograded import autograded_scores
from local_servers import free_port
from postgres_server import postgres_server

from course.coursedir import gradebook_db, notebooks, paths
from course.coursedir.nbgrader_run import nbgrader_environment
from course.coursedir.scratch import fill, solution_cells, submit
from course.grading import queue

pytestmark = pytest.mark.slow  # a Slurm cluster grades a class

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
CLASS_SIZE = 40
TASKS = 2
LEASE_SECONDS = 10  # a killed task's submission waits this long for another task
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")
NO_SLURM = "this machine has no Slurm it can start (as root, with slurmd, slurmctld, munge)"
README_SCRIPT = re.compile(r"cat > autograde\.sbatch <<'SH'\n(.*?)\nSH\n", re.S)
SLURM_CONF = """\
ClusterName=course
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={controller_port}
SlurmdPort={node_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={home}/munge.socket
StateSaveLocation={home}/state
SlurmdSpoolDir={home}/spool
SlurmctldPidFile={home}/slurmctld.pid
SlurmdPidFile={home}/slurmd.pid
SlurmctldLogFile={home}/slurmctld.log
SlurmdLogFile={home}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
KillWait=5
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=course Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


def slurm_environment(home):
    """The environment of Slurm's commands and of the jobs: this cluster's configuration."""
    return {
        **nbgrader_environment(),
        "SLURM_CONF": str(home / "slurm.conf"),
        queue.LEASE_VARIABLE: str(LEASE_SECONDS),
    }


def slurm(home, *command, **options):
    """Run one of Slurm's commands on this cluster; its standard output."""
    result = subprocess.run(
        command, env=slurm_environment(home), capture_output=True, text=True, **options
    )
    assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def start_daemons(home):
    """munged, slurmctld and slurmd, each forked into the background with its pid file."""
    key = home / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    munge_files = [f"--key-file={key}", f"--socket={home}/munge.socket"]
    munge_files += [f"--pid-file={home}/munged.pid", f"--seed-file={home}/munged.seed"]
    slurm(home, "munged", "--force", *munge_files, f"--log-file={home}/munged.log")
    slurm(home, "slurmctld", "-f", str(home / "slurm.conf"))
    slurm(home, "slurmd", "-f", str(home / "slurm.conf"), "-N", "localhost")


def wait_for_the_node(home, seconds=60):
    """Wait until the node is idle, ready for jobs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if slurm(home, "sinfo", "-h", "-o", "%t").strip() == "idle":
            return
        time.sleep(0.5)
    logs = "".join((home / name).read_text()[-2000:] for name in ("slurmctld.log", "slurmd.log"))
    pytest.fail(f"the Slurm node never became idle:\n{logs}")


def stop_daemons(home):
    """Cancel every job, then stop slurmd, slurmctld and munged by their pid files."""
    subprocess.run(["scancel", "--full", "--signal=KILL", "-u", "root"],
                   env=slurm_environment(home), capture_output=True)  # fmt: skip
    for name in ("slurmd", "slurmctld", "munged"):
        pid_file = home / f"{name}.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text())
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            wait_until_gone(pid)


def wait_until_gone(pid, seconds=30):
    """Wait for process `pid` to end; kill it if it lingers."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def cluster():
    """A Slurm cluster of one node (this machine) in a temporary folder; the folder."""
    if os.geteuid() != 0 or not all(shutil.which(name) for name in DAEMONS):
        pytest.skip(NO_SLURM)
    home = Path(tempfile.mkdtemp(prefix="slurm-"))  # short: the munge socket's path
    for folder in ("state", "spool"):
        (home / folder).mkdir()
    (home / "slurm.conf").write_text(
        SLURM_CONF.format(
            home=home, controller_port=free_port(), node_port=free_port(), cpus=2 * TASKS
        )
    )
    try:
        start_daemons(home)
        wait_for_the_node(home)
        yield home
    finally:
        stop_daemons(home)
        shutil.rmtree(home, ignore_errors=True)


def readme_job_script():
    """The README's Slurm script, with its `#SBATCH` line and its one command per node."""
    readme = (paths.ROOT / "README.md").read_text()
    found = README_SCRIPT.search(readme)
    assert found, "README.md has no `cat > autograde.sbatch <<'SH'` script"
    return found.group(1)


def job_script(root):
    """The README's script for this scratch course: its `#SBATCH` line, then its command.

    `make autograde ASSIGNMENT=$1` becomes the Makefile's recipe on the scratch course, exec'd so
    that the grader's process id is the task's, and printed first (the queue names graders so).
    """
    readme = readme_job_script()
    assert "\nmake autograde ASSIGNMENT=$1\n" in f"\n{readme}\n", readme
    sbatch_lines = [line for line in readme.splitlines() if line.startswith("#SBATCH")]
    command = f'exec {sys.executable} -m course.instructor autograde "$1" --root {root} --jobs 1'
    return "\n".join(
        ["#!/bin/bash", *sbatch_lines, f"cd {root}", 'echo "grader $(hostname):$$"', command, ""]
    )


def submit_array(cluster, root):
    """sbatch the job array of TASKS tasks over lab 01; the job id."""
    script = root / "autograde.sbatch"
    script.write_text(job_script(root))
    # One node here: the tasks share it, where the README gives each its own (--exclusive).
    output = slurm(
        cluster, "sbatch", "--parsable", f"--array=0-{TASKS - 1}", "--oversubscribe",
        f"--output={root}/task-%a.out", str(script), LAB,
    )  # fmt: skip
    return output.strip().split(";")[0]


def task_grader(root, task, seconds=120):
    """The queue's name for the grader of array task `task`, once it has started."""
    deadline = time.monotonic() + seconds
    output = root / f"task-{task}.out"
    while time.monotonic() < deadline:
        found = re.search(r"^grader (\S+)$", output.read_text(), re.M) if output.exists() else None
        if found:
            return found.group(1)
        time.sleep(0.5)
    pytest.fail(f"array task {task} never started")


def wait_to_kill(work, grader, seconds=900):
    """Wait until `grader` has graded 3 submissions and holds one; the one it holds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rows, graders = work.rows(), work.graders()
        mine = {s: rows[s][0] for s, owner in graders.items() if owner == grader}
        holding = [s for s, state in mine.items() if state == "grading"]
        if sum(state == "graded" for state in mine.values()) >= 3 and holding:
            return holding[0]
        time.sleep(0.2)
    pytest.fail(f"{grader} never graded 3 submissions while holding another")


def wait_for_the_array(cluster, job, seconds=1500):
    """Wait until no task of the array is left in Slurm's queue."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not slurm(cluster, "squeue", "-h", "-j", job).strip():
            return
        time.sleep(1)
    pytest.fail(f"the job array {job} did not end in {seconds} s")


@pytest.fixture(scope="module")
def graded_by_slurm(cluster, course_copy):
    """The class graded by the array, task 0 killed mid-way: what the test checks."""
    with postgres_server() as url:
        root = course_copy(LAB, config_lines=[f"c.CourseDirectory.db_url = {url!r}"], name="slurm")
        release = notebooks.read(root / "release" / LAB / NOTEBOOK)
        solution = fill(release, solution_cells(LAB))
        for number in range(CLASS_SIZE):
            submit(root, LAB, f"s{number:03d}", solution)
        job = submit_array(cluster, root)
        graders = [task_grader(root, task) for task in range(TASKS)]
        work = queue.Queue(url, LAB, owner="test")
        work.create()  # if no grader has yet
        try:
            held = wait_to_kill(work, graders[0])
            # The grader is the task's own process (exec'd): SIGKILL stops it with no word to
            # anyone, as a lost node would (scancel would send SIGTERM first, and the grader
            # would give its submissions back at once: tests/course/grading/test_pool.py).
            os.kill(int(graders[0].rpartition(":")[2]), signal.SIGKILL)
            wait_for_the_array(cluster, job)
            with gradebook_db.open_gradebook(root) as book:
                submissions = [s.student.id for s in book.assignment_submissions(LAB)]
            yield {
                "root": root,
                "rows": work.rows(),
                "graders": work.graders(),
                "task_graders": graders,
                "held": held,
                "submissions": submissions,
                "outputs": [(root / f"task-{t}.out").read_text() for t in range(TASKS)],
            }
        finally:
            work.close()


def test_every_submission_is_graded_exactly_once_in_full(graded_by_slurm):
    rows = graded_by_slurm["rows"]
    assert len(rows) == CLASS_SIZE
    assert {student: row[0] for student, row in rows.items() if row[0] != "graded"} == {}
    assert {student: row[2] for student, row in rows.items() if row[2] != 1} == {}
    assert sorted(graded_by_slurm["submissions"]) == sorted(rows)  # one each in the gradebook
    scores = autograded_scores(graded_by_slurm["root"], LAB)
    assert set(scores.values()) == {(8, 8)}, scores
    for student in rows:
        graded = paths.autograded(graded_by_slurm["root"], student, LAB) / NOTEBOOK
        assert notebooks.executed(graded), student


def test_the_killed_task_graded_some_and_its_submission_went_to_the_other(graded_by_slurm):
    killed, survivor = graded_by_slurm["task_graders"]
    graders, held = graded_by_slurm["graders"], graded_by_slurm["held"]
    assert 3 <= sum(owner == killed for owner in graders.values()) < CLASS_SIZE
    assert graders[held] == survivor
    assert graded_by_slurm["rows"][held][1] == 2  # claimed by the killed task, then the other
    claimed_twice = [s for s, row in graded_by_slurm["rows"].items() if row[1] != 1]
    assert claimed_twice == [held]
    assert f"{CLASS_SIZE} students graded" in graded_by_slurm["outputs"][1]
    assert "students graded" not in graded_by_slurm["outputs"][0]  # it never got to its summary
