"""Autograde verdicts decided by the grader, outside the student's kernel.

A submission is untrusted code, and whatever runs in its kernel can change anything in that
process, so no test cell runs there during autograde. The grader (this process, nbgrader's)
executes each test cell itself, with the instructor's source from the gradebook. The names that
the student's cells define are proxies here: calling one sends the arguments to the kernel, where
`course/grading/agent.py` calls the student's function and sends back the value it returned
(tensors, numbers, strings, exception types and messages; other objects stay in the kernel behind a
handle). The checks of `utils.grading` then compare those values with references computed here.
Hidden tests, their expected values and their references never enter the kernel.

The same test cell runs unchanged in the student's own kernel in JupyterLab, where the names are
the student's real functions: each test is written once. Test helpers that must run beside the
student's code (test doubles passed into it, training loops, gradient probes) are defined in
locked cells and marked with `utils.grading.in_kernel`; here they are proxies too.

A kernel that hangs is interrupted, one that dies is restarted with the cells that ran before,
and only the tests that needed it fail. Whatever a kernel sends, the grader refuses any part of a
message over the budget of `course.grading.wire` before building it, and keeps no backlog of
what it publishes: nbclient's IOPub socket is open only while a cell runs in the kernel, and the
sockets of the grader's own link hold a few unread messages at most.
"""

import builtins
import contextlib
import io
import itertools
import os
import queue
import signal
import time
import uuid
from pathlib import Path

import zmq
from jupyter_client.blocking import BlockingKernelClient
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_output

from course.build.notebooks import HIDDEN_TESTS, is_test, nbgrader_meta
from course.grading import wire
from course.grading.fastkernel import MAX_MESSAGE_BYTES, ForkingExecute, bounded_context, exited
from course.grading.findings import instructor_cells
from utils.review import bound_names, free_names

AGENT_FILE = "course_judge_agent.py"
COMM_TARGET = "course_judge"
AGENT_SOURCE = "\n".join(
    (Path(__file__).with_name(name)).read_text() for name in ("wire.py", "agent.py")
)
START_AGENT = (
    "def __start_judge():\n"
    "    namespace = {'__name__': 'course_judge_agent'}\n"
    f"    exec(compile({AGENT_SOURCE!r}, {AGENT_FILE!r}, 'exec'), namespace)\n"
    "    agent = namespace['Agent'](get_ipython().user_ns)\n"
    f"    get_ipython().kernel.comm_manager.register_target({COMM_TARGET!r}, agent.listen)\n"
    "    return agent\n"
    "__judge__ = __start_judge()\n"
    "del __start_judge\n"
)
# Exceptions the student's code raised come back as these builtins, chosen by name; any other
# type comes back as the first of these in its class hierarchy, or as Exception.
SAFE_EXCEPTIONS = {
    kind.__name__: kind
    for kind in (
        ArithmeticError,
        AssertionError,
        AttributeError,
        FloatingPointError,
        ImportError,
        IndexError,
        KeyError,
        LookupError,
        MemoryError,
        ModuleNotFoundError,
        NameError,
        NotImplementedError,
        OverflowError,
        RecursionError,
        RuntimeError,
        TypeError,
        UnboundLocalError,
        ValueError,
        ZeroDivisionError,
    )
}
IOPUB_LOST = "Timeout waiting for IOPub output"  # nbclient's words
DROPPED_OUTPUT = (
    "The autograder dropped an output of this cell: one message was larger than 64 MiB.\n"
)
REFUSED_MESSAGE = "the grader refused a message from the kernel: {}"
REFUSED_OUTPUT = "The autograder refused a message of this cell ({}): its outputs stop here.\n"
INTERRUPT_GRACE_SECONDS = 5
KILLED_WAIT_SECONDS = 5  # how long a killed kernel may take to end
POLL_SECONDS = 0.05
IOPUB_ATTEMPTS = 100
# Each socket of the grader's link holds at most this many unread messages (of up to 64 MiB):
# the kernel's replies are read as they come, and what it publishes between them is dropped.
QUEUED_MESSAGES = 4
READY_SECONDS = 60  # how long a new IOPub socket of nbclient waits for the kernel: no cell limit
MAX_REPLY_CHARACTERS = MAX_MESSAGE_BYTES
BUILTIN_NAMES = frozenset(dir(builtins))


class KernelTrouble(BaseException):
    """The kernel did not answer: it hung or died. Not an Exception, so no test can catch it."""


class MalformedReply(KernelTrouble):
    """The kernel's reply does not follow the format of `course.grading.wire`."""


