"""Start autograding kernels by forking a process that has already imported PyTorch.

Autograding a submission starts a fresh kernel, and most of its cost is importing torch
(about 1.5 s) and ipykernel. Here a *zygote* process imports them once per nbgrader run; each
kernel is a fork of it, so each submission still gets its own process, memory and globals (a
student's changes cannot reach another student's kernel), but the imports are already done.

nbgrader uses it through `ForkingExecute`, named in `nbgrader_config.py`. Set
``c.ForkingExecute.fork = False`` there to start kernels the ordinary way.
"""

import atexit
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from nbgrader.preprocessors import Execute
from traitlets import Bool

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
_zygote = None


def zygote_main():
    """Import the heavy modules, then fork one kernel per request read from stdin."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _become_kernel(request)
        print(pid, flush=True)


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
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)  # the zygote's stdout is its channel to nbgrader: keep the kernel off it
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
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
        _zygote = subprocess.Popen(
            [sys.executable, "-m", "course.fastkernel"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=os.getcwd(),
        )
        atexit.register(_zygote.kill)
    return _zygote


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
        """Ask the kernel to stop."""
        self.send_signal(signal.SIGTERM)


class ForkProvisioner(LocalProvisioner):
    """Launch the kernel as a fork of the zygote instead of a new interpreter."""

    async def launch_kernel(self, cmd, **kwargs):
        """Ask the zygote for a kernel running `cmd`'s ipykernel arguments."""
        request = {
            "argv": [sys.executable, *cmd[1:]],
            "cwd": str(kwargs.get("cwd") or os.getcwd()),
            "env": dict(kwargs.get("env") or os.environ),
        }
        process = zygote()
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        pid = int(process.stdout.readline())
        self.process = ForkedProcess(pid)
        self.pid = self.pgid = pid
        self.cwd = request["cwd"]
        return self.connection_info


class ForkingKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels are forks of the zygote."""

    async def _async_launch_kernel(self, kernel_cmd, **kwargs):
        """Swap in the forking provisioner, then launch as usual."""
        self.provisioner.__class__ = ForkProvisioner
        return await super()._async_launch_kernel(kernel_cmd, **kwargs)


class ForkingExecute(Execute):
    """nbgrader's Execute preprocessor, with kernels forked from the zygote."""

    fork = Bool(True, help="Fork kernels from a process that has imported torch").tag(config=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.fork:
            self.kernel_manager_class = ForkingKernelManager


if __name__ == "__main__":
    zygote_main()
