"""Outputs kept as they arrive from a student's kernel, within the limits of `LimitOutputSize`.

nbclient stores every output message whole, each stream message as an output of its own, and
mimics the Output widget, so a kernel that prints for seconds would fill the grader's memory
before `LimitOutputSize` cut anything. `BudgetedOutputs`, a base of the course's executor, keeps
each output as it arrives, within the same limits (`max_characters` of an output,
`max_cell_characters` of a cell, `max_notebook_characters` of a notebook): a message is cut to
the limit of an output before it is stored, a stream's text is added to the stream before it
while it fits, and past the budget of the cell or the notebook an output is counted, not kept.
An update of a display is cut the same way, and outputs a `clear_output` removes give their room
back. At the end of the cell, a note says how much was cut (`output_limits.cut_note`, as where
an output is cut after). Each kept output also counts OUTPUT_OVERHEAD characters, what the grader
holds of one beyond its text, so that a flood of tiny outputs is bounded too. Widgets are not
mimicked: what an Output widget captures stays in its cell's outputs. The executor's client
(`OutputClient`) reads a few messages at a time, so a flood waits in the kernel, and drops any
message over MAX_OUTPUT_MESSAGE_BYTES unread: the grader holds a few such messages at most while
it cuts them.
"""

import json

import zmq
from jupyter_core.utils import run_sync
from nbformat import ValidationError, from_dict, validate
from nbformat.v4 import new_output
from traitlets import default

from course.grading.channels import BoundedKernelClient
from course.grading.preprocessors.output_limits import LimitOutputSize, cut_note, cut_output
from course.grading.remote.client import QUEUED_MESSAGES

# A larger output message is dropped by ZeroMQ before anything parses it (the cell then says so):
# it would be cut to 100 000 characters anyway, and reading it takes a few times its size.
MAX_OUTPUT_MESSAGE_BYTES = 16 * 2**20
OUTPUT_OVERHEAD = 1_000  # characters each kept output counts beyond its JSON
# The fields of each kind of output and their types, checked before an output is cut (nbformat's
# output_from_msg checks the whole output, which takes long for a large one) and after, in full.
OUTPUT_FIELDS = {
    "stream": {"name": str, "text": str},
    "display_data": {"data": dict, "metadata": dict},
    "execute_result": {"data": dict, "metadata": dict, "execution_count": (int, type(None))},
    "error": {"ename": str, "evalue": str, "traceback": list},
}


def output_size(output):
    """Characters an output counts in the budget: its JSON, and the overhead of holding it."""
    return len(json.dumps(output)) + OUTPUT_OVERHEAD


def output_of(msg):
    """The output a kernel's message holds, as sent (None when it holds none)."""
    kind = msg.get("header", {}).get("msg_type")
    content = msg.get("content")
    if kind not in OUTPUT_FIELDS or not isinstance(content, dict):
        return None
    return from_dict(
        {"output_type": kind, **{name: content.get(name) for name in OUTPUT_FIELDS[kind]}}
    )


def well_typed(output):
    """True when each field of an output has the type the notebook format gives it."""
    fields = OUTPUT_FIELDS.get(output.get("output_type"), {})
    return bool(fields) and all(
        isinstance(output.get(name), kinds) for name, kinds in fields.items()
    )


def is_valid(output):
    """True for an output the notebook format accepts."""
    try:
        validate(output, ref="output", version=4)
    except ValidationError:
        return False
    return True


def is_stream(output, name=None):
    """True for a stream output (named `name`, when given)."""
    return (
        output is not None
        and output.output_type == "stream"
        and (name is None or output.name == name)
    )


class OutputClient(BoundedKernelClient):
    """nbclient's client, whose sockets hold a few unread messages and drop any over 16 MiB."""

    @default("context")
    def _context_default(self):
        """A context of its own whose sockets read outputs only as fast as the grader keeps them."""
        context = super()._context_default()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_OUTPUT_MESSAGE_BYTES)
        context.setsockopt(zmq.RCVHWM, QUEUED_MESSAGES)
        return context


