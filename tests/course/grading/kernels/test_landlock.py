"""Landlock around a sandboxed kernel: where it may write, no TCP, no signal out of its sandbox."""

import errno
import json
import os
import socket
from pathlib import Path

import pytest
from sandboxed_kernel import EVERYDAY_PRINTED, EVERYDAY_WORK, lines_printed_in_a_sandboxed_kernel

from course.grading.kernels import landlock, policy, probe

ABI = landlock.abi()
needs_landlock = pytest.mark.skipif(ABI == 0, reason="this Linux has no Landlock")
needs_abi_4 = pytest.mark.skipif(
    ABI < 4, reason="this Linux's Landlock handles no TCP (ABI 4 on do)"
)
needs_abi_6 = pytest.mark.skipif(
    ABI < 6, reason="this Linux's Landlock scopes no signals nor sockets (ABI 6 on do)"
)


def in_confined_child(writable, look):
    """Fork; in the child allow writing beneath `writable` only, and return look() -> JSON value."""
    answer, error = probe.in_child(lambda: {"abi": landlock.restrict(writable), "value": look()})
    assert not error, error
    return answer


def error_of(action):
    """The errno that action() fails with, or 0."""
    try:
        action()
    except OSError as error:
        return error.errno
    return 0


def write_in(folder):
    """A function that makes a file in `folder`."""
    return lambda: (Path(folder) / "made").write_text("x")


def test_abi_is_a_version_or_zero():
    assert isinstance(ABI, int) and ABI >= 0


def test_without_landlock_nothing_is_confined(tmp_path, monkeypatch):
    monkeypatch.setattr(landlock, "_number", lambda name: -1)
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    answer = in_confined_child([allowed], lambda: error_of(write_in(other)))
    assert answer == {"abi": 0, "value": 0}


@needs_landlock
def test_writing_is_refused_outside_the_writable_folders_though_the_mount_allows_it(tmp_path):
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    (other / "kept").write_text("read me")

    def look():
        removed = error_of(lambda: (other / "kept").unlink())
        read = (other / "kept").read_text()
        return [error_of(write_in(allowed)), error_of(write_in(other)), removed, read]

    answer = in_confined_child([allowed], look)
    assert answer == {"abi": ABI, "value": [0, errno.EACCES, errno.EACCES, "read me"]}
    assert (allowed / "made").exists() and not (other / "made").exists()


@needs_abi_4
def test_no_tcp_connection_even_to_the_loopback(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as server:
        address = server.getsockname()

        def look():
            return error_of(lambda: socket.create_connection(address, timeout=5).close())

        assert in_confined_child([tmp_path], look)["value"] == errno.EACCES


@needs_abi_6
def test_no_signal_to_a_process_outside_the_domain(tmp_path):
    def look():
        return [
            error_of(lambda: os.kill(os.getppid(), 0)),
            error_of(lambda: os.kill(os.getpid(), 0)),
        ]

    assert in_confined_child([tmp_path], look)["value"] == [errno.EPERM, 0]


@needs_abi_6
def test_no_connection_to_an_abstract_unix_socket_made_outside(tmp_path):
    name = f"\0course-landlock-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(name)
        server.listen()

        def look():
            with socket.socket(socket.AF_UNIX) as client:
                return error_of(lambda: client.connect(name))

        assert in_confined_child([tmp_path], look)["value"] == errno.EPERM


@needs_landlock
def test_a_sandboxed_kernel_writes_only_where_the_sandbox_lets_it(tmp_path):
    folder, ipc_dir = tmp_path / "work", tmp_path / "ipc"
    folder.mkdir()
    ipc_dir.mkdir()
    places = [policy.HOME, "/tmp", str(ipc_dir)]

    def look():
        written = {place: error_of(write_in(place)) for place in places}
        written["/dev/null"] = error_of(lambda: Path("/dev/null").write_text("x"))
        written["/proc/self/comm"] = error_of(lambda: Path("/proc/self/comm").write_text("x"))
        return json.dumps(written)

    text, error = probe.look_inside(folder, ipc_dir, look)
    assert not error, error
    expected = {place: 0 for place in [*places, "/dev/null"]}
    assert json.loads(text) == {**expected, "/proc/self/comm": errno.EACCES}


IN_THE_KERNEL = EVERYDAY_WORK + """
try:
    open("/proc/self/comm", "w").write("x")
except OSError as error:
    print("proc", error.errno)
"""


@pytest.mark.slow  # a sandboxed kernel
@needs_landlock
def test_a_confined_sandboxed_kernel_runs_torch_matplotlib_and_subprocesses(tmp_path):
    printed, outputs = lines_printed_in_a_sandboxed_kernel(IN_THE_KERNEL, tmp_path)
    expected = [*EVERYDAY_PRINTED, f"proc {errno.EACCES}"]
    assert printed[:4] == expected, outputs
