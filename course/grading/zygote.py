"""The kernel zygote: a process that has imported PyTorch once and forks each grading kernel.

Autograding a submission starts a fresh kernel, and most of its cost is importing torch
(about 1 s) and ipykernel, then the modules torch loads at the first training step (0.8 s).
The zygote imports them and takes one tiny step once; each kernel is a fork of it, so each
submission still gets its own process, memory and globals (a student's changes cannot reach
another student's kernel), but the imports are already done. Each forked kernel enters an OS
sandbox of its own (`course.grading.sandbox`) before it runs any student code.

`start(channel)` runs ``python -m course.grading.zygote`` on a Unix socket:

* a *connected* socket: the zygote of one nbgrader process (`course.grading.fastkernel`);
* a *listening* socket: one zygote shared by every worker of `make autograde`
  (`course.grading.pool`), each worker on a connection of its own.

A request is one JSON line, {"argv", "cwd", "env", "ipc_dir"}; the answer is one JSON line,
{"pid"} or {"error"}, sent once the kernel has entered its sandbox. The requests of a connection
are answered in order; while one kernel enters its sandbox, the zygote serves the others (its
own share of each kernel is the fork, about 7 ms, so one zygote keeps many workers busy). The
kernels forked for a connection are killed when it closes, one still starting too, and every
kernel when the zygote ends: when its standard input (its lifeline) reaches end of file.

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

from course.build import paths
from course.grading import sandbox

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
    environment["PYTHONPATH"] = str(paths.ROOT)
    environment["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # the debugger's import stays quiet
    return subprocess.Popen(
        # -P: its working folder, the shared /tmp, is not on its module path (a module planted
        # there would run as the grading user)
        [sys.executable, "-P", "-m", "course.grading.zygote", str(channel.fileno())],
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


class Zygote:
    """The serving loop: connections, their requests, the kernels starting and those forked."""

    def __init__(self, channel):
        self.chores = [warm_up]  # done when nothing waits, once a kernel has been forked
        self.forked = False
        self.selector = selectors.DefaultSelector()
        self.pending = {}  # connection -> bytes of a request not yet ended by a newline
        self.requests = {}  # connection -> its complete requests not yet started
        # connection -> the kernel it waits for: (its report pipe, the child's pidfd, bytes)
        self.starting = {}
        self.kernels = {}  # connection -> the pidfds of the kernels forked for it
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "lifeline")
        self.shared = bool(channel.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))
        if self.shared:
            self.selector.register(channel, selectors.EVENT_READ, "listening")
        else:
            self.add(channel)

    def add(self, connection):
        """Serve one more connection."""
        self.pending[connection], self.requests[connection] = b"", deque()
        self.kernels[connection] = set()
        self.selector.register(connection, selectors.EVENT_READ, "connection")

    def serve(self):
        """Answer requests until the lifeline closes (or the last connection, when not shared)."""
        # The first kernel is forked as soon as the modules are imported; the warm-up waits for a
        # moment when no request and no starting kernel waits, so that it delays no kernel.
        while True:
            idle = self.chores and self.forked and not self.starting
            events = self.selector.select(0 if idle else None)
            if not events and idle:
                self.chores.pop(0)()
            for key, _ in events:
                if self.selector.get_map().get(key.fd) is not key:  # closed by an earlier event
                    continue
                if key.data == "lifeline" and not os.read(key.fd, 4096):
                    return
                if key.data == "listening":
                    self.add(key.fileobj.accept()[0])
                elif key.data == "connection":
                    self.receive(key.fileobj)
                elif key.data == "kernel":
                    self.forget(key.fileobj)
                elif key.data == "report":
                    self.hear(key.fileobj)
            if not self.pending and not self.shared:
                return

    def receive(self, connection):
        """Read what `connection` sent and queue each complete request; close it at end of file."""
        try:
            data = connection.recv(65536)
        except OSError:
            data = b""
        buffered = self.pending[connection] + data
        *requests, self.pending[connection] = buffered.split(b"\n")
        if not data or len(self.pending[connection]) > MAX_REQUEST_BYTES:
            self.close(connection)
            return
        self.requests[connection].extend(requests)
        self.next_request(connection)

    def next_request(self, connection):
        """Fork a kernel for the connection's next request, unless one is still starting."""
        while connection in self.requests and self.requests[connection]:
            if connection in self.starting:
                return
            answer = self.fork_kernel(connection, self.requests[connection].popleft())
            if answer is not None:
                self.answer(connection, answer)

    def fork_kernel(self, connection, request):
        """Fork a kernel for `request` (JSON bytes); {"error"} now, or None: it will report."""
        try:
            request = json.loads(request)
        except ValueError:
            return {"error": "the request is not JSON"}
        read, write = os.pipe()
        self.forked = True
        gc.freeze()  # the kernel's collections skip what it shares with the zygote
        child = os.fork()
        if child == 0:
            os.close(read)
            _start_kernel(request, write)
        os.close(write)
        # The child reports once it has entered its sandbox; meanwhile other workers are served.
        self.starting[connection] = (read, _pidfd(child), b"")
        self.selector.register(read, selectors.EVENT_READ, "report")
        return None

    def hear(self, report):
        """Read a starting kernel's report; once whole, answer the connection that asked."""
        connection = next(c for c, (pipe, *_) in self.starting.items() if pipe == report)
        pipe, child, heard = self.starting[connection]
        data = os.read(report, 4096)
        heard += data
        if data and b"\n" not in heard:
            self.starting[connection] = (pipe, child, heard)
            return
        self.stop_hearing(connection)
        line = heard.split(b"\n")[0].strip()
        answer = json.loads(line) if line else {"error": "the kernel did not start"}
        if "pid" in answer:
            self.track(connection, answer["pid"])
        if self.answer(connection, answer):
            self.next_request(connection)

    def stop_hearing(self, connection, kill=False):
        """Stop waiting for the kernel that `connection` asked for (killing it, if `kill`)."""
        pipe, child, _ = self.starting.pop(connection)
        if kill and child is not None:  # the sandbox's process 1 dies with this child
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(child, signal.SIGKILL)
        self.selector.unregister(pipe)
        os.close(pipe)
        if child is not None:
            os.close(child)

    def answer(self, connection, answer):
        """Send `answer` to `connection`; False if the worker has gone (its kernels are killed)."""
        try:
            connection.sendall(json.dumps(answer).encode() + b"\n")
            return True
        except OSError:
            self.close(connection)
            return False

    def track(self, connection, pid):
        """Remember kernel `pid` as forked for `connection`, by a pidfd that cannot name another."""
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:  # it has already ended
            return
        self.kernels[connection].add(pidfd)
        self.selector.register(pidfd, selectors.EVENT_READ, "kernel")  # readable once it ends

    def forget(self, pidfd):
        """Stop tracking a kernel that has ended."""
        self.selector.unregister(pidfd)
        os.close(pidfd)
        for kernels in self.kernels.values():
            kernels.discard(pidfd)

    def close(self, connection):
        """Kill the kernels forked for `connection`, and one still starting, then close it."""
        if connection in self.starting:
            self.stop_hearing(connection, kill=True)
        for pidfd in self.kernels.pop(connection):
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except ProcessLookupError:  # it has just ended
                pass
            self.forget(pidfd)
        del self.pending[connection], self.requests[connection]
        self.selector.unregister(connection)
        connection.close()

    def close_all(self):
        """Kill every kernel and close every connection."""
        for connection in list(self.pending):
            self.close(connection)


