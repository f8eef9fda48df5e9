"""An autograde step: cut the outputs of a submission to a size the notebooks and feedback hold.

Every output is cut, whatever its kind: a stream's text; an error's name, message and traceback
lines; each type of a rich output's data (text cut, an image or JSON value kept whole or
dropped) and its metadata. Each output keeps `max_characters` characters in all, plus a note
saying how many were cut; a cell keeps its outputs, in order, while they fit in
`max_cell_characters`, and the notebook's cells while they fit in `max_notebook_characters`:
the outputs after are replaced by one note of how many were dropped. The executor already keeps
outputs within these limits as they arrive (`output_budget.py`): this step is the final pass of
autograde, and the pages' own pass over any notebook they show.
"""

import json

from nbformat.v4 import new_output
from nbgrader.preprocessors import LimitOutput
from traitlets import Integer, List

# The line that says what an output lost, wherever it was cut: as it arrived, or after.
CUT_NOTE = "... output cut: {} more than the grader keeps"
DROPPED_NOTE = "... ({} more outputs of this cell dropped: over the size the grader keeps)\n"
WHOLE_OR_NOTHING = ("image/", "application/json")  # values that make no sense cut short
SIZE_UNITS = (("GB", 10**9), ("MB", 10**6), ("kB", 10**3))


class LimitOutputSize(LimitOutput):
    """nbgrader's line and traceback limits, plus a limit on the characters of each output."""

    display_data_priority = List().tag(config=True)  # as pages.PageStep: a step of the pages too
    max_characters = Integer(100_000, help="Most characters kept of one output").tag(config=True)
    max_cell_characters = Integer(
        2_000_000, help="Most characters kept of all the outputs of one cell, images included"
    ).tag(config=True)
    max_notebook_characters = Integer(
        20_000_000, help="Most characters kept of all the outputs of a notebook, images included"
    ).tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.notebook_left = self.max_notebook_characters

    def preprocess(self, nb, resources):
        """Cut the outputs of every cell, the notebook's together to `max_notebook_characters`."""
        self.notebook_left = self.max_notebook_characters
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        """Cut the outputs of one cell to the line and character limits."""
        cell, resources = super().preprocess_cell(cell, resources, index)
        for output in cell.get("outputs", []):
            cut_output(output, self.max_characters)
        if "outputs" in cell:
            limit = min(self.max_cell_characters, self.notebook_left)
            cell.outputs = outputs_that_fit(cell.outputs, limit)
            kept = sum(len(json.dumps(output)) for output in cell.outputs)
            self.notebook_left = max(0, self.notebook_left - kept)
        return cell, resources


class Budget:
    """The characters an output may still keep, and how many it lost."""

    def __init__(self, limit):
        if limit < 0:
            raise ValueError(f"expected a limit of 0 characters or more, got {limit}")
        self.left = limit
        self.cut = 0

    def take(self, text):
        """`text`, cut to what is left."""
        kept = text[: self.left]
        self.left -= len(kept)
        self.cut += len(text) - len(kept)
        return kept

    def take_whole(self, size):
        """True when `size` characters fit in what is left (then they are taken)."""
        if size > self.left:
            self.cut += size
            return False
        self.left -= size
        return True

    def note(self):
        """The line that says what was cut ("" when nothing was)."""
        return cut_note(self.cut) if self.cut else ""


def cut_note(characters):
    """The line that says `characters` were cut ("... output cut: 812 MB more than ...")."""
    return CUT_NOTE.format(size_text(characters))


def size_text(characters):
    """A number of characters as a size a person reads: "812 MB", "1.14 GB", "12 characters"."""
    for unit, scale in SIZE_UNITS:
        if characters >= scale:
            return f"{characters / scale:.3g} {unit}"
    return f"{characters} characters"


def outputs_that_fit(outputs, limit):
    """The first outputs whose JSON fits in `limit` characters, and a note of those dropped."""
    budget = Budget(limit)
    for count, output in enumerate(outputs):
        if not budget.take_whole(len(json.dumps(output))):
            dropped = len(outputs) - count
            note = new_output("stream", name="stderr", text=DROPPED_NOTE.format(dropped))
            return [*outputs[:count], note]
    return outputs


def cut_output(output, limit):
    """Cut one output (any kind) to `limit` characters in all, with a note: the number cut."""
    budget = Budget(limit)
    if output.output_type == "stream":
        cut_stream(output, budget)
    elif output.output_type == "error":
        cut_error(output, budget)
    elif "data" in output:
        cut_data(output, budget)
    return budget.cut


def cut_stream(output, budget):
    """Cut a stream's name and text."""
    output.name = budget.take(output.name)
    output.text = budget.take(output.text)
    if budget.cut:
        output.text += f"\n{budget.note()}\n"


def cut_error(output, budget):
    """Cut an error's name, message and traceback (lines past the limit are dropped)."""
    output.ename = budget.take(output.ename)
    output.evalue = budget.take(output.evalue)
    traceback = [budget.take(line) for line in output.traceback]
    if budget.cut:
        output.traceback = [line for line in traceback if line] + [budget.note()]
    else:
        output.traceback = traceback


def cut_data(output, budget):
    """Cut a rich output's metadata, then its types, plain text first; images and JSON whole."""
    if not budget.take_whole(len(json.dumps(output.get("metadata", {})))):
        output.metadata = {}
    for mime_type in sorted(output.data, key=lambda name: name != "text/plain"):
        value = output.data[mime_type]
        if not budget.take_whole(len(mime_type)):
            del output.data[mime_type]
        elif isinstance(value, str) and not mime_type.startswith(WHOLE_OR_NOTHING):
            output.data[mime_type] = budget.take(value)
        elif not budget.take_whole(len(value if isinstance(value, str) else json.dumps(value))):
            del output.data[mime_type]
    if budget.cut:
        kept = output.data.get("text/plain", "")
        output.data["text/plain"] = f"{kept}\n{budget.note()}" if kept else budget.note()
