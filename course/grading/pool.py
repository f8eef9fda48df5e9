"""Autograde a class on several cores: worker processes that each grade one submission at a time.

Each worker (`python -m course.grading.pool ASSIGNMENT [NBGRADER_OPTION...]`, the end of this
file) is a long-lived nbgrader; the pool hands the next student to whichever worker is free, so
a slow, hanging or crashing submission holds up only its own worker. The workers share one
kernel zygote (`course.grading.kernels.zygote`), started with them, which forks every worker's
sandboxed kernels (unsandboxed ones when the workers' command line says
``--ForkingExecute.sandbox=False``). A worker that dies, or takes longer than the limit on one
submission, is killed and replaced (the zygote kills the kernels forked for it); that submission
is reported not graded and its unfinished folder is graded again by the next run
(`instructor.discard_unfinished`).

`grade_class` grades a list of students on one machine. `grade_queue` takes them instead from
the work queue of a PostgreSQL gradebook (`course.grading.queue`), which graders on other
machines share: it claims a submission whenever a worker is free, renews its leases while it
grades, records each outcome, and ends when the queue has nothing waiting or being graded.

`prepare_machine` asks, once before grading, whether this machine can sandbox the kernels and
how each sandbox is bounded (a `Machine`).
"""

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass

from course.coursedir.nbgrader_run import nbgrader_environment
from course.grading.kernels import cgroups, linux, probe, socket_folder, zygote
from course.grading.queue import Claim

# A submission still being graded after this long is stopped, and reported not graded. Every wait
# on its kernel already has a deadline (`course.grading.remote.client.Deadline`: 125 s at most
# with the course's 30 s limit): this catches a grader stuck outside them, and a kernel that
# keeps nearly each of many tests waiting up to its limit.
SUBMISSION_LIMIT_SECONDS = 1200
POLL_SECONDS = 0.5
LOG_TAIL_LINES = 5
CANNOT_SANDBOX, NO_CONTROL_GROUP = "cannot sandbox", "no control group"  # a Machine's refusals


@dataclass(frozen=True)
class Outcome:
    """What grading one student's submission gave: nbgrader's success, its log and its error."""

    student: str
    success: bool
    log: str = ""
    error: str = ""


@dataclass(frozen=True)
class Machine:
    """Whether this machine may grade: what stops it ("" if nothing), why, and the limits line."""

    refusal: str  # "", CANNOT_SANDBOX or NO_CONTROL_GROUP
    reason: str
    limits: str  # the autograde summary's line: how each sandbox is bounded here

    @property
    def ok(self):
        """True when nothing stops sandboxed grading here."""
        return not self.refusal


def prepare_machine(per_process_limits=False):
    """Probe once whether kernels can be sandboxed here, and how each is bounded: a Machine.

    Where no control group can bound a sandbox as a whole it refuses, unless
    `per_process_limits` accepts per-process limits alone.
    """
    available, reason = probe.probe()
    if not available:
        return Machine(CANNOT_SANDBOX, reason, "")
    mode = cgroups.mode()
    if mode.kind == cgroups.RLIMITS and not per_process_limits:
        return Machine(NO_CONTROL_GROUP, mode.reason, mode.describe())
    return Machine("", "", mode.describe())


def sandbox_limits():
    """The autograde summary's line: how each sandbox is bounded here (probed once a process)."""
    return cgroups.mode().describe()


def default_jobs():
    """One worker per core this process may run on."""
    return len(os.sched_getaffinity(0))


def checked_jobs(jobs):
    """`jobs` as a positive number of workers (None: one per core); ValueError otherwise."""
    if jobs is None:
        return default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive whole number of workers, got {jobs!r}")
    return jobs


def worker_command(assignment, sandboxed=True):
    """The command of a worker: the lab, then nbgrader options, as on nbgrader's command line."""
    options = [] if sandboxed else ["--ForkingExecute.sandbox=False"]
    return [sys.executable, "-m", "course.grading.pool", assignment, *options]