class KernelLink:
    """Send requests to the agent in a student's kernel and decode its replies."""

    def __init__(self, executor):
        self.executor = executor
        self.client = None
        self.deadline = None
        self.started = False

    def connect(self):
        """Open a client on the executor's kernel and start the agent there."""
        if self.client is not None:
            self.client.stop_channels()
        # A session of its own: nbclient's client and this one must not share a socket identity.
        context = bounded_context()
        context.setsockopt(zmq.RCVHWM, QUEUED_MESSAGES)  # what it holds unread: a few messages
        self.client = BlockingKernelClient(context=context)
        self.client.load_connection_info(self.executor.km.get_connection_info(session=False))
        self.client.session.unpack = unpack_message_part
        self.client.start_channels(stdin=False, hb=False, control=False)
        self.started = False

    def ensure_agent(self):
        """Start the agent in the kernel and open a comm to it, if that is not done yet."""
        if self.client is None:
            self.connect()
        if not self.started:
            self.listen_to_iopub()
            self.execute(START_AGENT)
            self.comm_id = uuid.uuid4().hex
            opening = {"comm_id": self.comm_id, "target_name": COMM_TARGET, "data": {}}
            self.client.shell_channel.send(self.client.session.msg("comm_open", opening))
            self.started = True

    def listen_to_iopub(self):
        """Wait until this client's iopub socket gets the kernel's messages (ZMQ joins late)."""
        for _ in range(IOPUB_ATTEMPTS):
            msg_id = self.client.kernel_info()
            self.wait_for_reply(msg_id)
            try:
                while True:
                    if self.receive("iopub")["parent_header"].get("msg_id") == msg_id:
                        return
            except queue.Empty:
                continue
        raise KernelTrouble("the grader could not listen to the kernel's messages")

    def execute(self, code):
        """Run code in the kernel (silently) and return the execute reply's content."""
        msg_id = self.client.execute(code, silent=True, store_history=False)
        return self.wait_for_reply(msg_id)

    def wait_for_reply(self, msg_id, channel="shell"):
        """The content of the reply to `msg_id`, interrupting a kernel that runs out of time.

        On the shell channel the reply is the execute reply; on iopub, the agent's comm message.
        """
        interrupted_at, checked_at = None, time.monotonic()
        while True:
            now = time.monotonic()
            if now > checked_at + POLL_SECONDS:  # not on every message: a flood of output is fast
                checked_at = now
                if not self.executor.kernel_alive():
                    raise KernelTrouble("the kernel died while running your code")
            if interrupted_at is None and self.deadline is not None and now > self.deadline:
                self.executor.interrupt_kernel()
                interrupted_at = now
            if interrupted_at is not None and now > interrupted_at + INTERRUPT_GRACE_SECONDS:
                self.executor.kill_kernel()
                raise KernelTrouble("your code did not stop when it was interrupted")
            try:
                message = self.receive(channel)
            except queue.Empty:
                checked_at = now - POLL_SECONDS  # quiet for a while: check the kernel next
                continue
            parent = message["parent_header"].get("msg_id")
            if parent == msg_id and (channel == "shell" or message.get("msg_type") == "comm_msg"):
                if interrupted_at is not None:
                    raise KernelTrouble(
                        f"the tests did not finish within {self.executor.timeout} s: "
                        "does your code loop forever?"
                    )
                return message["content"]

    def receive(self, channel, timeout=POLL_SECONDS):
        """The next message on the "shell" or "iopub" channel; queue.Empty after `timeout` s.

        Whatever the kernel sends, parsing it can only fail the test that waits (MalformedReply,
        which no test catches), and each part of it is refused before it is built when it is over
        the budget of `course.grading.wire`.
        """
        get = self.client.get_shell_msg if channel == "shell" else self.client.get_iopub_msg
        try:
            message = get(timeout=timeout)
        except queue.Empty:
            raise
        except Exception as error:  # noqa: BLE001 - a signature, a header: all the kernel's doing
            raise MalformedReply(REFUSED_MESSAGE.format(f"{error!s:.200}")) from None
        if not all(isinstance(message[part], dict) for part in ("parent_header", "content")):
            raise MalformedReply(REFUSED_MESSAGE.format("its parts are not dicts"))
        return message

    def request(self, operation, target, **fields):
        """Ask the agent for one value; raise what the student's code raised."""
        self.ensure_agent()
        payload = wire.dumps({"op": operation, "target": target, **fields})
        message = self.client.session.msg(
            "comm_msg", {"comm_id": self.comm_id, "data": {"request": payload}}
        )
        self.drop_published()
        self.client.shell_channel.send(message)
        return self.decode_reply(self.wait_for_reply(message["header"]["msg_id"], "iopub"))

    def drop_published(self):
        """Read and drop what the kernel published since the last reply, so the next finds room."""
        with contextlib.suppress(queue.Empty):
            for _ in range(2 * QUEUED_MESSAGES):
                self.receive("iopub", timeout=0)

    def decode_reply(self, content):
        """The value in the agent's comm message, or the exception it describes raised here."""
        try:
            text = content["data"]["reply"]
        except (KeyError, TypeError):
            raise MalformedReply("the kernel sent no reply to the grader's request") from None
        if not isinstance(text, str) or not text.isascii() or len(text) > MAX_REPLY_CHARACTERS:
            raise MalformedReply("the kernel's reply is not ASCII text of a sensible size")
        try:
            reply = wire.loads(text)
        except (ValueError, MemoryError, RecursionError) as error:
            raise MalformedReply(f"the kernel's reply is malformed: {error}") from None
        if not isinstance(reply, dict) or len(reply) != 1 or not reply.keys() <= {"value", "error"}:
            raise MalformedReply("the kernel's reply is neither a value nor an error")
        if "error" in reply:
            raise remote_exception(reply["error"])
        try:
            return wire.decode(reply["value"], self.remote_object)
        except wire.MalformedValue as error:
            raise MalformedReply(f"the kernel's reply is malformed: {error}") from None

    def pin(self, name):
        """A handle to the object that `name` means in the kernel now, whatever it means later."""
        return self.request("pin", {"name": name})

    def remote_object(self, record):
        """A proxy for an object that stays in the kernel."""
        types = record.get("types")
        if not (type(record.get("id")) is int and isinstance(types, list) and types):
            raise wire.MalformedValue("a handle needs an integer id and its type names")
        if not all(isinstance(name, str) for name in types):
            raise wire.MalformedValue("a handle's type names must be strings")
        return Remote(self, {"id": record["id"]}, types)


