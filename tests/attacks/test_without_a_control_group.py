"""Memory a student could hold where the sandbox has no control group, only its rlimits.

Without a group nothing counts a sandbox's memory as a whole, so each way to hold kernel memory
that no address-space limit counts is bounded on its own: extended attributes (kept by tmpfs in
the space of its inodes, bounded by `nr_inodes`, and refused by the system call filter), and
the buffers of Unix sockets (refused larger than Linux's default, and few: each process may open
`open_files`). Each attack runs in a real sandbox made without a group and measures what it held.
"""

import errno
import fcntl
import json
import os
import resource
import socket
import struct

import pytest

from course.grading.kernels import policy, probe, socket_folder

SIOCOUTQ = 0x5411  # the bytes of memory a socket's queued messages take (sk_wmem_alloc)
GiB = 1 << 30
BOUND_WITHOUT_A_GROUP = 4 * GiB  # what a group would allow: sandbox_memory_bytes


def in_a_sandbox_without_a_group(tmp_path, look):
    """Run look() -> JSON-ready value in a sandbox made with no control group; its value."""
    folder, ipc_dir = tmp_path / "work", tmp_path / "ipc"
    folder.mkdir()
    socket_folder.make_socket_folder(ipc_dir)
    try:
        text, error = probe.look_inside(folder, ipc_dir, lambda: json.dumps(look()))
    finally:
        socket_folder.remove_socket_folder(ipc_dir)
    assert not error, error
    return json.loads(text)


def hoard_extended_attributes():
    """Set 4 kB extended attributes on new files of each writable tmpfs until refused."""
    found = {}
    for place in ("/tmp", policy.HOME, "/dev/shm"):
        stored, refusal = 0, 0
        try:
            for index in range(10_000):
                path = os.path.join(place, f"hoard{index}")
                open(path, "w").close()
                os.setxattr(path, "user.hoard", b"x" * 4000)
                stored += 4000
        except OSError as error:
            refusal = error.errno
        found[place] = {"stored": stored, "refusal": refusal}
    places = ("/", "/dev", "/tmp", policy.HOME)
    found["files"] = {place: os.statvfs(place).f_files for place in places}
    return found


def test_no_extended_attribute_is_held_and_every_tmpfs_has_few_inodes(tmp_path):
    found = in_a_sandbox_without_a_group(tmp_path, hoard_extended_attributes)
    limits = policy.Limits()
    for place in ("/tmp", policy.HOME, "/dev/shm"):
        assert found[place] == {"stored": 0, "refusal": errno.ENOTSUP}, (place, found)
    assert found["files"] == {
        "/": policy.ROOT_FILES,
        "/dev": policy.DEVICE_FOLDER_FILES,
        "/tmp": limits.tmp_files,
        policy.HOME: limits.tmp_files,
    }
    # Were a call to slip through the filter, tmpfs would keep no more than this in all.
    most = 2 * limits.tmp_files + policy.ROOT_FILES + policy.DEVICE_FOLDER_FILES
    print(f"extended attributes: 0 bytes held; at most {most * policy.TMPFS_INODE_BYTES} bytes")
    assert most * policy.TMPFS_INODE_BYTES <= 16 * 2**20


def hoard_socket_buffers():
    """Open socket pairs until refused, fill each end, and count the memory they hold."""
    pairs = []
    try:
        while True:
            pairs.append(socket.socketpair())
    except OSError as error:
        stopped = error.errno
    try:
        pairs[0][0].setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        enlarged = 0
    except OSError as error:
        enlarged = error.errno
    held = 0
    for pair in pairs:
        for end in pair:
            end.setblocking(False)
            for size in (65536, 1):  # large messages, then single bytes until it is full
                try:
                    while True:
                        end.send(b"x" * size)
                except BlockingIOError:
                    pass
    for pair in pairs:
        for end in pair:
            held += struct.unpack("i", fcntl.ioctl(end.fileno(), SIOCOUTQ, b"\0" * 4))[0]
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return {"sockets": 2 * len(pairs), "stopped": stopped, "enlarged": enlarged, "held": held,
            "files": files}  # fmt: skip


@pytest.mark.skipif(not hasattr(fcntl, "ioctl"), reason="needs ioctl")
def test_socket_buffers_are_bounded_by_the_processes_and_files_of_the_sandbox(tmp_path):
    found = in_a_sandbox_without_a_group(tmp_path, hoard_socket_buffers)
    limits = policy.Limits()
    assert found["files"] == limits.open_files
    assert found["stopped"] == errno.EMFILE and found["sockets"] < limits.open_files
    assert found["enlarged"] == errno.EPERM
    # Every process may hold this much, and sockets passed to another and closed (in flight) are
    # bounded by open_files again: one process's worth more.
    most = (limits.processes + 1) * found["held"]
    print(
        f"socket buffers: {found['held'] / 2**20:.1f} MiB in {found['sockets']} sockets of one "
        f"process; at most {most / GiB:.2f} GiB for {limits.processes} processes"
    )
    assert most <= BOUND_WITHOUT_A_GROUP, found
    assert BOUND_WITHOUT_A_GROUP == limits.sandbox_memory_bytes