def _pidfd(pid):
    """A pidfd of child `pid`, or None if it has already ended and been reaped."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:  # e.g. a sandbox that failed at once: its report is in the pipe
        return None


def _start_kernel(request, report_fd):
    """In the forked child: enter the sandbox if asked, report the kernel's pid, run it."""

    def report(pid):
        os.write(report_fd, json.dumps({"pid": pid}).encode() + b"\n")
        os.close(report_fd)

    try:
        if request.get("ipc_dir"):
            sandbox.enter(request["cwd"], request["ipc_dir"], report=report)
        else:
            report(os.getpid())
    except BaseException as error:  # noqa: BLE001 - the grader is told why, then this child ends
        if os.getpid() != 1:  # process 1 of a sandbox: its pid was reported, it just dies
            reason = json.dumps({"error": f"cannot sandbox the kernel: {error}"})
            os.write(report_fd, reason.encode() + b"\n")
        os._exit(1)
    _become_kernel(request)


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


def _become_kernel(request):
    """In the forked child: take the kernel's environment and run ipykernel; never return."""
    os.setsid()  # its own process group, as the kernel manager expects
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    if request.get("ipc_dir"):  # nothing of the kernel reaches the grader's terminal
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        os.dup2(1, 2)
    else:
        os.dup2(2, 1)  # keep the kernel off the zygote's output
        os.chdir(request["cwd"])
    os.closerange(3, 65536)  # no connection of the zygote's, no lifeline
    os.environ.clear()
    os.environ.update(request["env"])
    from ipykernel import kernelapp

    # The kernel exits when its parent, the zygote, is gone (e.g. after the grader was killed).
    argv = [*kernel_arguments(request["argv"]), f"--IPKernelApp.parent_handle={os.getppid()}"]
    code = 0
    try:
        sys.argv = [request["argv"][0], *argv]
        kernelapp.launch_new_instance(argv=argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 0
    finally:
        os._exit(code)


def main(argv=None):
    """`python -m course.grading.zygote FD`: preload, then serve the socket FD."""
    import importlib

    argv = sys.argv[1:] if argv is None else argv
    channel = socket.socket(fileno=int(argv[0]))
    skip_slow_unused_imports()
    for module in PRELOAD:
        importlib.import_module(module)
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    zygote = Zygote(channel)
    try:
        zygote.serve()
    finally:
        zygote.close_all()
    os._exit(0)  # no interpreter teardown (torch's takes most of a second): nothing is left to do


if __name__ == "__main__":
    main()
