"""Autograde verdicts decided by the grader, outside the student's kernel.

A submission is untrusted code, and whatever runs in its kernel can change anything in that
process, so no test cell runs there during autograde. The grader (this process, nbgrader's)
executes each test cell itself, with the instructor's source from the gradebook. The names that
the student's cells define are proxies here: calling one sends the arguments to the kernel, where
`course/grading/remote/agent.py` calls the student's function and sends back the value it returned
(tensors, numbers, strings, exception types and messages; other objects stay in the kernel behind a
handle). The checks of `utils.grading` then compare those values with references computed here.
Hidden tests, their expected values and their references never enter the kernel.

The same test cell runs unchanged in the student's own kernel in JupyterLab, where the names are
the student's real functions: each test is written once. Test helpers that must run beside the
student's code (test doubles passed into it, training loops, gradient probes) are defined in
locked cells and marked with `utils.grading.in_kernel`; here they are proxies too.

Every wait on the kernel has a deadline (`client.Deadline`): a test's time limit counts the CPU
time of the kernel's sandbox, with a backstop on the clock for a kernel that waits without
computing. A kernel that hangs is interrupted, then killed; one that dies or is killed is restarted
with the cells that ran before, and only the tests that needed it fail. A kernel that keeps the
grader's own requests waiting (the agent's start, a test helper's pin), or is killed MAX_KILLS
times, is asked nothing more: the cells left do not run and the tests left that need it fail.

Whatever a kernel sends, the grader refuses any part of a message over the budget of
`course.grading.remote.wire` before building it, and keeps no backlog of what it publishes:
nbclient's IOPub socket is open only while a cell runs in the kernel, and the sockets of the
grader's own link hold a few unread messages at most.
"""

import builtins
import contextlib
import io
import itertools
import os

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_output

from course.coursedir.gradebook_db import locked_cells
from course.coursedir.notebooks import HIDDEN_TESTS, is_test, nbgrader_meta
from course.grading.kernels.cpu_time import busy_seconds, kernel_cpu_seconds
from course.grading.preprocessors.execute import ForkingExecute
from course.grading.preprocessors.output_budget import MAX_OUTPUT_MESSAGE_BYTES, BudgetedOutputs
from course.grading.remote import wire
from course.grading.remote.client import (
    DEFAULT_LIMIT_SECONDS,
    Deadline,
    KernelLink,
    KernelTrouble,
    Remote,
    budgeted_session,
)
from utils.bindings import bound_names, free_names
from utils.grading import statement_at

BUILTIN_NAMES = frozenset(dir(builtins))
DROPPED_OUTPUT = (
    "The autograder dropped outputs of this cell: a message larger than "
    f"{MAX_OUTPUT_MESSAGE_BYTES // 2**20} MiB, or more than it could read in time.\n"
)
IOPUB_LOST = "Timeout waiting for IOPub output"  # nbclient's words
MAX_KILLS = 3  # a kernel killed this often (it did not stop when interrupted) is not restarted
NOT_RUN = "The autograder did not run this cell: {}.\n"
READY_POLL_SECONDS = 1  # each ask before a cell, within the deadline of the whole wait
REFUSED_OUTPUT = "The autograder refused a message of this cell ({}): its outputs stop here.\n"


def unavailable_helper(name):
    """A stand-in for an in-kernel helper the kernel could not provide."""

    def helper(*args, **kwargs):
        raise KernelTrouble(f"the test helper {name} is not available in your kernel")

    helper.__name__ = name
    return helper


def failure_output(error, filename, source, hidden):
    """The error output of a failed test: the message and hint first, then where it failed."""
    ename = type(error).__name__ if isinstance(error, Exception) else "TestError"
    evalue = str(error)
    notes = [note for note in getattr(error, "__notes__", []) if isinstance(note, str)]
    lines = [f"\x1b[0;31m{ename}\x1b[0m: {evalue}", *notes]
    if not hidden:
        line = failing_line(error, filename)
        if line:
            lines.append(f"(test cell, line {line}: {statement_at(source, line)})")
    return new_output("error", ename=ename, evalue=evalue, traceback=["\n".join(lines)])


def failing_line(error, filename):
    """The line of the test cell where the error came from, or None."""
    line = None
    traceback = error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == filename:
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    return line


