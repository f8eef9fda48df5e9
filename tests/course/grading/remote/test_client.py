"""The grader's link to a kernel: replies read within the budget, deadlines on every wait."""

import os
import queue
import time

import pytest
import torch

from course.grading.preprocessors import judge
from course.grading.remote import client, wire


def reply(text):
    """The content of the agent's comm message holding `text` (its JSON reply)."""
    return {"comm_id": "c", "data": {"reply": text}}


class RefusingClient:
    """A kernel client whose next message fails to parse with `error`."""

    def __init__(self, error):
        self.error = error

    def get_iopub_msg(self, timeout):
        raise self.error

    get_shell_msg = get_iopub_msg


# Replies a kernel under the student's control can send (reply_memory.py, beside this file),
# and whether the grader accepts them as the agent's reply text.
HOSTILE_REPLIES = {
    "60 MB of empty lists": False,
    "deeply nested lists": False,
    "many small dicts": False,
    "many short strings": False,
    "a huge string": True,
    "a huge wide string": True,
    "a huge raw wide string": False,
}


class SlowKernel:
    """An executor and its kernel's client: the reply comes `reply_after` s on the clock.

    By then the kernel has used `cpu_seconds` of CPU time; `answers_interrupt` says whether an
    interrupt brings the reply at once, `idle_without_reply` whether it says it is done instead.
    """

    def __init__(self, reply_after, cpu_seconds, answers_interrupt=True, idle_without_reply=False):
        self.timeout = 0.2
        self.reply_after, self.cpu_seconds = reply_after, cpu_seconds
        self.answers_interrupt, self.idle_without_reply = answers_interrupt, idle_without_reply
        self.started = time.monotonic()
        self.events = []
        self.session = self
        self.shell_channel = self

    def new_deadline(self):
        return client.Deadline(self.timeout, self.cpu_clock)

    def cpu_clock(self):
        """The kernel's CPU time grows evenly until the reply."""
        share = min(1.0, (time.monotonic() - self.started) / self.reply_after)
        return (1234, share * self.cpu_seconds)

    def kernel_alive(self):
        return "killed" not in self.events

    def interrupt_kernel(self):
        self.events.append("interrupted")

    def kill_kernel(self):
        self.events.append("killed")

    def msg(self, msg_type, content):
        return {"header": {"msg_id": "request"}, "msg_type": msg_type, "content": content}

    def send(self, message):
        self.started = time.monotonic()

    def get_iopub_msg(self, timeout):
        time.sleep(min(timeout, 0.01))
        parent = {"msg_id": "request"}
        if self.idle_without_reply:
            content = {"execution_state": "idle"}
            return {"msg_type": "status", "parent_header": parent, "content": content}
        waited = time.monotonic() - self.started
        if waited > self.reply_after or ("interrupted" in self.events and self.answers_interrupt):
            content = {"comm_id": "c", "data": {"reply": '{"value": 1}'}}
            return {"msg_type": "comm_msg", "parent_header": parent, "content": content}
        raise queue.Empty


def link_to(kernel):
    """A KernelLink whose agent has started in `kernel`."""
    link = client.KernelLink(executor=kernel)
    link.client, link.started, link.comm_id = kernel, True, "c"
    kernel.get_shell_msg = kernel.get_iopub_msg
    return link


@pytest.fixture
def quick_limits(monkeypatch):
    """Read the kernel's CPU time often and wait a moment after an interrupt."""
    monkeypatch.setattr(client, "CPU_POLL_SECONDS", 0.01)
    monkeypatch.setattr(client, "INTERRUPT_GRACE_SECONDS", 0.2)


@pytest.mark.parametrize(
    "content",
    [
        {},
        {"data": {}},
        {"data": "reply"},
        reply(42),
        reply("x" * (client.MAX_REPLY_CHARACTERS + 1)),
        reply("not json"),
        reply('{"value": 1, "error": {}}'),
        reply('{"values": 1}'),
        reply("[1, 2]"),
        reply('{"value": {"t": "tensor"}}'),
        reply('{"value": NaN}'),
    ],
)
def test_missing_or_malformed_replies_fail_with_a_message(content):
    with pytest.raises(client.MalformedReply) as raised:
        client.KernelLink(executor=None).decode_reply(content)
    assert "reply" in str(raised.value)


