"""Whether this machine can sandbox a kernel, asked in a process of its own before grading.

`probe()` runs ``python -m course.grading.kernels.probe``, which makes a sandbox around a scratch
folder (`sandbox.enter`, in a forked child) and checks from inside that the outside is hidden,
privileges are dropped and system calls are filtered; it answers (True, "") or (False, why).
`look_inside` runs a function inside such a sandbox, and `in_child` any function in a forked
child, each handing back its value and error: the probe's tools, and the tests'.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from course.grading.kernels import sandbox, syscall_filter
from course.grading.kernels.linux import SandboxError


def probe(timeout=20):
    """(True, "") when this machine can sandbox a kernel, else (False, the reason)."""
    if not sys.platform.startswith("linux"):
        return False, f"the sandbox needs Linux namespaces, and this is {sys.platform}"
    # -P: not the modules of the working directory (`course` is installed)
    command = [sys.executable, "-P", "-m", "course.grading.kernels.probe"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "making a sandbox did not finish"
    if result.returncode == 0 and result.stdout.strip() == "sandboxed":
        return True, ""
    reason = (result.stderr.strip().splitlines() or ["no reason given"])[-1]
    return False, reason


def look_inside(folder, ipc_dir, look, group=None):
    """Enter a sandbox (in `group`) in a forked child, run look() -> str there: (text, error)."""

    def entered():
        sandbox.enter(folder, ipc_dir, group=group)
        return look()

    text, error = in_child(entered)
    return text or "", error


def in_child(work):
    """Run work() -> a JSON-ready value in a forked child: (its value or None, error or "")."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            answer = {"value": work(), "error": ""}
        except BaseException as error:  # noqa: BLE001 - the reason goes to the parent
            answer = {"value": None, "error": str(error) or type(error).__name__}
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as reply:
        text = reply.read()
    os.waitpid(pid, 0)
    answer = json.loads(text) if text else {"value": None, "error": "the child wrote nothing"}
    return answer["value"], answer["error"]


def _probe_main():
    """Make a sandbox around a scratch folder, check it from inside, print 'sandboxed'."""
    with tempfile.TemporaryDirectory(prefix="course-probe-") as scratch:
        folder, ipc_dir = Path(scratch) / "work", Path(scratch) / "ipc"
        folder.mkdir()
        ipc_dir.mkdir()

        def checked():
            _check_inside(scratch)
            return "sandboxed"

        message, error = look_inside(folder, ipc_dir, checked)
    if error:
        sys.exit(f"cannot make the sandbox: {error}")
    print(message)


def _check_inside(scratch):
    """Raise unless the sandbox hides the outside, drops privileges and filters system calls."""
    if os.path.exists(Path(scratch) / "root") or os.path.exists(__file__):
        raise SandboxError("the outside file system is visible")
    if _has_capabilities():
        raise SandboxError("privileges were not dropped")
    syscall_filter.check()  # no user namespace, and no socket but a Unix one: no network


def _has_capabilities():
    """True when this process has any effective capability."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16) != 0
    return False


if __name__ == "__main__":
    _probe_main()
