"""Start autograding kernels as forks of the zygote (`course.grading.kernels.zygote`).

Each forked kernel enters an OS sandbox of its own (`course.grading.kernels.sandbox`) before it
runs any student code, and talks to the grader over Unix sockets (jupyter_client's `ipc` transport):
it has no network at all.

nbgrader uses it through `ForkingExecute` (`course.grading.preprocessors.execute`). Its
`ForkingKernelManager` gives each kernel spec the provisioner `ForkProvisioner`, by the name of
its entry point (PROVISIONER_NAME, in pyproject.toml): jupyter_client builds it, and every
signal, kill and "is it alive" of a kernel goes through it to `ForkedProcess`. The workers of
`make autograde` share one zygote, named by COURSE_KERNEL_ZYGOTE (`course.grading.pool`); any
other nbgrader process starts a zygote of its own. Every socket the manager and its clients open
on a kernel drops an oversized message (`course.grading.channels`).
"""

import contextlib
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import zmq
import zmq.asyncio
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from jupyter_client.session import Session
from traitlets import Bool, default

from course.grading.channels import READY_SECONDS, BoundedKernelClient, bounded_context
from course.grading.kernels import sandbox, socket_folder, zygote
from course.grading.kernels.zygote_client import ZygoteClient

PROVISIONER_NAME = "course-fork-provisioner"  # ForkProvisioner's entry point
KILL_WAIT_SECONDS = 1


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
    """The parts of `subprocess.Popen` that a kernel provisioner uses, for a forked kernel.

    The kernel is no child of this process (the zygote forked it): its exit is seen through a
    pidfd, and its exit code is unknown.
    """

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
        """Signal the kernel's process group (the kernel alone until it leads one), if it runs."""
        for send in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError):
                send(self.pid, signum)
                return

    def kill(self):
        """Kill the kernel."""
        self.send_signal(signal.SIGKILL)