def test_every_message_part_from_the_kernel_is_read_within_the_budget():
    part = client.unpack_message_part(b'{"data": {"reply": "[1]"}, "name": "caf\xc3\xa9"}')
    assert part == {"data": {"reply": "[1]"}, "name": "caf\u00e9"}
    with pytest.raises(wire.OverBudget, match="values"):
        client.unpack_message_part(b'{"data": {"reply": [' + b"[], " * 10**6 + b"[]]}}")
    with pytest.raises(wire.MalformedValue):
        client.unpack_message_part(b'{"data": NaN}')


@pytest.mark.parametrize(
    "error",
    [wire.OverBudget("JSON text of more than 100000 values"), ValueError("Invalid Signature")],
)
def test_a_message_the_grader_refuses_fails_the_waiting_test_with_a_message(error):
    link = client.KernelLink(executor=None)
    link.client = RefusingClient(error)
    with pytest.raises(client.MalformedReply, match=f"refused a message from the kernel: {error}"):
        link.receive("iopub")
    assert not issubclass(client.MalformedReply, Exception)  # no check_raises(ValueError) hides it


def test_the_graders_kernel_clients_read_messages_within_the_budget():
    import nbformat

    execute = judge.JudgeExecute()
    execute.nb = nbformat.v4.new_notebook()
    manager = execute.create_kernel_manager()
    assert manager.client().session.unpack is client.unpack_message_part


@pytest.mark.slow  # replies of 60 MB, in a Python of its own
def test_the_graders_peak_memory_stays_bounded_whatever_the_kernel_replies():
    import json
    import subprocess
    import sys
    from pathlib import Path

    from course.coursedir.nbgrader_run import nbgrader_environment

    script = Path(__file__).with_name("reply_memory.py")
    result = subprocess.run(
        [sys.executable, str(script), "a correct reply", *HOSTILE_REPLIES],
        capture_output=True,
        text=True,
        timeout=900,
        env=nbgrader_environment(),
    )
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 2 * (1 + len(HOSTILE_REPLIES))
    correct_peak = max(growth for name, _, growth, _ in rows if name == "a correct reply")
    for name, form, growth, outcome in rows:
        print(f"{name}, {form}: peak growth {growth:.0f} MB, {outcome:.90}")
        assert growth < correct_peak + 1024, (name, form, growth)
        if form == "as its reply" and name in HOSTILE_REPLIES:
            assert outcome.startswith("accepted") == HOSTILE_REPLIES[name], (name, outcome)
        elif form == "as the message itself":
            assert outcome.startswith("refused"), (name, outcome)


def test_a_reply_of_the_wrong_type_fails_the_check_that_reads_it():
    from utils.grading import check_shape

    value = client.KernelLink(executor=None).decode_reply(reply('{"value": [1, 2]}'))
    with pytest.raises(AssertionError, match="should be a torch.Tensor, got list"):
        check_shape(value, (2,), "softmax(scores)")


def test_the_students_exceptions_come_back_as_safe_builtins():
    error = client.remote_exception(
        {"types": ["LinAlgError", "RuntimeError", "Exception"], "message": "singular", "where": ""}
    )
    assert type(error) is RuntimeError and str(error) == "singular"
    error = client.remote_exception({"types": ["Evil", "object"], "message": "x", "where": ""})
    assert type(error) is Exception
    interrupted = client.remote_exception({"types": ["KeyboardInterrupt"]})
    assert isinstance(interrupted, client.KernelTrouble)
    assert isinstance(client.remote_exception("junk"), client.MalformedReply)


def test_kernel_trouble_cannot_be_caught_by_a_test():
    assert not issubclass(client.KernelTrouble, Exception)


def test_no_grader_class_is_chosen_from_a_type_name_the_kernel_reports():
    link = client.KernelLink(executor=None)
    spoofed = link.remote_object(
        {"t": "handle", "id": 1, "types": ["torch.nn.modules.linear.Linear", "builtins.object"]}
    )
    assert type(spoofed) is client.Remote
    assert not isinstance(spoofed, torch.nn.Linear) and not isinstance(spoofed, torch.nn.Module)


def test_a_busy_machine_never_turns_a_correct_answer_into_a_timeout(quick_limits):
    # The reply takes three times the limit on the clock, but little of the kernel's CPU time.
    kernel = SlowKernel(reply_after=0.6, cpu_seconds=0.05)
    assert link_to(kernel).request("call", {"name": "softmax"}) == 1
    assert kernel.events == []