class Worker:
    """One `course.grading.pool` process and the student it is grading, if any."""

    def __init__(self, command, root, environment):
        self.log = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            cwd=root,
            env={**nbgrader_environment(), **environment},
            start_new_session=True,  # its own process group: stopped whole
        )
        self.student = None
        self.started = 0.0

    def give(self, student):
        """Start grading `student` (a worker that has died answers with end of file)."""
        self.student, self.started = student, time.monotonic()
        try:
            self.process.stdin.write(student + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass

    def receive(self):
        """The outcome the worker sent for its student, or None if it died instead."""
        line = self.process.stdout.readline()
        if not line:
            return None
        answer = json.loads(line)
        self.student = None
        return Outcome(answer["student"], answer["success"], answer["log"], answer["error"])

    def overdue(self, limit):
        """True when the current student has been graded for longer than `limit` seconds."""
        return self.student is not None and time.monotonic() - self.started > limit

    def failure(self, reason):
        """The outcome of the current student when the worker is stopped for `reason`."""
        self.log.seek(0)
        tail = self.log.read().splitlines()[-LOG_TAIL_LINES:]
        lines = [f"[ERROR] {self.student}: {reason}", *(f"[ERROR]   {line}" for line in tail)]
        return Outcome(self.student, False, "\n".join(lines), reason)

    def stop(self):
        """Kill the worker (the zygote then kills its kernels)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.log):
            try:
                stream.close()
            except OSError:  # the pipe to a killed worker may refuse its last flush
                pass


class Progress:
    """A one-line progress report (done/total, failures, time left) on a terminal only.

    The time left is counted down to an end estimated, each time a submission is done, from the
    pace of those done so far: between two of them it falls, never rises.
    """

    def __init__(self, label, total, stream=None):
        self.label, self.total, self.stream = label, total, stream
        self.start = time.monotonic()
        self.shown = stream is not None and stream.isatty()
        self.done, self.end = 0, None

    def line(self, done, failed):
        """The progress line for `done` submissions, `failed` of them not graded."""
        now = time.monotonic()
        if done and done != self.done:
            self.done, self.end = done, self.start + (now - self.start) / done * self.total
        if self.end is None:
            estimate = "time left not known yet"
        else:
            left = max(0, round(self.end - now))
            estimate = f"about {left // 60}:{left % 60:02d} left"
        return f"{self.label}: {done}/{self.total} graded, {failed} failed, {estimate}"

    def update(self, done, failed):
        """Redraw the line."""
        if self.shown:
            self.stream.write("\r\033[K" + self.line(done, failed))
            self.stream.flush()

    def close(self):
        """Erase the line, so that what is printed next starts clean."""
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def grade_class(
    assignment,
    students,
    root,
    jobs=None,
    limit=SUBMISSION_LIMIT_SECONDS,
    progress=None,
    sandboxed=True,
):
    """Autograde `students` on `jobs` workers (None: every core); return {student: Outcome}.

    Each student's kernel runs in a sandbox of its own unless `sandboxed` is False.
    """
    if not students:
        return {}
    jobs = min(checked_jobs(jobs), len(students))
    progress = progress or Progress(assignment, len(students))
    return grade_queue(
        assignment, ClassList(students), root, jobs, progress, sandboxed, limit=limit
    )


class ClassList:
    """One machine's class, handed out in order: `grade_queue`'s queue where none is shared."""

    def __init__(self, students):
        self.waiting, self.held = deque(students), set()

    def claim(self):
        """The next student, or None."""
        if not self.waiting:
            return None
        student = self.waiting.popleft()
        self.held.add(student)
        return Claim(student, regrade=False)

    def record(self, student, graded, error=""):
        """The student's grading has ended."""
        self.held.discard(student)

    def unfinished(self):
        """How many students are waiting or being graded."""
        return len(self.waiting) + len(self.held)

    def renew_due(self):
        """False: nobody else could take a student over."""
        return False

    def give_back(self, students):
        """Nothing to give back: nobody else grades this class."""


def grade_queue(assignment, queue, root, jobs=None, progress=None, sandboxed=True, **options):
    """Grade the submissions `queue` hands this grader on `jobs` workers; {student: Outcome}.

    `queue` is the shared one of a PostgreSQL gradebook (`course.grading.queue.Queue`) or one
    machine's `ClassList`.

    Options: `limit` (seconds per submission), `prepare(claim)` (called before a claimed
    submission is graded) and `graded(student)` (True if its grade was recorded to the end).
    """
    limit = options.get("limit", SUBMISSION_LIMIT_SECONDS)
    prepare = options.get("prepare", lambda claim: None)
    graded = options.get("graded", lambda student: True)
    progress = progress or Progress(assignment, queue.unfinished())
    socket_folder.sweep_kernel_folders()  # what the kernels of a killed run left
    command = worker_command(assignment, sandboxed)
    outcomes = {}
    with zygote.shared() as environment:
        workers = [Worker(command, root, environment) for _ in range(checked_jobs(jobs))]
        setting = (command, root, environment, limit)
        try:
            while claim_for_idle(workers, queue, prepare) or queue.unfinished():
                for outcome in collect(workers, *setting):
                    outcomes[outcome.student] = outcome
                    success = outcome.success and graded(outcome.student)
                    queue.record(outcome.student, success, outcome.error)
                progress.update(len(outcomes), sum(not o.success for o in outcomes.values()))
                renew_leases(workers, queue, setting)
        finally:
            progress.close()
            queue.give_back([worker.student for worker in workers if worker.student])
            for worker in workers:
                worker.stop()
    return outcomes


def collect(workers, command, root, environment, limit):
    """Wait a moment for answers; replace workers that died or overran. The outcomes received."""
    busy = [worker.process.stdout for worker in workers if worker.student is not None]
    ready, _, _ = select.select(busy, [], [], POLL_SECONDS)
    outcomes = []
    for index, worker in enumerate(workers):
        if worker.student is None:
            continue
        outcome = worker.receive() if worker.process.stdout in ready else None
        if outcome is None and worker.process.stdout in ready:
            outcome = worker.failure(f"the grader died (exit code {worker.process.wait()})")
        elif outcome is None and worker.overdue(limit):
            outcome = worker.failure(f"grading took longer than {limit:g} s and was stopped")
        elif outcome is None:
            continue
        if worker.student is not None:
            worker.stop()
            workers[index] = Worker(command, root, environment)
        outcomes.append(outcome)
    return outcomes


def claim_for_idle(workers, queue, prepare):
    """Give each idle worker the next submission of the queue; True if any worker is busy."""
    for worker in workers:
        if worker.student is None:
            claim = queue.claim()
            if claim is None:
                break
            prepare(claim)
            worker.give(claim.student)
    return any(worker.student is not None for worker in workers)


def renew_leases(workers, queue, setting):
    """Renew the leases of the submissions being graded; stop grading those no longer held."""
    if not queue.renew_due():
        return
    lost = queue.renew([worker.student for worker in workers if worker.student])
    for index, worker in enumerate(workers):
        if worker.student in lost:  # another grader took it over: it must not be graded twice
            worker.stop()
            workers[index] = Worker(*setting[:3])


# The worker's side: one process, run from the course root, that reads student ids on stdin, one
# a line, autogrades each with nbgrader's own API (the `Autograde` converter of `nbgrader
# autograde`, configured by nbgrader_config.py) and answers each with one JSON line on stdout:
# {"student", "success", "log", "error"}. It dies with the process that started it.


def die_with_parent():
    """Ask Linux to kill this process when the process that started it ends."""
    linux.libc.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # the parent is already gone
        sys.exit(1)


def nbgrader_api(options=()):
    """nbgrader's API, configured from the current folder and `options` as `nbgrader` would be."""
    zygote.skip_slow_unused_imports()  # before nbgrader imports nbformat
    from nbgrader.apps import NbGraderAPI
    from nbgrader.apps.nbgraderapp import NbGraderApp

    from course.coursedir import gradebook_db

    app = NbGraderApp()
    app.initialize(list(options))
    api = NbGraderAPI(config=app.config)
    api.coursedir.db_url = gradebook_db.shared_url(api.coursedir.db_url)
    return api


def answer_channel():
    """A private copy of stdout for the answers; fd 1 then goes to stderr, so no print mixes in."""
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return channel


def grade(api, assignment, student):
    """Autograde one student's submission (kept if already graded); the answer to send back."""
    result = api.autograde(assignment, student, force=False, create=True)
    return {
        "student": student,
        "success": bool(result.get("success")),
        "log": result.get("log", ""),
        "error": result.get("error", ""),
    }


def main(argv=None):
    """A worker, `python -m course.grading.pool ASSIGNMENT [OPTION...]`: grades stdin's students."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0].startswith("-"):
        raise SystemExit("usage: python -m course.grading.pool ASSIGNMENT [NBGRADER_OPTION...]")
    assignment, *options = argv
    die_with_parent()
    channel = answer_channel()
    api = nbgrader_api(options)
    for line in sys.stdin:
        student = line.strip()
        if student:
            channel.write(json.dumps(grade(api, assignment, student)) + "\n")
            channel.flush()


if __name__ == "__main__":
    main()
