"""The kernel zygote: forks kernels for each connection, kills them when it closes, ends cleanly."""

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
from forked_kernels import DEADLINE, kernel_parent, kernel_request
from jupyter_client.provisioning import KernelProvisionerFactory

from course.grading.kernels import cgroups, provisioner, socket_folder, zygote

pytestmark = pytest.mark.slow  # kernels forked from a zygote that imports torch


def ask(connection, request):
    """Send one request line and read the zygote's one answer line."""
    connection.sendall(request if isinstance(request, bytes) else json.dumps(request).encode())
    connection.sendall(b"\n")
    return json.loads(connection.makefile("r").readline())


def connect(address):
    """A new connection to the shared zygote at `address`."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(address)
    return connection


@pytest.fixture(scope="module")
def shared_zygote():
    """The address of a zygote shared as by a run of make autograde."""
    with zygote.shared() as address:
        yield address[zygote.ADDRESS_VARIABLE]


def test_the_zygote_socket_is_private_to_the_grading_user(shared_zygote):
    address = shared_zygote
    assert os.stat(os.path.dirname(address)).st_mode & 0o077 == 0


def test_closing_a_connection_kills_its_kernels_and_no_other(shared_zygote, tmp_path):
    address = shared_zygote
    first, second = connect(address), connect(address)
    kept = ask(second, kernel_request(tmp_path, "kept"))["pid"]
    dropped = ask(first, kernel_request(tmp_path, "dropped"))["pid"]
    assert not provisioner.exited(kept, 0) and not provisioner.exited(dropped, 0)
    first.close()  # as when a worker is killed
    assert provisioner.exited(dropped, DEADLINE)
    assert not provisioner.exited(kept, 1)
    os.kill(kept, signal.SIGKILL)
    second.close()


def test_a_malformed_request_is_answered_and_the_zygote_goes_on(shared_zygote, tmp_path):
    address = shared_zygote
    with connect(address) as connection:
        assert ask(connection, b"{not json") == {"error": "the request is not JSON"}
        pid = ask(connection, kernel_request(tmp_path, "after"))["pid"]
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"sandbox": None}, '"sandbox": true or false'),
        ({"sandbox": "no"}, '"sandbox": true or false'),
        ({"sandbox": True}, "needs an ipc_dir"),
        ({"sandbox": True, "ipc_dir": ""}, "needs an ipc_dir"),
    ],
)
def test_a_request_must_say_whether_to_sandbox_the_kernel(shared_zygote, tmp_path, changes, reason):
    request = {**kernel_request(tmp_path, "unclear"), **changes}
    if changes["sandbox"] is None:
        del request["sandbox"]
    with connect(shared_zygote) as connection:
        assert reason in ask(connection, request)["error"]
        assert ask(connection, [1, 2])["error"] == 'the request must say "sandbox": true or false'


def test_closing_the_lifeline_ends_the_zygote_and_every_kernel(tmp_path):
    with zygote.shared() as address:
        connection = connect(address[zygote.ADDRESS_VARIABLE])
        pid = ask(connection, kernel_request(tmp_path, "last"))["pid"]
        parent = kernel_parent(pid)
    assert provisioner.exited(parent, 0), "the zygote outlived its lifeline"
    assert provisioner.exited(pid, DEADLINE), "a kernel outlived its zygote"


def test_a_private_zygote_ends_with_its_one_connection():
    ours, theirs = socket.socketpair()
    process = zygote.start(theirs)
    theirs.close()
    ours.close()
    assert process.wait(60) == 0
    process.stdin.close()


def test_exited_sees_a_process_end_without_polling(monkeypatch):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert not provisioner.exited(child.pid, 0)
    child.kill()
    waits, wait = [], select.select
    monkeypatch.setattr(select, "select", lambda *args: waits.append(args[3]) or wait(*args))
    assert provisioner.exited(child.pid, DEADLINE)  # a zombie has exited
    assert waits == [DEADLINE]  # one wait on the pidfd, which the exit ends: no polling
    monkeypatch.undo()
    child.wait()
    assert provisioner.exited(child.pid, 0)  # and so has a process that is gone


def test_the_iri_checker_is_not_imported_and_notebooks_still_validate():
    code = (
        "import sys\n"
        "from course.grading.kernels import zygote\n"
        "zygote.skip_slow_unused_imports()\n"
        "import nbformat\n"
        "nbformat.validate(nbformat.v4.new_notebook())\n"
        "print(sys.modules['rfc3987_syntax'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "None"


@pytest.mark.parametrize(
    "command, arguments",
    [
        (["python", "-m", "ipykernel_launcher", "-f", "k.json"], ["-f", "k.json"]),
        (["python", "-f", "k.json"], ["-f", "k.json"]),
    ],
)
def test_a_kernel_gets_its_own_arguments_not_the_launcher_module(command, arguments):
    assert zygote.kernel_arguments(command) == arguments


# A zygote whose kernels take request["delay"] seconds to report, as a slow sandbox would, or
# wait until the file request["until"] exists, or fail at once when request["fail"]; it reaps a
# child that has already ended before it looks.
SLOW_STARTING_ZYGOTE = """
import json, os, signal, socket, sys, time
from course.grading.kernels import zygote