class JudgeExecute(BudgetedOutputs, ForkingExecute):
    """nbgrader's Execute, with every test cell run by the grader against the student's kernel."""

    def preprocess(self, nb, resources, km=None):
        """Execute the notebook: student and locked cells in the kernel, test cells here."""
        self.trusted = locked_cells(resources)
        self.namespace = {"__name__": "__main__"}
        self.replay = []  # (source, locked) of each cell that ran without error
        self.trusted_names = set()
        self.in_kernel = set()  # names of the in-kernel helpers the locked cells bound
        self.link = None
        self.cell_deadline = None  # the deadline of the cell running in the kernel, if any
        self.kills = 0  # how often a kernel of this notebook was killed for not answering
        self.counter = itertools.count(1)
        os.environ["NBGRADER_EXECUTION"] = "autograde"  # as in the kernel, for the locked cells
        try:
            return super().preprocess(nb, resources, km)
        finally:
            if self.link is not None and self.link.client is not None:
                self.link.client.stop_channels()

    def create_kernel_manager(self):
        """The kernel manager, whose clients refuse a message over the wire's budget unbuilt."""
        km = super().create_kernel_manager()
        budgeted_session(km.session)
        return km

    def preprocess_cell(self, cell, resources, index):
        """Run one cell where it belongs."""
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, resources
        grade_id = nbgrader_meta(cell).get("grade_id")
        trusted = self.trusted.get(grade_id)
        if trusted is not None and is_test(cell):
            self.run_test(cell, trusted)
            return cell, resources
        locked = trusted is not None and cell.source == trusted
        cell = self.run_in_kernel(cell, index, locked)
        if locked:
            self.run_here(trusted, grade_id)
        return cell, resources

    def run_in_kernel(self, cell, index, locked=False):
        """Execute a cell in the kernel; restart the kernel if the cell killed it."""
        stopped = self.kernel_link().stopped
        if stopped is not None:
            cell.outputs = [new_output("stream", name="stderr", text=NOT_RUN.format(stopped))]
            return cell
        self.open_iopub()
        self.cell_deadline = self.new_deadline()
        try:
            cell = self.execute_cell(cell, index, store_history=True)
        except DeadKernelError:
            cell.outputs.append(
                new_output(
                    "error",
                    ename="KernelDied",
                    evalue="the kernel died while running this cell",
                    traceback=[
                        "The kernel died while running this cell. The autograder restarted it "
                        "and went on without this cell: the tests that need it score 0."
                    ],
                )
            )
            self.restart_kernel()
            return cell
        except CellTimeoutError as error:  # the reply came, but not the end of the outputs
            if IOPUB_LOST not in str(error):
                raise
            cell.outputs.append(new_output("stream", name="stderr", text=DROPPED_OUTPUT))
        except wire.MalformedValue as error:  # a message over budget, refused before it was built
            cell.outputs.append(
                new_output("stream", name="stderr", text=REFUSED_OUTPUT.format(error))
            )
        finally:
            self.cell_deadline = None
            self.close_iopub()
        if not any(output.output_type == "error" for output in cell.outputs):
            self.replay.append((cell.source, locked))
        return cell

    async def _async_handle_timeout(self, timeout, cell=None):
        """nbclient waited `timeout` s on the clock for a cell: interrupt the kernel only once the
        cell has used its deadline (`new_deadline`), so that a busy machine interrupts no cell."""
        if self.cell_deadline is not None and not self.cell_deadline.passed():
            return None
        return await super()._async_handle_timeout(timeout, cell)

    def close_iopub(self):
        """Close nbclient's IOPub socket: between its cells, nothing the kernel sends piles up.

        (ZeroMQ also never reconnects one that dropped a message over its size limit.)
        """
        self.kc.iopub_channel.stop()
        self.kc._iopub_channel = None  # the client makes a new channel on its next use

    def open_iopub(self):
        """Give nbclient an IOPub socket, if it has none, once the kernel's messages reach it.

        The wait has the deadline of any other (`new_deadline`), not a time on the clock.
        """
        if self.kc._iopub_channel is not None:
            return
        self.kc.iopub_channel.start()
        deadline = self.new_deadline()
        while True:
            try:
                run_sync(self.kc.wait_for_ready)(timeout=READY_POLL_SECONDS)
                return
            except RuntimeError as error:
                if self.kernel_alive() and not deadline.passed():
                    continue
                self.log.warning("The kernel did not answer before a cell: %s", error)
                if self.kernel_alive():
                    self.kill_kernel()  # it keeps the grader waiting: the cell finds it dead
                return
            except wire.MalformedValue as error:  # the cell's own run tells why
                self.log.warning("The kernel did not answer before a cell: %s", error)
                return

    def run_here(self, source, grade_id):
        """Execute a locked (instructor) cell in the grader too, for its names and helpers."""
        filename = f"<locked cell {grade_id}>"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                exec(compile(source, filename, "exec"), self.namespace)
            except BaseException as error:  # noqa: BLE001 - a helper cell may call student code
                self.log.info("Locked cell %s failed in the grader: %r", grade_id, error)
        names = bound_names(source)
        self.trusted_names.update(names)
        for name in names:
            if getattr(self.namespace.get(name), "__dict__", {}).get("__in_kernel__") is True:
                self.in_kernel.add(name)
        self.pin_helpers(names)
        close_figures()

    def pin_helpers(self, names):
        """Point each in-kernel helper among `names` at what the locked cell bound in the kernel.

        The grader keeps a handle to that object, so a student cell that binds the same name
        later, in any way, changes nothing here.
        """
        for name in sorted(self.in_kernel.intersection(names)):
            try:
                pinned = self.kernel_link().pin(name)
            except BaseException as error:  # noqa: BLE001 - the helper is then unavailable
                self.log.info("In-kernel helper %s could not be pinned: %r", name, error)
                pinned = None
            if type(pinned) is Remote:
                pinned.__name__ = name
            else:  # the kernel sent no handle (it died, or answered with data)
                pinned = unavailable_helper(name)
            self.namespace[name] = pinned

    def remote_name(self, name):
        """A proxy for a name defined in the kernel."""
        return Remote(self.kernel_link(), {"name": name}, [name], name=name)

    def kernel_link(self):
        """The link to the agent in the kernel, made on first use."""
        if self.link is None:
            self.link = KernelLink(self)
        return self.link

    def run_test(self, cell, source):
        """Execute a test cell here and write its output: the grader's verdict."""
        grade_id = nbgrader_meta(cell)["grade_id"]
        hidden = bool(HIDDEN_TESTS.search(source))
        filename = f"<test cell {grade_id}>"
        link = self.kernel_link()
        self.bind_student_names(source)
        link.deadline = self.new_deadline()
        printed = io.StringIO()
        failure = None
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(source, filename, "exec"), self.namespace)
        except BaseException as error:  # noqa: BLE001 - every failure is the test's verdict
            failure = error
            if isinstance(error, KernelTrouble) and not self.kernel_alive():
                self.restart_kernel()
        finally:
            link.deadline = None
            close_figures()
        cell.outputs = []
        if printed.getvalue():
            cell.outputs.append(new_output("stream", name="stdout", text=printed.getvalue()))
        if failure is not None:
            cell.outputs.append(failure_output(failure, filename, source, hidden))
        cell.execution_count = next(self.counter)

    def bind_student_names(self, source):
        """Make the names a test cell needs from the student's code proxies to the kernel.

        Only names that are neither builtins nor bound by a locked cell or by the test itself:
        a student's `bool`, `getattr` or `check_close` never replaces the grader's.
        """
        for name in free_names(source) - BUILTIN_NAMES - self.trusted_names:
            current = self.namespace.get(name)
            if current is None or (type(current) is Remote and current._target == {"name": name}):
                self.namespace[name] = self.remote_name(name)

    def new_deadline(self):
        """The deadline of a test, or of any other wait on the kernel: c.Execute.timeout."""
        return Deadline(self.timeout or DEFAULT_LIMIT_SECONDS, self.kernel_cpu_time, busy_seconds)

    def kernel_cpu_time(self):
        """(pid, CPU seconds) of the running kernel and its processes; None if there is none."""
        pid = getattr(self.km.provisioner, "pid", None) if self.km is not None else None
        return kernel_cpu_seconds(pid) if pid else None

    def kernel_alive(self):
        """True while the kernel process runs."""
        return run_sync(self.km.is_alive)()

    def interrupt_kernel(self):
        """Interrupt the kernel as its spec says (SIGINT: ipykernel raises KeyboardInterrupt)."""
        if self.km.has_kernel:
            run_sync(self.km.interrupt_kernel)()

    def kill_kernel(self):
        """Kill a kernel that does not respond, and see it gone; its folder stays for a restart."""
        self.kills += 1
        run_sync(self.km.shutdown_kernel)(now=True, restart=True)

    def restart_kernel(self):
        """Start a fresh kernel (killing the old one) and run again the cells that ran before.

        Not once the kernel has been stopped, or killed MAX_KILLS times: it is then asked nothing
        more.
        """
        link = self.kernel_link()
        if self.kills >= MAX_KILLS:
            link.stop(f"it was killed {self.kills} times: it did not stop when interrupted")
        if link.stopped is not None:
            return
        run_sync(self.km.restart_kernel)(now=True)
        link.connect()
        # The whole replay gets one cell's time: a kernel that dies again costs no more.
        link.deadline = self.new_deadline()
        try:
            self.replay_cells(link)
        finally:
            link.deadline = None

    def replay_cells(self, link):
        """Run again the cells that ran before, within the link's deadline."""
        for source, locked in self.replay:
            try:
                link.execute(source)
                if locked:
                    self.pin_helpers(bound_names(source))
            except KernelTrouble:
                self.log.warning("A cell failed again after the kernel restarted")
                if link.stopped is not None or link.deadline.passed():
                    self.log.warning("The replay after a restart ran out of time")
                    break
                if not self.kernel_alive():
                    run_sync(self.km.restart_kernel)(now=True)
                    link.connect()


def close_figures():
    """Close any matplotlib figure a cell made in the grader."""
    import sys

    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
