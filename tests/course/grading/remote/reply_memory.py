"""Measure the grader's peak memory as it reads replies from a kernel: one JSON line per reply.

Run as a script (`python reply_memory.py NAME...`), in a process of its own: each reply is read as
the agent's reply text and as the comm message itself, and the peak growth of resident memory
while the grader parses and decodes it is printed with the outcome (accepted, or why refused).
"""

import gc
import json
import sys

import torch

from course.grading.preprocessors import judge
from course.grading.remote import client

SIZE = 60 * 10**6  # characters of each hostile reply
REPLIES = {
    "a correct reply": lambda: json.dumps(judge.wire.encode(torch.randn(2**20), None)),
    "60 MB of empty lists": lambda: "[" + "[], " * (SIZE // 4) + "[]]",
    "deeply nested lists": lambda: "[" * (SIZE // 2) + "]" * (SIZE // 2),
    "many small dicts": lambda: "[" + '{"a": 1}, ' * (SIZE // 10) + "1]",
    "many short strings": lambda: "[" + '"ab", ' * (SIZE // 6) + "1]",
    "a huge string": lambda: '"' + "x" * SIZE + '"',
    "a huge wide string": lambda: '"\\ud83d\\ude00' + "x" * SIZE + '"',
    "a huge raw wide string": lambda: '"\U0001f600' + "x" * SIZE + '"',
}


def kilobytes(field):
    """A memory figure of this process from /proc/self/status, in kB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:"))


def peak_growth(frame):
    """The peak growth of resident memory (MB) while the grader reads `frame`, and the outcome."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the peak resident memory starts again from the current one
    before = kilobytes("VmRSS")
    try:
        client.KernelLink(executor=None).decode_reply(client.unpack_message_part(frame))
        outcome = "accepted"
    except (client.MalformedReply, judge.wire.MalformedValue) as error:
        outcome = f"refused: {error}"
    return (kilobytes("VmHWM") - before) / 1024, outcome


def frames(text):
    """The comm message bytes that carry `text` as the agent's reply, and as the message itself."""
    value = '{"value": ' + text + "}"
    yield "as its reply", json.dumps({"data": {"reply": value}}).encode()
    yield "as the message itself", ('{"data": {"reply": ' + value + "}}").encode()


if __name__ == "__main__":
    for name in sys.argv[1:]:
        for form, frame in frames(REPLIES[name]()):
            print(json.dumps([name, form, *peak_growth(frame)]), flush=True)
            del frame
