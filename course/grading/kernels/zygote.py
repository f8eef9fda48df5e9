"""The kernel zygote: a process that has imported PyTorch once and forks each grading kernel.

Autograding a submission starts a fresh kernel, and most of its cost is importing torch
(about 1 s) and ipykernel, then the modules torch loads at the first training step (0.8 s).
The zygote imports them and takes one tiny step once; each kernel is a fork of it, so each
submission still gets its own process, memory and globals (a student's changes cannot reach
another student's kernel), but the imports are already done. Each forked kernel enters an OS
sandbox of its own (`course.grading.kernels.sandbox`) before it runs any student code.

`start(channel)` runs ``python -m course.grading.kernels.zygote`` on a Unix socket:

* a *connected* socket: the zygote of one nbgrader process (`course.grading.kernels.provisioner`);
* a *listening* socket: one zygote shared by every worker of `make autograde`
  (`course.grading.pool`), each worker on a connection of its own.

A request is one JSON line, {"argv", "cwd", "env", "sandbox", "ipc_dir"}: "sandbox" (true or
false, never left out) says whether the kernel enters a sandbox, and "ipc_dir" is only where a
sandboxed kernel's sockets go. The answer is one JSON line, {"pid"} or {"error"}, sent once the
kernel has entered its sandbox. The requests of a connection are answered in order; while one
kernel enters its sandbox, the zygote serves the others (its own share of each kernel is the
fork, about 7 ms, so one zygote keeps many workers busy). The kernels forked for a connection
are killed when it closes, one still starting too, and every kernel when the zygote ends: when
its standard input (its lifeline) reaches end of file. Each sandboxed kernel gets a control
group of its own where one can be made (`course.grading.kernels.cgroups`), removed with every
process in it once the kernel has ended (a group whose killed processes are slow to end is tried
again while the zygote serves, and reported).

The workers' side is `course.grading.kernels.zygote_client`: `ZygoteClient`, one for each
grading process (the provisioner's), asks the shared zygote while it answers, then one of its own.

The zygote runs no student code, and imports nothing of nbgrader or of the grader: its memory
is every kernel's. It gets no secret of the instructor's environment.
"""

import contextlib
import gc
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
from collections import deque
from dataclasses import dataclass, field

from course.grading.kernels import cgroups, sandbox
from course.grading.kernels.policy import Limits

PRELOAD = [
    "numpy",
    "torch",
    "matplotlib",
    "ipykernel.kernelapp",
    "utils.data",
    "utils.grading",
    "utils.plots",
    "utils.training",
    # what a kernel imports as it starts (0.27 s, the debugger most of it)
    "ipykernel.ipkernel",
    "ipykernel.debugger",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.core.logger",
    "IPython.core.oinspect",
    "pdb",
    "psutil",
    "pygments.formatters.html",
    "pygments.formatters.terminal256",
    "pygments.lexers.python",
    "sqlite3",
    "stack_data",
    "tornado.platform.asyncio",
]
# The JSON-schema checker of IRIs builds ~35 parsers when it is imported (0.8 s); no notebook or
# kernel message schema uses it. Importing it is refused, so jsonschema leaves that format out.
SLOW_UNUSED_MODULES = ["rfc3987_syntax"]
MAX_REQUEST_BYTES = 1 << 20
# A kernel's group is removed within this while the zygote serves; one that outlasts it is
# retried each RETRY_SECONDS, and waited for (cgroups.REMOVE_SECONDS) as the zygote ends.
QUICK_REMOVE_SECONDS = 2
RETRY_SECONDS = 1
ADDRESS_VARIABLE = "COURSE_KERNEL_ZYGOTE"  # the socket of the zygote that workers share
STOP_SECONDS = 10


def skip_slow_unused_imports():
    """Make `import` of SLOW_UNUSED_MODULES fail fast (call before nbformat is imported)."""
    for name in SLOW_UNUSED_MODULES:
        sys.modules.setdefault(name, None)