def start_kernel(request, report_fd, group=None):
    if request.get("fail"):
        os.write(report_fd, b'{"error": "cannot sandbox the kernel"}\\n')
        os._exit(1)
    time.sleep(request.get("delay", 0))
    while request.get("until") and not os.path.exists(request["until"]):
        time.sleep(0.05)
    os.write(report_fd, json.dumps({"pid": os.getpid()}).encode() + b"\\n")
    time.sleep(60)
    os._exit(0)

def fork_and_look_late(fork=os.fork):
    pid = fork()
    if pid:
        time.sleep(0.2)
        zygote._reap()
    return pid

zygote._start_kernel = start_kernel
os.fork = fork_and_look_late
signal.signal(signal.SIGCHLD, lambda *_: zygote._reap())
serving = zygote.Zygote(socket.socket(fileno=int(sys.argv[1])))
serving.chores = []
try:
    serving.serve()
finally:
    serving.close_all()
"""


@pytest.fixture
def slow_zygote(tmp_path):
    """(the address, the process) of a shared zygote whose kernels are slow to report."""
    address = str(tmp_path / "zygote")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
        listening.bind(address)
        listening.listen()
        process = subprocess.Popen(
            [sys.executable, "-c", SLOW_STARTING_ZYGOTE, str(listening.fileno())],
            stdin=subprocess.PIPE,
            pass_fds=[listening.fileno()],
        )
    # Importing pyseccomp runs `ldconfig -p` twice (ctypes.util.find_library): children that a
    # busy host keeps alive long enough to be taken for a kernel. Once the zygote answers, they
    # are gone, and every child is a kernel.
    with connect(address) as starting:
        starting.settimeout(CHILDREN_SECONDS)
        assert ask(starting, b"{not json") == {"error": "the request is not JSON"}
    yield address, psutil.Process(process.pid)
    zygote.stop(process)


CHILDREN_SECONDS = 120  # a loaded host may take this long to start Python and fork


def wait_for_children(process, count, connection):
    """The children of `process` once it has `count` of them (CHILDREN_SECONDS at most).

    If they do not come, the failure says what the zygote answered on `connection` meanwhile
    (an error: it forked, and the kernel ended at once; nothing: it never forked).
    """
    deadline = time.monotonic() + CHILDREN_SECONDS
    while len(process.children()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    children = process.children()
    if len(children) != count:
        connection.setblocking(False)
        answered = b"nothing"
        with contextlib.suppress(BlockingIOError):
            answered = connection.recv(4096)
        pytest.fail(f"the zygote ({process.status()}) forked {len(children)} kernels, not "
                    f"{count}; it answered {answered!r}")  # fmt: skip
    return children


def test_a_kernel_slow_to_start_holds_up_no_other_worker(slow_zygote, tmp_path):
    address, process = slow_zygote
    slow, quick = connect(address), connect(address)
    started = tmp_path / "started"  # the slow kernel reports only once this exists
    slow.sendall(json.dumps({"until": str(started), "sandbox": False}).encode() + b"\n")
    wait_for_children(process, 1, slow)
    quick_pid = ask(quick, {"delay": 0, "sandbox": False})["pid"]
    slow.setblocking(False)
    with pytest.raises(BlockingIOError):  # answered while the other kernel is still starting
        slow.recv(1)
    slow.setblocking(True)
    started.touch()
    slow_pid = json.loads(slow.makefile("r").readline())["pid"]
    assert {slow_pid, quick_pid} == {child.pid for child in process.children()}
    slow.close()
    quick.close()
    assert provisioner.exited(slow_pid, DEADLINE) and provisioner.exited(quick_pid, DEADLINE)


def test_a_worker_gone_while_its_kernel_starts_takes_that_kernel_with_it(slow_zygote):
    address, process = slow_zygote
    connection = connect(address)
    connection.sendall(b'{"delay": 30, "sandbox": false}\n')
    (starting,) = wait_for_children(process, 1, connection)
    connection.close()
    outlived = "a kernel outlived the worker that asked for it"
    assert provisioner.exited(starting.pid, DEADLINE), outlived
    with connect(address) as again:  # and the zygote goes on
        pid = ask(again, {"delay": 0, "sandbox": False})["pid"]
    assert provisioner.exited(pid, DEADLINE)


def test_a_kernel_that_fails_at_once_is_answered_and_the_zygote_goes_on(slow_zygote):
    address, _ = slow_zygote
    with connect(address) as connection:
        assert ask(connection, {"fail": True, "sandbox": False}) == {
            "error": "cannot sandbox the kernel"
        }
        pid = ask(connection, {"delay": 0, "sandbox": False})["pid"]
    assert provisioner.exited(pid, DEADLINE)


def control_group_folders(pid):
    """The folders of the control group of process `pid` (one per hierarchy in use)."""
    membership = cgroups.parse_membership(open(f"/proc/{pid}/cgroup").read())
    name = os.path.basename(membership["" if cgroups.mode().kind == cgroups.V2 else "pids"])
    return [parent / name for parent in cgroups.mode().parents]


@pytest.mark.skipif(
    cgroups.mode().kind == cgroups.RLIMITS, reason="this Linux gives no control group here"
)
def test_a_sandboxed_kernel_gets_a_control_group_removed_once_it_has_ended(shared_zygote, tmp_path):
    ipc_dir = tmp_path / "ipc"
    socket_folder.make_socket_folder(ipc_dir)
    request = {**kernel_request(ipc_dir, "kernel"), "cwd": str(tmp_path)}
    request.update(sandbox=True, ipc_dir=str(ipc_dir))
    try:
        with connect(shared_zygote) as connection:
            pid = ask(connection, request)["pid"]
            folders = control_group_folders(pid)
            assert folders[0].name.startswith(cgroups.PREFIX)
            assert all(folder.is_dir() for folder in folders)
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while any(folder.exists() for folder in folders) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not any(folder.exists() for folder in folders)
    finally:
        socket_folder.remove_socket_folder(ipc_dir)


def test_a_forking_kernel_manager_gets_its_provisioner_by_the_entry_point_name():
    manager = provisioner.ForkingKernelManager(kernel_name="python3")
    named = manager.kernel_spec.metadata["kernel_provisioner"]["provisioner_name"]
    assert named == provisioner.PROVISIONER_NAME
    factory = KernelProvisionerFactory.instance()
    built = factory.create_provisioner_instance("k", manager.kernel_spec, parent=manager)
    assert type(built) is provisioner.ForkProvisioner