def test_a_test_that_uses_its_cpu_time_is_interrupted(quick_limits):
    kernel = SlowKernel(reply_after=10, cpu_seconds=100)
    with pytest.raises(client.KernelTrouble, match="did not finish within 0.2 s of your kernel's"):
        link_to(kernel).request("call", {"name": "softmax"})
    assert kernel.events == ["interrupted"]


def test_a_kernel_that_waits_without_computing_is_stopped_by_the_clock(quick_limits):
    kernel = SlowKernel(reply_after=1e9, cpu_seconds=0, answers_interrupt=False)
    started = time.monotonic()
    with pytest.raises(client.Unanswered, match=client.NOT_STOPPED):
        link_to(kernel).request("call", {"name": "softmax"})
    assert kernel.events == ["interrupted", "killed"]
    assert time.monotonic() - started >= client.WALL_FACTOR * kernel.timeout


def test_a_kernel_done_with_a_request_it_never_answered_fails_at_once(quick_limits):
    kernel = SlowKernel(reply_after=1e9, cpu_seconds=0, idle_without_reply=True)
    with pytest.raises(client.Unanswered, match=client.NO_REPLY):
        link_to(kernel).request("call", {"name": "softmax"})
    assert kernel.events == []


def test_a_kernel_that_keeps_a_pin_waiting_is_asked_nothing_more(quick_limits):
    kernel = SlowKernel(reply_after=1e9, cpu_seconds=0, answers_interrupt=False)
    link = link_to(kernel)
    with pytest.raises(client.KernelTrouble, match="stopped answering the grader"):
        link.pin("set_parameters")
    assert kernel.events == ["interrupted", "killed"]
    with pytest.raises(client.KernelTrouble, match="did not hand over the test helper"):
        link.request("call", {"name": "softmax"})  # at once: the kernel is not asked
    assert kernel.events == ["interrupted", "killed"]


def test_a_deadline_counts_the_cpu_time_of_each_kernel_process_it_spans():
    readings = iter([(10, 5.0), (10, 6.0), (11, 0.5), None, (11, 2.0)])
    deadline = client.Deadline(3, lambda: next(readings))
    for _ in range(4):
        deadline.count(next(readings))
    assert deadline.cpu_used == pytest.approx(1.0 + 0.5 + 1.5)  # a restart counts from 0


def test_without_a_cpu_clock_a_deadline_is_the_limit_on_the_clock():
    deadline = client.Deadline(0.05, lambda: None)
    assert not deadline.passed()
    time.sleep(0.1)
    assert deadline.passed() and deadline.describe() == "0.05 s"
    with pytest.raises(ValueError, match="positive number of seconds"):
        client.Deadline(0, lambda: None)


def test_a_kernel_kept_from_a_cpu_by_a_busy_machine_is_not_stopped_as_idle(monkeypatch):
    monkeypatch.setattr(client, "CPU_POLL_SECONDS", 0)
    started = time.monotonic()
    # It uses no CPU time, but waits for a CPU all along (and so does the grader).
    deadline = client.Deadline(0.05, lambda: (1234, 0.0), lambda pid: time.monotonic() - started)
    time.sleep(0.3)  # six times the limit, 1.5 times the idle backstop
    assert not deadline.passed()
    time.sleep(client.MAX_WALL_FACTOR * 0.05)  # however busy the machine, a wait ends
    assert deadline.passed()


def test_a_kernel_that_waits_idle_beside_a_busy_clock_of_none_is_stopped(monkeypatch):
    monkeypatch.setattr(client, "CPU_POLL_SECONDS", 0)
    deadline = client.Deadline(0.05, lambda: (1234, 0.0), lambda pid: None)
    time.sleep(client.WALL_FACTOR * 0.05 + 0.05)
    assert deadline.passed()


def test_a_paused_deadline_counts_nothing_of_the_block(monkeypatch):
    monkeypatch.setattr(client, "CPU_POLL_SECONDS", 0)
    cpu = [0.0]
    deadline = client.Deadline(0.1, lambda: (1234, cpu[0]))
    with deadline.paused():
        cpu[0] += 5.0  # the grader's own request: its CPU time and its time on the clock
        time.sleep(client.WALL_FACTOR * 0.1 + 0.05)
    assert not deadline.passed()
    cpu[0] += 0.2
    assert deadline.passed()


def test_the_busy_clock_reads_a_process_and_is_none_once_it_has_gone():
    from course.grading.kernels import cpu_time

    assert cpu_time.busy_seconds(os.getpid()) > 0
    assert cpu_time.busy_seconds(2**22 + 1) is None  # above any process id Linux gives