def start(channel):
    """Start a zygote serving the Unix socket `channel` (listening or connected); its Popen."""
    # The zygote's memory is every kernel's: it gets no secret of the instructor's environment.
    environment = sandbox.sandbox_environment(os.environ, home=tempfile.gettempdir())
    environment["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # the debugger's import stays quiet
    return subprocess.Popen(
        # -P: its working folder, the shared /tmp, is not on its module path (a module planted
        # there would run as the grading user)
        [sys.executable, "-P", "-m", "course.grading.kernels.zygote", str(channel.fileno())],
        stdin=subprocess.PIPE,  # the lifeline: the zygote ends when it closes
        pass_fds=[channel.fileno()],
        cwd=tempfile.gettempdir(),
        env=environment,
        start_new_session=True,  # a terminal's Ctrl-C stops the grader, which closes the lifeline
    )


@contextlib.contextmanager
def shared():
    """Run a zygote that several workers share; yield {ADDRESS_VARIABLE: its socket's path}."""
    with tempfile.TemporaryDirectory(prefix="course-zygote-") as folder:  # mode 0700
        address = os.path.join(folder, "zygote")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
            listening.bind(address)
            listening.listen()
            process = start(listening)
        try:
            yield {ADDRESS_VARIABLE: address}
        finally:
            stop(process)


def stop(process):
    """End a zygote and its kernels: close its lifeline, then kill it if it lingers."""
    process.stdin.close()
    try:
        process.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def warm_up():
    """One tiny training step: its first run loads about 800 modules lazily (0.8 s), once here."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # no OpenMP thread pool is started before the forks
    try:
        model = torch.nn.GRU(2, 2, batch_first=True)
        optimizer = torch.optim.Adam(model.parameters())
        output, _ = model(torch.zeros(1, 2, 2))  # (1, 2, 2)
        output.sum().backward()
        optimizer.step()
    finally:
        torch.set_num_threads(threads)


@dataclass(eq=False)
class Connection:
    """A worker's connection as the zygote keeps it: its requests, the kernels starting and got."""

    socket: socket.socket
    partial: bytes = b""  # a request not yet ended by a newline
    requests: deque = field(default_factory=deque)  # complete requests not yet started
    report: int | None = None  # the pipe on which the kernel it waits for reports
    child: int | None = None  # a pidfd of that kernel's process, until it reports
    group: cgroups.Group | None = None  # that kernel's control group, until it reports
    heard: bytes = b""  # what that kernel has reported so far
    kernels: dict = field(default_factory=dict)  # {pidfd: control group} of the kernels it got


class Zygote:
    """The serving loop: its connections, the kernels starting for them and those forked."""

    def __init__(self, channel):
        self.chores = [warm_up]  # done when nothing waits, once a kernel has been forked
        self.forked = False
        self.selector = selectors.DefaultSelector()
        self.connections = set()
        self.leftovers = []  # control groups not yet removed, retried while the zygote serves
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ, ("lifeline", None))
        self.shared = bool(channel.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))
        if self.shared:
            self.selector.register(channel, selectors.EVENT_READ, ("listening", None))
        else:
            self.add(channel)

    def add(self, channel):
        """Serve one more connection (a connected socket)."""
        connection = Connection(channel)
        self.connections.add(connection)
        self.selector.register(channel, selectors.EVENT_READ, ("connection", connection))

    def serve(self):
        """Answer requests until the lifeline closes (or the last connection, when not shared)."""
        # The first kernel is forked as soon as the modules are imported; the warm-up waits for a
        # moment when no request and no starting kernel waits, so that it delays no kernel.
        while True:
            starting = any(connection.report is not None for connection in self.connections)
            idle = self.chores and self.forked and not starting
            waiting = RETRY_SECONDS if self.leftovers else None
            events = self.selector.select(0 if idle else waiting)
            if not events and idle:
                self.chores.pop(0)()
            self.retry_leftovers()
            for key, _ in events:
                if self.selector.get_map().get(key.fd) is not key:  # closed by an earlier event
                    continue
                kind, connection = key.data
                if kind == "lifeline" and not os.read(key.fd, 4096):
                    return
                if kind == "listening":
                    self.add(key.fileobj.accept()[0])
                elif kind == "connection":
                    self.receive(connection)
                elif kind == "report":
                    self.hear(connection)
                elif kind == "kernel":
                    self.forget(connection, key.fileobj)
            if not self.connections and not self.shared:
                return

    def receive(self, connection):
        """Read what `connection` sent, queue each complete request; close it at end of file."""
        try:
            data = connection.socket.recv(65536)
        except OSError:
            data = b""
        *requests, connection.partial = (connection.partial + data).split(b"\n")
        if not data or len(connection.partial) > MAX_REQUEST_BYTES:
            self.close(connection)
            return
        connection.requests.extend(requests)
        self.next_request(connection)

    def next_request(self, connection):
        """Fork a kernel for the connection's next request, unless one is still starting."""
        waiting = connection.requests
        while connection in self.connections and waiting and connection.report is None:
            answer = self.fork_kernel(connection, waiting.popleft())
            if answer is not None:
                self.answer(connection, answer)

    def fork_kernel(self, connection, request):
        """Fork a kernel for `request` (JSON bytes); {"error"} now, or None: it will report."""
        try:
            request = json.loads(request)
        except ValueError:
            return {"error": "the request is not JSON"}
        problem = request_problem(request)
        if problem:
            return {"error": problem}
        try:
            group = cgroups.create(Limits()) if request["sandbox"] else None
        except OSError as error:
            return {"error": f"cannot make the kernel's control group: {error}"}
        read, write = os.pipe()
        self.forked = True
        gc.freeze()  # the kernel's collections skip what it shares with the zygote
        child = os.fork()
        if child == 0:
            os.close(read)
            _start_kernel(request, write, group)
        os.close(write)
        # The child reports once it has entered its sandbox; meanwhile other workers are served.
        connection.report, connection.child, connection.heard = read, open_pidfd(child), b""
        connection.group = group
        self.selector.register(read, selectors.EVENT_READ, ("report", connection))
        return None

    def hear(self, connection):
        """Read a starting kernel's report; once whole, answer the connection that asked."""
        data = os.read(connection.report, 4096)
        connection.heard += data
        if data and b"\n" not in connection.heard:
            return
        line = connection.heard.split(b"\n")[0].strip()
        group = connection.group
        self.stop_hearing(connection)
        answer = json.loads(line) if line else {"error": "the kernel did not start"}
        if "pid" in answer:
            self.track(connection, answer["pid"], group)
        else:
            self.remove_group(group)
        if self.answer(connection, answer):
            self.next_request(connection)

    def stop_hearing(self, connection, kill=False):
        """Stop waiting for the kernel that `connection` asked for (killing it, if `kill`)."""
        if connection.child is not None:
            if kill:  # the sandbox's process 1 dies with this child
                _kill(connection.child)
            os.close(connection.child)
        if kill:
            self.remove_group(connection.group)
        self.selector.unregister(connection.report)
        os.close(connection.report)
        connection.report = connection.child = connection.group = None

    def answer(self, connection, answer):
        """Send `answer` on `connection`; False if the worker has gone (its kernels are killed)."""
        try:
            connection.socket.sendall(json.dumps(answer).encode() + b"\n")
            return True
        except OSError:
            self.close(connection)
            return False

    def track(self, connection, pid, group):
        """Remember kernel `pid` (in `group`) as forked for `connection`, by a pidfd, no other's."""
        pidfd = open_pidfd(pid)
        if pidfd is None:  # it has already ended
            self.remove_group(group)
            return
        connection.kernels[pidfd] = group
        self.selector.register(pidfd, selectors.EVENT_READ, ("kernel", connection))  # once it ends

    def forget(self, connection, pidfd):
        """Stop tracking one of `connection`'s kernels, which has ended; remove its group."""
        self.selector.unregister(pidfd)
        os.close(pidfd)
        self.remove_group(connection.kernels.pop(pidfd))

    def close(self, connection):
        """Kill the kernels forked for `connection`, and one still starting, then close it."""
        if connection.report is not None:
            self.stop_hearing(connection, kill=True)
        for pidfd in list(connection.kernels):
            _kill(pidfd)
            self.forget(connection, pidfd)
        self.connections.discard(connection)
        self.selector.unregister(connection.socket)
        connection.socket.close()

    def close_all(self):
        """Kill every kernel, close every connection, and remove every group left."""
        for connection in list(self.connections):
            self.close(connection)
        for group in self.leftovers:
            try:
                group.remove()
            except OSError as error:  # the next zygote's sweep tries again
                print(f"left behind: {error}", file=sys.stderr)
        self.leftovers = []

    def remove_group(self, group):
        """Remove a kernel's control group (None: it has none); retry later if it lingers."""
        if group is None:
            return
        try:
            group.remove(QUICK_REMOVE_SECONDS)
        except OSError as error:  # the zygote goes on serving, and tries again
            print(f"{error}: removing it again each {RETRY_SECONDS} s", file=sys.stderr)
            self.leftovers.append(group)

    def retry_leftovers(self):
        """Try once more to remove each group left, killing what is still in it."""
        left = []
        for group in self.leftovers:
            try:
                group.remove(0)
            except OSError:
                left.append(group)
        self.leftovers = left


