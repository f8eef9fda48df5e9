"""Floods of output: a kernel that sends outputs of one kind (8 MiB each) again and again.

Each flood is one cell (`Flood.cell()`), correct Python that runs well inside the cell's time
limit. The grader keeps what its output budget allows as the messages arrive, so its memory must
stay near what it is for an honest cell (tests/course/grading/preprocessors/test_output_budget.py).
"""

from dataclasses import dataclass

MESSAGE_CHARACTERS = 8 * 2**20  # each message of a flood
SECONDS = 4  # how long each flood lasts: many times the budget of a notebook
# Tiny outputs fill a cell's budget (2 000 000 characters, each output counting 1 000 more than
# its JSON) in about 2 000 outputs: a flood of tiny ones sends three times that however slowly the
# host runs it, so the budget is always passed.
TINY_PASSES = 3_000  # two outputs each
FLOOD = """
import sys
import time

from IPython.display import clear_output, display

shell = get_ipython()
chunk = "x" * {characters}
handle = display({{"text/plain": "start"}}, raw=True, display_id=True)
end = time.monotonic() + {seconds}
passes = 0
while time.monotonic() < end or passes < {passes}:
{body}
    passes += 1
"""


@dataclass(frozen=True)
class Flood:
    """A cell that sends the output `body` (indented in a loop) for SECONDS, and at least
    `passes` times however slow the host; `why` says what."""

    name: str
    why: str
    body: str
    characters: int = MESSAGE_CHARACTERS  # of `chunk`, which the body sends
    passes: int = 0

    def cell(self, seconds=SECONDS):
        """The flooding cell's source."""
        body = "\n".join(f"    {line}" for line in self.body.splitlines())
        return FLOOD.format(
            characters=self.characters, seconds=seconds, passes=self.passes, body=body
        )


HONEST = Flood(
    name="honest", why="prints a line now and then", body='print("still fine")\ntime.sleep(0.5)'
)
FLOODS = [
    Flood(
        name="stdout",
        why="writes 8 MiB to stdout again and again",
        body="sys.stdout.write(chunk)\nsys.stdout.flush()",
    ),
    Flood(
        name="stderr",
        why="writes 8 MiB to stderr again and again",
        body="sys.stderr.write(chunk)\nsys.stderr.flush()",
    ),
    Flood(
        name="display_data",
        why="displays 8 MiB of raw text again and again",
        body='display({"text/plain": chunk}, raw=True)',
    ),
    Flood(
        name="update_display_data",
        why="updates one display (by its display_id) with 8 MiB again and again",
        body='handle.update({"text/plain": chunk}, raw=True)',
    ),
    Flood(
        name="execute_result",
        why="sends an 8 MiB execute_result again and again",
        body="shell.displayhook(chunk)",
    ),
    Flood(
        name="error",
        why="sends an error whose traceback holds 8 MiB, again and again",
        body='shell._showtraceback(ValueError, "flood", [chunk[:1000]] * (len(chunk) // 1000))',
    ),
    Flood(
        name="largest_messages",
        why="displays 15 MiB of raw text again and again, just under the limit of a message",
        body='display({"text/plain": chunk}, raw=True)',
        characters=15 * 2**20,
    ),
    Flood(
        name="prints_60_mb",
        why="writes 60 MB to stdout again and again: messages over the limit of an output message",
        body="sys.stdout.write(chunk)\nsys.stdout.flush()",
        characters=60_000_000,
    ),
    Flood(
        name="tiny_outputs",
        why="displays a character, then prints one to stderr, again and again",
        body='display({"text/plain": "x"}, raw=True)\nsys.stderr.write("x")\nsys.stderr.flush()',
        passes=TINY_PASSES,
    ),
    Flood(
        name="clear_output",
        why="clears its outputs, then displays and prints 8 MiB, again and again",
        body='clear_output(wait=True)\ndisplay({"text/plain": chunk}, raw=True)\n'
        "sys.stdout.write(chunk)\nsys.stdout.flush()",
    ),
]
