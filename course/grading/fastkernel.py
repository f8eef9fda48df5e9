"""Start autograding kernels as forks of the zygote (`course.grading.zygote`).

Each forked kernel enters an OS sandbox of its own (`course.grading.sandbox`) before it runs any
student code, and talks to the grader over Unix sockets (jupyter_client's `ipc` transport): it
has no network at all.

nbgrader uses it through `ForkingExecute`, named in `nbgrader_config.py`. The workers of `make
autograde` share one zygote, named by COURSE_KERNEL_ZYGOTE (`course.grading.pool`); any other
nbgrader process starts a zygote of its own. Without a sandbox (``c.ForkingExecute.sandbox =
False``, or COURSE_UNSANDBOXED=1 in the environment) kernels run as the grading user;
``c.ForkingExecute.fork = False`` also starts them the ordinary way.
"""

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from queue import Empty

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from jupyter_client.session import Session
from nbgrader.preprocessors import Execute
from traitlets import Bool, default

from course.grading import sandbox, zygote

# A larger message from a kernel is dropped by ZeroMQ before anything parses it: the request
# that waited for it runs out of time, and the grader's memory stays bounded.
MAX_MESSAGE_BYTES = 64 * 2**20
KILL_WAIT_SECONDS = 1
IOPUB_JOIN_SECONDS = 0.02
READY_SECONDS = 60  # for a starting kernel to answer
RECONNECT_MILLISECONDS = 10
_link = None
_shared_lost = False


class ZygoteLink:
    """A connection to a zygote, and the zygote's process when it is this process's own."""

    def __init__(self, connection, process=None):
        self.connection, self.process = connection, process
        self.answers = connection.makefile("r", encoding="utf-8")
        self.lost = False

    def alive(self):
        """False once the zygote has gone: it did not answer, or our own has exited."""
        return not self.lost and (self.process is None or self.process.poll() is None)

    def fork(self, request):
        """Ask for a kernel; the answer, {"pid"} or {"error"}."""
        try:
            self.connection.sendall(json.dumps(request).encode() + b"\n")
            line = self.answers.readline()
        except OSError:
            line = ""
        self.lost = not line
        return json.loads(line or '{"error": "the zygote has exited"}')


def zygote_link():
    """The link to the zygote: the shared one named by COURSE_KERNEL_ZYGOTE, else one of ours."""
    global _link, _shared_lost
    if _link is not None and not _link.alive():
        _shared_lost = _shared_lost or _link.process is None
        _link = None
    address = os.environ.get(zygote.ADDRESS_VARIABLE)
    if _link is None and address and not _shared_lost:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(address)
            _link = ZygoteLink(connection)
        except OSError:
            connection.close()
            _shared_lost = True
    if _link is None:  # no shared zygote, or it has gone: this worker goes on with its own
        ours, theirs = socket.socketpair()
        process = zygote.start(theirs)
        theirs.close()
        atexit.register(process.kill)
        _link = ZygoteLink(ours, process)
    return _link


def fork_kernel(request):
    """A kernel for `request`: {"pid"} or {"error"}; asked of a new zygote if this one has gone."""
    link = zygote_link()
    answer = link.fork(request)
    return zygote_link().fork(request) if link.lost else answer


def bounded_context(context_class=zmq.Context):
    """A ZeroMQ context whose sockets drop any message larger than MAX_MESSAGE_BYTES."""
    context = context_class()
    context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MILLISECONDS)
    return context


def exited(pid, timeout=None):
    """True once process `pid` has exited (a zombie has), waiting up to `timeout` seconds."""
    pidfd = zygote.open_pidfd(pid)
    if pidfd is None:
        return True
    try:
        return bool(select.select([pidfd], [], [], timeout)[0])  # readable once it has exited
    finally:
        os.close(pidfd)


class ForkedProcess:
    """The parts of `subprocess.Popen` that a kernel manager uses, for a forked kernel."""

    stdin = stdout = stderr = None

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def poll(self):
        """None while the kernel runs, then its (unknown, so 0) exit code."""
        if self.returncode is None and exited(self.pid, 0):
            self.returncode = 0
        return self.returncode

    def wait(self, timeout=None):
        """Block until the kernel has exited."""
        if self.returncode is None and not exited(self.pid, timeout):
            raise subprocess.TimeoutExpired(str(self.pid), timeout)
        self.returncode = 0
        return self.returncode

    def send_signal(self, signum):
        """Signal the kernel, unless it has already exited."""
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def kill(self):
        """Kill the kernel."""
        self.send_signal(signal.SIGKILL)

    def terminate(self):
        """Stop the kernel (a sandbox's first process ignores SIGTERM: it is killed)."""
        self.kill()


class ForkProvisioner(LocalProvisioner):
    """Launch the kernel as a fork of the zygote instead of a new interpreter."""

    async def launch_kernel(self, cmd, **kwargs):
        """Ask the zygote for a kernel running `cmd`'s ipykernel arguments."""
        environment = dict(kwargs.get("env") or os.environ)
        ipc_dir = self.parent.ipc_dir
        request = {
            "argv": [sys.executable, *cmd[1:]],
            "cwd": str(Path(kwargs.get("cwd") or os.getcwd()).resolve()),
            "env": sandbox.sandbox_environment(environment) if ipc_dir else environment,
            "ipc_dir": ipc_dir,
        }
        answer = fork_kernel(request)
        if "error" in answer:
            raise sandbox.SandboxError(answer["error"])
        pid = answer["pid"]
        self.process = ForkedProcess(pid)
        self.pid = self.pgid = pid
        self.cwd = request["cwd"]
        return self.connection_info

    async def kill(self, restart=False):
        """Kill the kernel and see it gone, so the manager need not poll for it."""
        await super().kill(restart=restart)
        if self.process is not None:
            exited(self.process.pid, KILL_WAIT_SECONDS)


