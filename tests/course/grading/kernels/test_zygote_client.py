"""The workers' side of the zygote: a worker whose shared zygote has gone goes on with its own."""

import os
import signal

import pytest
from forked_kernels import DEADLINE, kernel_parent, kernel_request

from course.grading.kernels import provisioner, zygote, zygote_client

pytestmark = pytest.mark.slow  # kernels forked from a zygote that imports torch


def test_a_worker_whose_shared_zygote_has_gone_goes_on_with_its_own(tmp_path, monkeypatch):
    client = zygote_client.ZygoteClient()
    with zygote.shared() as address:
        monkeypatch.setenv(zygote.ADDRESS_VARIABLE, address[zygote.ADDRESS_VARIABLE])
        first = client.fork_kernel(kernel_request(tmp_path, "first"))["pid"]
        shared = client.link()
        assert shared.process is None  # the shared zygote, not one of its own
        os.kill(kernel_parent(first), signal.SIGKILL)  # the shared zygote dies mid-run
        second = client.fork_kernel(kernel_request(tmp_path, "second"))["pid"]
        own = client.link()
        assert own is not shared and own.process is not None and client.shared_lost
        assert kernel_parent(second) == own.process.pid
    assert provisioner.exited(first, DEADLINE)
    own.answers.close()  # its own zygote ends with its connection, and so does its kernel
    own.connection.close()
    assert own.process.wait(60) == 0
    assert provisioner.exited(second, DEADLINE)