def request_problem(request):
    """Why the zygote cannot serve `request` (a dict read from JSON), or "" if it can."""
    if not isinstance(request, dict) or not isinstance(request.get("sandbox"), bool):
        return 'the request must say "sandbox": true or false'
    if request["sandbox"] and not request.get("ipc_dir"):
        return "a sandboxed kernel needs an ipc_dir for its sockets"
    return ""


def _kill(pidfd):
    """Kill the process of `pidfd`, unless it has just ended."""
    with contextlib.suppress(ProcessLookupError):
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)


def open_pidfd(pid):
    """A pidfd of process `pid`, or None if it has already ended (and been reaped)."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:  # e.g. a sandbox that failed at once: its report is in the pipe
        return None


def _start_kernel(request, report_fd, group=None):
    """In the forked child: enter the sandbox (in `group`) if asked, report the pid, run it."""

    def report(pid):
        os.write(report_fd, json.dumps({"pid": pid}).encode() + b"\n")
        os.close(report_fd)

    # Read before the report: once the grader has the pid, the zygote may die at any time.
    zygote = None if request["sandbox"] else os.getppid()
    try:
        if request["sandbox"]:
            sandbox.enter(request["cwd"], request["ipc_dir"], report=report, group=group)
        else:
            report(os.getpid())
    except BaseException as error:  # noqa: BLE001 - the grader is told why, then this child ends
        if os.getpid() != 1:  # process 1 of a sandbox: its pid was reported, it just dies
            reason = json.dumps({"error": f"cannot sandbox the kernel: {error}"})
            os.write(report_fd, reason.encode() + b"\n")
        os._exit(1)
    _become_kernel(request, zygote)


def _reap():
    """Collect the exit status of every finished child, so none lingers as a zombie."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def kernel_arguments(command):
    """The kernel's own arguments in `command` (python [-m ipykernel_launcher] ARGS...): ARGS."""
    # IPython would take a `-m MODULE` left in them for a module to run at start-up, and the
    # launcher would then start a second kernel application inside the first.
    return command[3:] if command[1:2] == ["-m"] else command[1:]