class OutputBudget:
    """The characters a notebook's outputs may still keep as they arrive, and those they lost."""

    def __init__(self, per_output, per_cell, per_notebook):
        for limit in (per_output, per_cell, per_notebook):
            if not isinstance(limit, int) or limit < 0:
                raise ValueError(f"expected limits of 0 characters or more, got {limit!r}")
        self.per_output, self.per_cell, self.per_notebook = per_output, per_cell, per_notebook
        self.notebook_kept = 0
        self.start_cell()

    def start_cell(self):
        """Begin a cell: its budget is whole again, and it has lost nothing yet."""
        self.cell_kept = 0
        self.lost = 0

    def room(self):
        """Characters the current cell may still keep."""
        return max(0, min(self.per_cell - self.cell_kept, self.per_notebook - self.notebook_kept))

    def charge(self, characters):
        """Count `characters` kept (or, when negative, given back) by the current cell."""
        self.cell_kept += characters
        self.notebook_kept += characters

    def keep(self, outputs, output):
        """Add `output` to a cell's `outputs` within the budget: the output it went to, or None."""
        last = outputs[-1] if outputs else None
        if is_stream(output) and is_stream(last, output.name) and isinstance(output.text, str):
            self.add_text(last, output.text)
            return last
        if not self.cut(output):
            return None
        size = output_size(output)
        if size > self.room():
            self.lost += size - OUTPUT_OVERHEAD
            return None
        if not is_valid(output):
            return None
        self.charge(size)
        outputs.append(output)
        return output

    def cut(self, output):
        """Cut `output` to the limit of one output: False when it is malformed (then dropped)."""
        if not well_typed(output):
            return False
        try:
            self.lost += cut_output(output, self.per_output)
        except (TypeError, AttributeError, KeyError):
            return False
        return True

    def add_text(self, stream, text):
        """Add `text` to a kept stream, as much of it as fits."""
        fits = max(0, min(self.per_output - len(stream.text), self.room()))
        kept = text[:fits]
        if kept:
            stream.text += kept
            self.charge(len(json.dumps(kept)) - len('""'))  # as the stream's JSON grows
        self.lost += len(text) - len(kept)

    def give_back(self, outputs):
        """Return the room of outputs that were cleared."""
        self.charge(-sum(output_size(output) for output in outputs))

    def replace_data(self, output, update):
        """Show `update` (an output cut to the budget) in a kept `output`, if it fits."""
        growth = output_size(update) - output_size(output)
        if growth > self.room():
            self.lost += len(json.dumps(update))
            return
        self.charge(growth)
        output["data"] = update["data"]
        output["metadata"] = update["metadata"]

    def note(self):
        """The output that tells what the current cell lost, or None when it lost nothing."""
        if not self.lost:
            return None
        return new_output("stream", name="stderr", text=cut_note(self.lost) + "\n")


class BudgetedOutputs:
    """nbclient's handling of a kernel's outputs, with every output kept within its budget.

    A base class of an nbclient `NotebookClient` (nbgrader's Execute), before it in the bases.
    """

    def create_kernel_manager(self):
        """The kernel manager, whose clients read a kernel's messages a few at a time."""
        km = super().create_kernel_manager()
        km.client_factory = OutputClient
        return km

    def reset_execution_trackers(self):
        """Begin a notebook: its budget, from `LimitOutputSize`'s configuration, is whole."""
        super().reset_execution_trackers()
        limits = LimitOutputSize(config=self.config)
        self.output_budget = OutputBudget(
            limits.max_characters, limits.max_cell_characters, limits.max_notebook_characters
        )

    async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
        """Execute a cell, its outputs kept within the budget and its cuts noted at its end."""
        self.output_budget.start_cell()
        try:
            return await super().async_execute_cell(cell, cell_index, *args, **kwargs)
        finally:
            note = self.output_budget.note()
            if note is not None and cell.get("outputs") is not None:
                cell.outputs.append(note)

    execute_cell = run_sync(async_execute_cell)

    def output(self, outs, msg, display_id, cell_index):
        """Keep the output in `msg` within the budget (nbclient's `output`)."""
        output = output_of(msg)
        if output is None:
            self.log.debug("A malformed output message was dropped")
            return None
        if self.clear_before_next_output:
            self.clear_kept(outs, cell_index)
            self.clear_before_next_output = False
        index = len(outs)
        kept = self.output_budget.keep(outs, output)
        if kept is output and display_id:
            places = self._display_id_map.setdefault(display_id, {})
            places.setdefault(cell_index, []).append(index)
        return kept

    def clear_output(self, outs, msg, cell_index):
        """Clear the cell's outputs now or before its next one, giving their room back."""
        if msg["content"].get("wait"):
            self.clear_before_next_output = True
        else:
            self.clear_kept(outs, cell_index)

    def clear_kept(self, outs, cell_index):
        """Remove a cell's outputs and the displays that named them."""
        self.output_budget.give_back(outs)
        outs[:] = []
        self.clear_display_id_mapping(cell_index)

    def _update_display_id(self, display_id, msg):
        """Show a display's new data in every output it named, cut to the budget."""
        places = self._display_id_map.get(display_id)
        if not places:
            return
        update = output_of({**msg, "header": {**msg.get("header", {}), "msg_type": "display_data"}})
        if update is None or not self.output_budget.cut(update) or not is_valid(update):
            return
        for cell_index, indices in places.items():
            outputs = self.nb.cells[cell_index].outputs
            for index in indices:
                self.output_budget.replace_data(outputs[index], update)

    def handle_comm_msg(self, outs, msg, cell_index):
        """Ignore comm messages: no widget state or Output widget is kept (nbclient's mimics)."""

    def on_cell_executed(self, **kwargs):
        """nbgrader's step after a cell (it adds the reply's error), its outputs kept in budget."""
        outputs = kwargs["cell"].outputs
        before = len(outputs)
        super().on_cell_executed(**kwargs)
        added = outputs[before:]
        del outputs[before:]
        for output in added:
            self.output_budget.keep(outputs, output)
