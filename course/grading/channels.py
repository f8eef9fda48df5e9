"""The channels between the grader and a student's kernel: ZeroMQ sockets with bounded messages.

A message from a kernel larger than MAX_MESSAGE_BYTES is dropped by ZeroMQ before anything
parses it (`bounded_context`): the request that waited for it runs out of time, and the grader's
memory stays bounded. Every context the grader opens on a kernel is one of these: the kernel
manager's (`kernels.provisioner`), nbclient's client (`BoundedKernelClient`, which
`preprocessors.output_budget` bounds further) and the grader's own link (`remote.client`). A
starting kernel has READY_SECONDS to answer on them. Imports nothing of `course`: the layers
above, `kernels` and `remote` among them, share it.
"""

import time
from queue import Empty

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from traitlets import default

MAX_MESSAGE_BYTES = 64 * 2**20
READY_SECONDS = 60  # for a starting kernel to answer on its channels: no cell's limit
IOPUB_JOIN_SECONDS = 0.02
RECONNECT_MILLISECONDS = 10


def bounded_context(context_class=zmq.Context):
    """A ZeroMQ context whose sockets drop any message larger than MAX_MESSAGE_BYTES."""
    context = context_class()
    context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MILLISECONDS)
    return context


class BoundedKernelClient(AsyncKernelClient):
    """nbclient's client: drops oversized messages; ready when the kernel answers, not 0.2 s on."""

    @default("context")
    def _context_default(self):
        """A context of its own (destroyed with the client) whose sockets drop large messages."""
        self._created_context = True
        return bounded_context(zmq.asyncio.Context)

    async def wait_for_ready(self, timeout=None):
        """Return once the kernel answers kernel_info on shell and publishes on IOPub."""
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
                if reply["msg_type"] == "kernel_info_reply":
                    await self.iopub_channel.get_msg(timeout=IOPUB_JOIN_SECONDS)  # IOPub joined
                    self._handle_kernel_info_reply(reply)
                    return
            except Empty:
                pass
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")