class ForkProvisioner(LocalProvisioner):
    """Launch the kernel as a fork of the zygote instead of a new interpreter.

    Its parent is a `ForkingKernelManager`, which says whether to sandbox the kernel. A sandboxed
    kernel binds its sockets in a folder of its own (`ipc_dir`), and the grader connects to them
    only through links it made once the kernel answered (`pinned`).
    """

    zygote_client = ZygoteClient()  # this process's way to a zygote, for all its kernels
    ipc_dir = None  # a sandboxed kernel's socket folder, at the same path at each start
    pinned = ()  # descriptors of the running kernel's sockets (socket_folder.pin_sockets)

    async def pre_launch(self, **kwargs):
        """Give each start of a sandboxed kernel a fresh folder for its connection file and sockets.

        The folder is at the same path at each start, in a folder of the grader's that no kernel
        can write; what the last kernel left there is removed first, so that nothing a kernel
        wrote is ever used again. The kernel binds its sockets there (the manager's `ip`), and
        jupyter_client writes the connection file there next.
        """
        manager = self.parent
        if manager.sandbox:
            if self.ipc_dir is None:
                self.ipc_dir = str(socket_folder.new_kernel_folder() / "ipc")
                manager.transport = "ipc"
                manager.connection_file = f"{self.ipc_dir}/kernel.json"
            else:
                socket_folder.unpin_sockets(self.pinned)
                socket_folder.remove_socket_folder(self.ipc_dir)
            self.pinned = []
            manager.ip = f"{self.ipc_dir}/kernel"
            socket_folder.make_socket_folder(self.ipc_dir)
        return await super().pre_launch(**kwargs)

    async def launch_kernel(self, cmd, **kwargs):
        """Ask the zygote for a kernel running `cmd`'s ipykernel arguments; pin its sockets."""
        sandboxed = self.parent.sandbox
        environment = dict(kwargs.get("env") or os.environ)
        request = {
            "argv": [sys.executable, *cmd[1:]],
            "cwd": str(Path(kwargs.get("cwd") or os.getcwd()).resolve()),
            "env": sandbox.sandbox_environment(environment) if sandboxed else environment,
            "sandbox": sandboxed,
            "ipc_dir": self.ipc_dir,
        }
        answer = self.zygote_client.fork_kernel(request)
        if "error" in answer:
            raise sandbox.SandboxError(answer["error"])
        pid = answer["pid"]
        self.process = ForkedProcess(pid)
        self.pid = self.pgid = pid
        self.cwd = request["cwd"]
        if sandboxed and await self.kernel_answers():
            self.pin_kernel_sockets()
        return self.connection_info

    def pin_kernel_sockets(self):
        """Hold the kernel's sockets, and point the manager (and so its clients) at links to them.

        The kernel answers only once it has made its sockets, and it runs no student code before
        a request arrives: none has been sent yet. From then on the grader reaches these sockets
        through links in its own folder (`socket_folder.pin_sockets`), whatever the kernel puts
        in its socket folder later. It happens here, before jupyter_client's manager connects its
        control socket: `post_launch` comes after that.
        """
        manager = self.parent
        name = os.path.basename(manager.ip)
        links = Path(self.ipc_dir).parent / "links"
        sockets = [f"{name}-{port}" for port in manager.ports]
        self.pinned = socket_folder.pin_sockets(self.ipc_dir, sockets, links)
        manager.ip = str(links / name)
        self.connection_info = manager.get_connection_info()

    async def kernel_answers(self):
        """True once the kernel answers; else False, and the kernel is dead (killed if it hung)."""
        # A session of its own: a client sharing the manager's would share its socket identity,
        # and the kernel would then ignore the one that nbclient reconnects after a restart.
        manager = self.parent
        key, scheme = manager.session.key, manager.session.signature_scheme
        client = manager.client(session=Session(key=key, signature_scheme=scheme))
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=READY_SECONDS)
            return True
        except RuntimeError:  # its users find it dead, as they would have without this wait
            await self.kill()
            return False
        finally:
            client.stop_channels()

    async def send_signal(self, signum):
        """Signal the kernel through its ForkedProcess (interrupts, kills, terminations)."""
        if self.process is not None:
            self.process.send_signal(signum)

    async def kill(self, restart=False):
        """Kill the kernel and see it gone, so the manager need not poll for it."""
        process = self.process
        await super().kill(restart=restart)
        if process is not None:
            exited(process.pid, KILL_WAIT_SECONDS)

    async def terminate(self, restart=False):
        """Kill the kernel: a sandbox's process 1 ignores SIGTERM."""
        await self.kill(restart=restart)

    async def cleanup(self, restart=False):
        """Remove the sandbox's folder once the kernel is gone for good (not between restarts)."""
        await super().cleanup(restart=restart)
        if not restart and self.ipc_dir is not None:
            socket_folder.unpin_sockets(self.pinned)
            self.pinned = []
            socket_folder.remove_socket_folder(self.ipc_dir)
            socket_folder.remove_tree(Path(self.ipc_dir).parent)
            self.ipc_dir = None


class ForkingKernelSpecManager(KernelSpecManager):
    """The installed kernel specs, each naming the forking provisioner (PROVISIONER_NAME)."""

    def get_kernel_spec(self, kernel_name):
        """The spec of `kernel_name`, whose kernels jupyter_client launches by forking."""
        spec = super().get_kernel_spec(kernel_name)
        provisioner = {"provisioner_name": PROVISIONER_NAME, "config": {}}
        spec.metadata = {**spec.metadata, "kernel_provisioner": provisioner}
        return spec


class ForkingKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels are forks of the zygote, each in a sandbox of its own.

    Its kernel specs name the forking provisioner, which jupyter_client builds by that name and
    which does the rest: the socket folder, the pinning, the clean-up (`ForkProvisioner`).
    """

    sandbox = Bool(True, help="Run each kernel in an OS sandbox (course.grading.kernels.sandbox)")

    @default("kernel_spec_manager")
    def _kernel_spec_manager_default(self):
        """Kernel specs that name the forking provisioner."""
        return ForkingKernelSpecManager(data_dir=self.data_dir)

    @default("client_factory")
    def _client_factory_default(self):
        """Clients whose sockets drop oversized messages, ready as soon as the kernel answers."""
        return BoundedKernelClient

    @default("context")
    def _context_default(self):
        """Sockets that drop oversized messages (the manager's own; clients have theirs)."""
        self._created_context = True
        return bounded_context(zmq.asyncio.Context)
