"""Start autograding kernels by forking a process that has already imported PyTorch.

Autograding a submission starts a fresh kernel, and most of its cost is importing torch
(about 1.5 s) and ipykernel, then the modules torch loads at the first training step (0.8 s).
Here a *zygote* process imports them and takes one tiny step once per nbgrader run; each
kernel is a fork of it, so each submission still gets its own process, memory and globals (a
student's changes cannot reach another student's kernel), but the imports are already done.

Each forked kernel enters an OS sandbox of its own (`course.grading.sandbox`) before it runs any
student code, and talks to the grader over Unix sockets (jupyter_client's `ipc` transport): it
has no network at all. The zygote itself runs no student code.

nbgrader uses it through `ForkingExecute`, named in `nbgrader_config.py`. Without a sandbox
(``c.ForkingExecute.sandbox = False``, or COURSE_UNSANDBOXED=1 in the environment) kernels run
as the grading user; ``c.ForkingExecute.fork = False`` also starts them the ordinary way.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zmq
import zmq.asyncio
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from nbgrader.preprocessors import Execute
from traitlets import Bool, default

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
]
# A larger message from a kernel is dropped by ZeroMQ before anything parses it: the request
# that waited for it runs out of time, and the grader's memory stays bounded.
MAX_MESSAGE_BYTES = 64 * 2**20
_zygote = None


def zygote_main():
    """Import the heavy modules, then fork one kernel per request read from stdin."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    warm_up()
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    for line in sys.stdin:
        request = json.loads(line)
        read, write = os.pipe()
        if os.fork() == 0:
            os.close(read)
            _start_kernel(request, write)
        os.close(write)
        with os.fdopen(read) as answer:  # one line; the kernel keeps the pipe open a moment
            line = answer.readline().strip()
        print(line or json.dumps({"error": "the kernel did not start"}), flush=True)


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
    """Collect the exit status of every finished kernel, so none lingers as a zombie."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def _become_kernel(request):
    """In the forked child: take the kernel's environment and run ipykernel; never return."""
    os.setsid()  # its own process group, as the kernel manager expects
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sandboxed = bool(request.get("ipc_dir"))
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    if sandboxed:  # nothing of the kernel reaches the grader's terminal
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        os.dup2(1, 2)
        os.closerange(3, 65536)
    else:
        os.dup2(2, 1)  # the zygote's stdout is its channel to nbgrader: keep the kernel off it
        os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    from ipykernel import kernelapp

    # The kernel exits when its parent, the zygote, is gone (e.g. after nbgrader was killed).
    argv = [*request["argv"][1:], f"--IPKernelApp.parent_handle={os.getppid()}"]
    code = 0
    try:
        sys.argv = [request["argv"][0], *argv]
        kernelapp.launch_new_instance(argv=argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 0
    finally:
        os._exit(code)


def zygote():
    """The zygote of this process, started on first use and stopped at exit."""
    global _zygote
    if _zygote is None or _zygote.poll() is not None:
        # The zygote's memory is every kernel's: it gets no secret of the instructor's environment.
        environment = sandbox.sandbox_environment(os.environ, home=tempfile.gettempdir())
        environment["PYTHONPATH"] = str(paths.ROOT)
        _zygote = subprocess.Popen(
            [sys.executable, "-m", "course.grading.fastkernel"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tempfile.gettempdir(),
            env=environment,
        )
        atexit.register(_zygote.kill)
    return _zygote


def bounded_context(context_class=zmq.Context):
    """A ZeroMQ context whose sockets drop any message larger than MAX_MESSAGE_BYTES."""
    context = context_class()
    context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    return context


class ForkedProcess:
    """The parts of `subprocess.Popen` that a kernel manager uses, for a forked kernel."""

    stdin = stdout = stderr = None

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def poll(self):
        """None while the kernel runs, then its (unknown, so 0) exit code."""
        state = Path(f"/proc/{self.pid}/stat")
        try:
            alive = state.read_text().split(")")[-1].split()[0] != "Z"
        except OSError:
            alive = False
        if not alive:
            self.returncode = 0
        return self.returncode

    def wait(self, timeout=None):
        """Block until the kernel has exited."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.05)
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
        process = zygote()
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline() or '{"error": "the zygote has exited"}')
        if "error" in answer:
            raise sandbox.SandboxError(answer["error"])
        pid = answer["pid"]
        self.process = ForkedProcess(pid)
        self.pid = self.pgid = pid
        self.cwd = request["cwd"]
        return self.connection_info


class ForkingKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels are forks of the zygote, each in a sandbox of its own."""

    sandbox = Bool(True, help="Run each kernel in an OS sandbox (course.grading.sandbox)")
    ipc_dir = None

    @default("context")
    def _context_default(self):
        """Sockets that drop oversized messages, for every client of this kernel."""
        self._created_context = True
        return bounded_context(zmq.asyncio.Context)

    async def _async_pre_start_kernel(self, **kwargs):
        """Give a sandboxed kernel a private folder for its connection file and Unix sockets."""
        if self.sandbox and self.ipc_dir is None:
            folder = Path(tempfile.mkdtemp(prefix="course-sandbox-"))
            self.ipc_dir = str(folder / "ipc")
            os.mkdir(self.ipc_dir, 0o700)
            self.transport = "ipc"
            self.ip = f"{self.ipc_dir}/kernel"
            self.connection_file = f"{self.ipc_dir}/kernel.json"
        return await super()._async_pre_start_kernel(**kwargs)

    async def _async_cleanup_resources(self, restart=False):
        """Remove the sandbox's folder once the kernel is gone for good."""
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self.ipc_dir is not None:
            shutil.rmtree(Path(self.ipc_dir).parent, ignore_errors=True)
            self.ipc_dir = None

    async def _async_launch_kernel(self, kernel_cmd, **kwargs):
        """Swap in the forking provisioner, then launch as usual."""
        self.provisioner.__class__ = ForkProvisioner
        return await super()._async_launch_kernel(kernel_cmd, **kwargs)


class ForkingExecute(Execute):
    """nbgrader's Execute preprocessor, with kernels forked from the zygote."""

    fork = Bool(True, help="Fork kernels from a process that has imported torch").tag(config=True)
    sandbox = Bool(help="Run each student's kernel in an OS sandbox of its own").tag(config=True)

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


if __name__ == "__main__":
    zygote_main()