class BoundedKernelClient(AsyncKernelClient):
    """nbclient's client: drops oversized messages; ready when the kernel answers, not 0.2 s on."""

    @default("context")
    def _context_default(self):
        """A context of its own (destroyed with the client) whose sockets drop large messages."""
        self._created_context = True
        return bounded_context(zmq.asyncio.Context)

    async def wait_for_ready(self, timeout=None):
        """Return once the kernel answers kernel_info on shell and publishes on IOPub."""
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
                if reply["msg_type"] == "kernel_info_reply":
                    await self.iopub_channel.get_msg(timeout=IOPUB_JOIN_SECONDS)  # IOPub joined
                    self._handle_kernel_info_reply(reply)
                    return
            except Empty:
                pass
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")


class ForkingKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels are forks of the zygote, each in a sandbox of its own."""

    sandbox = Bool(True, help="Run each kernel in an OS sandbox (course.grading.sandbox)")
    ipc_dir = None
    _pinned = ()  # descriptors of the running kernel's sockets (sandbox.pin_sockets)

    @default("client_factory")
    def _client_factory_default(self):
        """Clients whose sockets drop oversized messages, ready as soon as the kernel answers."""
        return BoundedKernelClient

    @default("context")
    def _context_default(self):
        """Sockets that drop oversized messages (the manager's own; clients have theirs)."""
        self._created_context = True
        return bounded_context(zmq.asyncio.Context)

    async def _async_pre_start_kernel(self, **kwargs):
        """Give each start of a sandboxed kernel a fresh folder for its connection file and sockets.

        The folder is at the same path at each start, in a folder of the grader's that no kernel
        can write; what the last kernel left there is removed first, so that nothing a kernel
        wrote is ever used again. The kernel binds its sockets there (`self.ip`); the grader's
        clients connect through links of its own (`_async_post_start_kernel`).
        """
        if self.sandbox:
            if self.ipc_dir is None:
                self.ipc_dir = str(sandbox.new_kernel_folder() / "ipc")
                self.transport = "ipc"
                self.connection_file = f"{self.ipc_dir}/kernel.json"
            else:
                sandbox.unpin_sockets(self._pinned)
                sandbox.remove_socket_folder(self.ipc_dir)
            self._pinned = []
            self.ip = f"{self.ipc_dir}/kernel"
            sandbox.make_socket_folder(self.ipc_dir)
        return await super()._async_pre_start_kernel(**kwargs)

    async def _async_cleanup_resources(self, restart=False):
        """Remove the sandbox's folder once the kernel is gone for good."""
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self.ipc_dir is not None:
            sandbox.unpin_sockets(self._pinned)
            self._pinned = []
            sandbox.remove_socket_folder(self.ipc_dir)
            sandbox.remove_tree(Path(self.ipc_dir).parent)
            self.ipc_dir = None

    async def _async_post_start_kernel(self, **kwargs):
        """Hold a sandboxed kernel's sockets once it has started, and connect only through them.

        The kernel answers only once it has made its sockets, and it runs no student code before
        a request arrives: none has been sent yet. From then on the grader's clients reach these
        sockets through links in the grader's own folder (`sandbox.pin_sockets`), whatever the
        kernel puts in its socket folder later.
        """
        if self.sandbox and await self._answers():
            names = [f"{os.path.basename(self.ip)}-{port}" for port in self.ports]
            links = Path(self.ipc_dir).parent / "links"
            self._pinned = sandbox.pin_sockets(self.ipc_dir, names, links)
            self.ip = str(links / os.path.basename(self.ip))
        await super()._async_post_start_kernel(**kwargs)

    async def _answers(self):
        """True once the kernel answers; else False, and the kernel is dead (killed if it hung)."""
        # A session of its own: a client sharing the manager's would share its socket identity,
        # and the kernel would then ignore the one that nbclient reconnects after a restart.
        session = Session(key=self.session.key, signature_scheme=self.session.signature_scheme)
        client = self.client(session=session)
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=READY_SECONDS)
            return True
        except RuntimeError:  # its users find it dead, as they would have without this wait
            self.provisioner.process.kill()
            return False
        finally:
            client.stop_channels()

    async def _async_launch_kernel(self, kernel_cmd, **kwargs):
        """Swap in the forking provisioner, then launch as usual."""
        self.provisioner.__class__ = ForkProvisioner
        return await super()._async_launch_kernel(kernel_cmd, **kwargs)


class ForkingExecute(Execute):
    """nbgrader's Execute preprocessor, with kernels forked from the zygote."""

    fork = Bool(True, help="Fork kernels from a process that has imported torch").tag(config=True)
    sandbox = Bool(help="Run each student's kernel in an OS sandbox of its own").tag(config=True)

    @default("shutdown_kernel")
    def _shutdown_kernel_default(self):
        """Kill the kernel when the notebook is done: every output has arrived by then."""
        return "immediate"

    @default("sandbox")
    def _sandbox_default(self):
        """Sandboxed unless COURSE_UNSANDBOXED=1 (`make autograde UNSANDBOXED=1`)."""
        return os.environ.get("COURSE_UNSANDBOXED") != "1"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.sandbox and not self.fork:
            raise ValueError("sandboxed kernels are forked: keep c.ForkingExecute.fork = True")
        if self.fork:
            self.kernel_manager_class = ForkingKernelManager

    def create_kernel_manager(self):
        """The kernel manager, told whether to sandbox its kernels."""
        km = super().create_kernel_manager()
        if isinstance(km, ForkingKernelManager):
            km.sandbox = self.sandbox
        return km
