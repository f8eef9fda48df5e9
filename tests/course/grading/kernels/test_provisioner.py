"""The forking provisioner's lifecycle: a fresh socket folder at each start, every connection of
the grader's through the pinned sockets, and the folder gone with the kernel."""

from pathlib import Path

import pytest
import zmq
from jupyter_client.utils import run_sync

from course.grading.kernels.provisioner import ForkingKernelManager

pytestmark = pytest.mark.slow  # forks sandboxed kernels from a zygote that imports torch


def assert_reached_only_through_links(manager, ipc_dir):
    """The manager's address and its control socket lead to the grader's links, not `ipc_dir`."""
    links = ipc_dir.parent / "links"
    assert Path(manager.ip).parent == links, manager.ip
    control = manager._control_socket.getsockopt(zmq.LAST_ENDPOINT).decode()
    assert control == f"ipc://{links}/kernel-{manager.control_port}", control
    client = manager.client()
    client.start_channels()
    try:
        assert Path(client.ip).parent == links
        run_sync(client.wait_for_ready)(timeout=60)  # the kernel answers through them
    finally:
        client.stop_channels()


def test_the_grader_reaches_a_sandboxed_kernel_only_through_its_pinned_sockets(tmp_path):
    manager = ForkingKernelManager()
    run_sync(manager.start_kernel)(cwd=str(tmp_path))
    ipc_dir = Path(manager.provisioner.ipc_dir)
    try:
        assert Path(manager.connection_file).parent == ipc_dir
        assert_reached_only_through_links(manager, ipc_dir)
        (ipc_dir / "left_before_the_restart").touch()
        run_sync(manager.restart_kernel)(now=True)
        assert not (ipc_dir / "left_before_the_restart").exists()  # a fresh folder
        assert_reached_only_through_links(manager, ipc_dir)
        assert manager.provisioner.pinned and min(manager.provisioner.pinned) >= 0
    finally:
        run_sync(manager.shutdown_kernel)(now=True)
    assert not ipc_dir.parent.exists()
    assert manager.provisioner.ipc_dir is None and not manager.provisioner.pinned


def test_a_kernel_manager_without_a_sandbox_leaves_the_transport_alone(tmp_path):
    manager = ForkingKernelManager(sandbox=False)
    run_sync(manager.start_kernel)(cwd=str(tmp_path))
    try:
        assert manager.transport == "tcp" and manager.provisioner.ipc_dir is None
        assert not manager.provisioner.pinned
    finally:
        run_sync(manager.shutdown_kernel)(now=True)
