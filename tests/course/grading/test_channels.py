"""The channels to a kernel: ZeroMQ drops a message over the limit before anything reads it."""

import zmq

from course.grading.channels import MAX_MESSAGE_BYTES, bounded_context


def test_oversized_messages_from_a_kernel_are_dropped_before_parsing(tmp_path):
    context = bounded_context(zmq.Context)
    receiver = context.socket(zmq.PULL)
    receiver.bind(f"ipc://{tmp_path}/socket")

    def send(payload):
        sender = zmq.Context.instance().socket(zmq.PUSH)
        sender.connect(f"ipc://{tmp_path}/socket")
        sender.send(payload)
        sender.close(linger=2000)

    send(b"x" * (MAX_MESSAGE_BYTES + 1))
    assert receiver.poll(1000) == 0  # dropped by ZeroMQ: nothing reached the grader
    send(b"small")
    assert receiver.poll(5000) and receiver.recv() == b"small"
    receiver.close(linger=0)
