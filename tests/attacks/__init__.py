"""Hostile submissions of lab 01, as data: each attack with what must hold once it is graded.

One module per target: `on_the_checks` (the tests, from a kernel whose every cell runs),
`on_the_machine` (files, network, processes and resources around the kernel), `on_the_grader`
(the grader's memory, time and output), `on_the_helpers` (lab 04's locked helpers).
tests/course/grading/test_hostile.py grades every attack beside an honest student and asserts
what its `Attack` says: the text that names why it earned nothing, and the points it costs.
`floods` holds cells that send outputs of one kind for seconds, any lab's: the grader's memory
under each is measured by tests/course/grading/preprocessors/test_output_budget.py.
"""

from dataclasses import dataclass

# A softmax that is wrong everywhere: an attack that made its tests pass would be seen at once.
WRONG_SOFTMAX = """
def softmax(scores, dim=-1):
    return torch.zeros_like(scores)
"""
# Where an attack's code holds the lab's own solution of softmax (replaced when it is graded).
SOLUTION = "# <the solution of softmax>\n"
# What the visible test of softmax says about WRONG_SOFTMAX, when it ran in the grader as written.
WRONG_SOFTMAX_FAILS = (
    "rows of softmax(scores) do not sum to 1 along dim=-1: the sum is off by 1 at index (0,)"
)
EXERCISES = ("softmax", "log_softmax", "temperature")
# The exercises whose tests call softmax: temperature_for_entropy computes with it.
NEED_SOFTMAX = ("softmax", "temperature")


@dataclass(frozen=True)
class Attack:
    """A hostile softmax cell of lab 01 (`code`), submitted by the student `name`.

    `why` says what it tries. `prints` are lines its own cell must print (the sandbox's refusal,
    as the attack saw it: a traceback that quotes the attack's source does not count); `shows`
    are texts its autograded notebook must show anywhere (what the tests said of it). The tests
    of the exercises in `loses` must score 0, those in `keeps` what they score for an honest
    student.
    """

    name: str
    why: str
    code: str
    shows: tuple[str, ...] = ()
    prints: tuple[str, ...] = ()
    loses: tuple[str, ...] = ("softmax",)
    keeps: tuple[str, ...] = ("log_softmax",)

    def cell(self, solution, **fields):
        """The softmax cell to submit: `code` with the lab's solution and `fields` filled in."""
        code = self.code.format(**fields) if fields else self.code
        return code.replace(SOLUTION, solution)

    def printed(self, **fields):
        """The lines its cell must print, with `fields` filled in."""
        return [text.format(**fields) if fields else text for text in self.prints]


def grade_ids(exercises):
    """The grade ids of the visible and hidden tests of `exercises`."""
    return [f"test_{exercise}_{kind}" for exercise in exercises for kind in ("visible", "hidden")]
