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

A kernel that hangs is interrupted, one that dies is restarted with the cells that ran before,
and only the tests that needed it fail. Whatever a kernel sends, the grader refuses any part of a
message over the budget of `course.grading.remote.wire` before building it, and keeps no backlog of
what it publishes: nbclient's IOPub socket is open only while a cell runs in the kernel, and the
sockets of the grader's own link hold a few unread messages at most.
"""

import builtins
import contextlib
import io
import itertools
import os
import time

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_output

from course.coursedir.notebooks import HIDDEN_TESTS, is_test, nbgrader_meta
from course.grading.kernels.provisioner import ForkingExecute
from course.grading.preprocessors.findings import instructor_cells
from course.grading.remote import wire
from course.grading.remote.client import KernelLink, KernelTrouble, Remote, unpack_message_part
from utils.review import bound_names, free_names

BUILTIN_NAMES = frozenset(dir(builtins))
DROPPED_OUTPUT = (
    "The autograder dropped an output of this cell: one message was larger than 64 MiB.\n"
)
IOPUB_LOST = "Timeout waiting for IOPub output"  # nbclient's words
READY_SECONDS = 60  # how long a new IOPub socket of nbclient waits for the kernel: no cell limit
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
            text = source.splitlines()[line - 1].strip()
            lines.append(f"(test cell, line {line}: {text})")
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


class JudgeExecute(ForkingExecute):
    """nbgrader's Execute, with every test cell run by the grader against the student's kernel."""

    def preprocess(self, nb, resources, km=None):
        """Execute the notebook: student and locked cells in the kernel, test cells here."""
        self.trusted = instructor_cells(resources)
        self.namespace = {"__name__": "__main__"}
        self.replay = []  # (source, locked) of each cell that ran without error
        self.trusted_names = set()
        self.in_kernel = set()  # names of the in-kernel helpers the locked cells bound
        self.link = None
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
        km.session.unpack = unpack_message_part
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
        self.open_iopub()
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
            self.close_iopub()
        if not any(output.output_type == "error" for output in cell.outputs):
            self.replay.append((cell.source, locked))
        return cell

    def close_iopub(self):
        """Close nbclient's IOPub socket: between its cells, nothing the kernel sends piles up.

        (ZeroMQ also never reconnects one that dropped a message larger than 64 MiB.)
        """
        self.kc.iopub_channel.stop()
        self.kc._iopub_channel = None  # the client makes a new channel on its next use

    def open_iopub(self):
        """Give nbclient an IOPub socket, if it has none, once the kernel's messages reach it."""
        if self.kc._iopub_channel is not None:
            return
        self.kc.iopub_channel.start()
        try:
            run_sync(self.kc.wait_for_ready)(timeout=self.timeout or READY_SECONDS)
        except (RuntimeError, wire.MalformedValue) as error:  # the cell's own run tells why
            self.log.warning("The kernel did not answer before a cell: %s", error)

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
        link.deadline = time.monotonic() + self.timeout if self.timeout else None
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

    def kernel_alive(self):
        """True while the kernel process runs."""
        return run_sync(self.km.is_alive)()

    def interrupt_kernel(self):
        """Interrupt the kernel as its spec says (SIGINT: ipykernel raises KeyboardInterrupt)."""
        if self.km.has_kernel:
            run_sync(self.km.interrupt_kernel)()

    def kill_kernel(self):
        """Kill a kernel that does not respond, and see it gone; its folder stays for a restart."""
        run_sync(self.km.shutdown_kernel)(now=True, restart=True)

    def restart_kernel(self):
        """Start a fresh kernel (killing the old one) and run again the cells that ran before."""
        run_sync(self.km.restart_kernel)(now=True)
        link = self.kernel_link()
        link.connect()
        # The whole replay gets one cell's time: a kernel that dies again costs no more.
        link.deadline = time.monotonic() + (self.timeout or 60)
        for source, locked in self.replay:
            try:
                link.execute(source)
                if locked:
                    self.pin_helpers(bound_names(source))
            except KernelTrouble:
                self.log.warning("A cell failed again after the kernel restarted")
                if not self.kernel_alive():
                    run_sync(self.km.restart_kernel)(now=True)
                    link.connect()
                if time.monotonic() > link.deadline:
                    self.log.warning("The replay after a restart ran out of time")
                    break
        link.deadline = None


def close_figures():
    """Close any matplotlib figure a cell made in the grader."""
    import sys

    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
