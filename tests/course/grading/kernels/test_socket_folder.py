"""The grader's side of a kernel's folders: pinned sockets, a removal following no link, a sweep."""

import os
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
import zmq
from forked_kernels import unmount_socket_folders

from course.grading.kernels import socket_folder


@pytest.fixture(autouse=True)
def no_socket_folder_left_mounted(tmp_path):
    """Unmount whatever socket folder a test left mounted in its folder, even one that failed."""
    yield
    unmount_socket_folders(tmp_path)


def plant_links_and_a_deep_tree(ipc_dir, target, depth):
    """What a hostile kernel leaves: links to `target` and a folder `depth` deep; the count."""
    os.symlink(target, ipc_dir / "link_to_file")
    os.symlink(target.parent, ipc_dir / "link_to_folder")
    os.symlink("loop", ipc_dir / "loop")
    here = os.open(ipc_dir, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=here)
        os.symlink(target.parent, "up", dir_fd=here)
        below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
        os.close(here)
        here = below
    os.close(here)


def test_a_tree_3000_deep_full_of_links_is_removed_and_nothing_it_points_to(tmp_path):
    precious = tmp_path / "course" / "gradebook.db"
    precious.parent.mkdir()
    precious.write_text("grades")
    memory = "/dev/shm" if os.path.isdir("/dev/shm") else None  # quicker than a disk
    left = Path(tempfile.mkdtemp(dir=memory)) / "left_by_a_kernel"  # a plain folder: no tmpfs
    left.mkdir()
    plant_links_and_a_deep_tree(left, precious, 3000)
    socket_folder.remove_socket_folder(left)
    assert not left.exists()
    left.parent.rmdir()
    assert precious.read_text() == "grades" and os.listdir(precious.parent) == ["gradebook.db"]


def answer_from(url, context):
    """The reply of whatever REP socket `url` reaches, to one request."""
    client = context.socket(zmq.REQ)
    client.setsockopt(zmq.LINGER, 0)
    client.setsockopt(zmq.RCVTIMEO, 5000)
    client.connect(url)
    client.send(b"who?")
    return client.recv()


def serve_one(socket, answer):
    """Answer one request on `socket` in a thread."""
    thread = threading.Thread(target=lambda: (socket.recv(), socket.send(answer)))
    thread.start()
    return thread


def test_a_kernel_that_swaps_its_socket_for_a_link_is_still_reached_through_the_pinned_one(
    tmp_path,
):
    ipc_dir, links = tmp_path / "ipc", tmp_path / "links"
    ipc_dir.mkdir()
    context = zmq.Context()
    try:
        kernel = context.socket(zmq.REP)
        kernel.bind(f"ipc://{ipc_dir}/kernel-1")
        decoy = context.socket(zmq.REP)
        decoy.bind(f"ipc://{tmp_path}/decoy")
        pinned = socket_folder.pin_sockets(ipc_dir, ["kernel-1"], links)
        os.unlink(ipc_dir / "kernel-1")  # what a kernel that owns its folder can do
        os.symlink(tmp_path / "decoy", ipc_dir / "kernel-1")
        thread = serve_one(kernel, b"kernel")
        assert answer_from(f"ipc://{links}/kernel-1", context) == b"kernel"
        thread.join()
        socket_folder.unpin_sockets(pinned)
    finally:
        context.destroy(linger=0)


def test_a_socket_folder_entry_that_is_not_a_socket_is_refused_and_nothing_is_held(tmp_path):
    ipc_dir, precious = tmp_path / "ipc", tmp_path / "gradebook.db"
    ipc_dir.mkdir()
    precious.write_text("grades")
    os.symlink(precious, ipc_dir / "kernel-1")
    (ipc_dir / "kernel-2").write_text("")
    opened = len(os.listdir("/proc/self/fd"))
    for name in ("kernel-1", "kernel-2"):
        with pytest.raises((socket_folder.SandboxError, OSError)):
            socket_folder.pin_sockets(ipc_dir, [name], tmp_path / "links")
    assert len(os.listdir("/proc/self/fd")) == opened
    assert not (tmp_path / "links").exists()


def test_the_kernel_folders_of_a_killed_grader_are_swept_and_no_others(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ended = subprocess.Popen(["true"])
    ended.wait()
    prefix = socket_folder.KERNEL_FOLDER_PREFIX
    left = tmp_path / f"{prefix}{ended.pid}-abc"  # its grader was killed
    ours = socket_folder.new_kernel_folder()  # this process runs
    for folder in (left, ours):
        folder.mkdir(exist_ok=True)
        socket_folder.make_socket_folder(folder / "ipc")
        (folder / "ipc" / "kernel-1").write_text("")
    socket_folder.sweep_kernel_folders()
    assert not left.exists() and (ours / "ipc" / "kernel-1").exists()
