"""The workers' side of the kernel zygote: how a grading process asks a zygote for kernels.

`ZygoteClient`, one for each grading process (the provisioner's), asks the zygote that the
workers of `make autograde` share (its socket named by COURSE_KERNEL_ZYGOTE) while it answers,
then a zygote of this process's own, started on a socket pair. Each request and answer is one
JSON line (`course.grading.kernels.zygote`, which serves them).
"""

import atexit
import json
import os
import socket

from course.grading.kernels.zygote import ADDRESS_VARIABLE, start


class ZygoteLink:
    """A connection to a zygote, and the zygote's process when it is this process's own."""

    def __init__(self, connection, process=None):
        self.connection, self.process = connection, process
        self.answers = connection.makefile("r", encoding="utf-8")
        self.lost = False

    def alive(self):
        """False once the zygote has gone: it did not answer, or our own has exited."""
        return not self.lost and (self.process is None or self.process.poll() is None)

    def fork(self, request):
        """Ask for a kernel; the answer, {"pid"} or {"error"}."""
        try:
            self.connection.sendall(json.dumps(request).encode() + b"\n")
            line = self.answers.readline()
        except OSError:
            line = ""
        self.lost = not line
        return json.loads(line or '{"error": "the zygote has exited"}')


def shared_link(address):
    """A link to the shared zygote listening at `address`, or None if it cannot be reached."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(address)
    except OSError:
        connection.close()
        return None
    return ZygoteLink(connection)


def own_link():
    """A link to a zygote of this process's own, started now and killed when this process ends."""
    ours, theirs = socket.socketpair()
    process = start(theirs)
    theirs.close()
    atexit.register(process.kill)
    return ZygoteLink(ours, process)


class ZygoteClient:
    """Where one process gets its kernels: the shared zygote while it answers, then its own."""

    def __init__(self):
        self.current = None  # the ZygoteLink in use
        self.shared_lost = False  # the shared zygote has gone: it is not asked again

    def link(self):
        """The link to use: to the zygote named by COURSE_KERNEL_ZYGOTE, else to one of ours."""
        if self.current is not None and not self.current.alive():
            self.shared_lost = self.shared_lost or self.current.process is None
            self.current = None
        address = os.environ.get(ADDRESS_VARIABLE)
        if self.current is None and address and not self.shared_lost:
            self.current = shared_link(address)
            self.shared_lost = self.current is None
        if self.current is None:  # no shared zygote, or it has gone: go on with one of our own
            self.current = own_link()
        return self.current

    def fork_kernel(self, request):
        """A kernel for `request`: {"pid"} or {"error"}; asked again of a new zygote if one left."""
        link = self.link()
        answer = link.fork(request)
        return self.link().fork(request) if link.lost else answer