def unpack_message_part(data):
    """One part of a kernel's message (as `Session.unpack`), refused when over the wire's budget."""
    return wire.loads(data if isinstance(data, str) else bytes(data).decode("utf8", "replace"))


def remote_exception(record):
    """The exception that a kernel's error record describes, as a safe builtin type."""
    if not isinstance(record, dict):
        return MalformedReply("the kernel's error record is malformed")
    kinds = record.get("types") if isinstance(record.get("types"), list) else []
    message = record.get("message") if isinstance(record.get("message"), str) else ""
    if "KeyboardInterrupt" in kinds:
        return KernelTrouble("your code was interrupted: it ran out of time")
    kind = next((SAFE_EXCEPTIONS[k] for k in kinds if k in SAFE_EXCEPTIONS), Exception)
    error = kind(message)
    shown = kinds[0] if kinds and isinstance(kinds[0], str) else "an exception"
    where = record.get("where") if isinstance(record.get("where"), str) else ""
    error.add_note(f"(your code raised {shown}" + (f" {where})" if where else ")"))
    return error


class Remote:
    """A function, class or object that lives in the student's kernel."""

    __slots__ = ("_link", "_target", "_type", "__name__")

    def __init__(self, link, target, types, name=None):
        self._link, self._target, self._type = link, target, types
        self.__name__ = name or types[0].rsplit(".", 1)[-1]

    def __call__(self, *args, **kwargs):
        """Call it in the kernel with these arguments."""
        return self._link.request(
            "call",
            self._target,
            args=wire.encode(args, handle_for),
            kwargs=wire.encode(kwargs, handle_for),
        )

    def __getattr__(self, name):
        """Read an attribute in the kernel."""
        if name.startswith("__"):
            raise AttributeError(name)
        return self._link.request("getattr", self._target, name=name)

    def __getitem__(self, key):
        """Take an item in the kernel."""
        return self._link.request("getitem", self._target, key=wire.encode(key, handle_for))

    def __len__(self):
        """Its length, computed in the kernel."""
        return self._link.request("len", self._target)

    def __iter__(self):
        """Iterate over a list of its items made in the kernel."""
        return iter(self._link.request("list", self._target))

    def __repr__(self):
        """Its repr, made in the kernel (a plain description if that fails)."""
        try:
            text = self._link.request("repr", self._target)
        except Exception:  # noqa: BLE001 - a repr that fails is still shown
            text = None
        return text if isinstance(text, str) else f"<{self._type[0]} in your kernel>"


def handle_for(obj):
    """The wire form of a proxy passed back to the kernel; other objects cannot be sent."""
    if type(obj) is Remote:
        return {"t": "handle", **obj._target}
    raise TypeError(f"a {type(obj).__name__} cannot be passed to code in the student's kernel")


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
        process = getattr(self.km.provisioner, "process", None)
        return process is not None and process.poll() is None

    def signal_kernel(self, signum):
        """Send `signum` to the kernel, if it has been started; its pid, or None."""
        pid = getattr(self.km.provisioner, "pid", None)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):  # it has just ended
                os.kill(pid, signum)
        return pid

    def interrupt_kernel(self):
        """Send the kernel SIGINT, which ipykernel turns into KeyboardInterrupt."""
        self.signal_kernel(signal.SIGINT)

    def kill_kernel(self):
        """Kill a kernel that does not respond, and see it gone."""
        pid = self.signal_kernel(signal.SIGKILL)
        if pid is not None:
            exited(pid, KILLED_WAIT_SECONDS)

    def restart_kernel(self):
        """Start a fresh kernel and run again the cells that ran before."""
        if self.kernel_alive():
            self.kill_kernel()
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