def _become_kernel(request, zygote=None):
    """In the forked child: take the kernel's environment and run ipykernel; never return.

    An unsandboxed kernel exits when `zygote` (its parent's pid) is gone; a sandboxed one dies
    with its sandbox.
    """
    os.setsid()  # its own process group, as the kernel manager expects
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    if request["sandbox"]:  # nothing of the kernel reaches the grader's terminal
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        os.dup2(1, 2)
    else:
        os.dup2(2, 1)  # keep the kernel off the zygote's output
        os.chdir(request["cwd"])
    os.closerange(3, 65536)  # no connection of the zygote's, no lifeline
    os.environ.clear()
    os.environ.update(request["env"])
    from ipykernel import kernelapp

    argv = kernel_arguments(request["argv"])
    if zygote is not None:  # e.g. after the grader was killed
        argv.append(f"--IPKernelApp.parent_handle={zygote}")
    code = 0
    try:
        sys.argv = [request["argv"][0], *argv]
        kernelapp.launch_new_instance(argv=argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 0
    finally:
        os._exit(code)


def main(argv=None):
    """`python -m course.grading.kernels.zygote FD`: preload, then serve the socket FD."""
    import importlib

    argv = sys.argv[1:] if argv is None else argv
    channel = socket.socket(fileno=int(argv[0]))
    skip_slow_unused_imports()
    for module in PRELOAD:
        importlib.import_module(module)
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    cgroups.sweep()  # the groups that a zygote killed before it could remove them left behind
    zygote = Zygote(channel)
    try:
        zygote.serve()
    finally:
        zygote.close_all()
    os._exit(0)  # no interpreter teardown (torch's takes most of a second): nothing is left to do


if __name__ == "__main__":
    main()
