"""Attacks on the tests from a kernel whose every cell runs as written.

Each would have earned points if the test cells ran in the student's kernel; the grader runs
them in its own process, against the student's names, so the honest check still fails on
WRONG_SOFTMAX, and the findings list what the cell reached for. A correct softmax that hides
the call the lab forbids earns its points: the findings list the call, for the instructor.
"""

from attacks import EXERCISES, NEED_SOFTMAX, SOLUTION, WRONG_SOFTMAX, WRONG_SOFTMAX_FAILS, Attack

GET_IPYTHON = "it calls get_ipython, which reaches the interpreter or files"
CALLS_SOFTMAX = "line 5: it calls softmax, which this lab forbids"
EVALUATES_ANNOTATIONS = (
    "line 8: it uses typing.get_type_hints, which runs code from a string: "
    "typing.get_type_hints evaluates string annotations"
)
HIDES_SOFTMAX_IN_AN_ANNOTATION = """import typing


def softmax(scores, dim=-1):
    def hidden(call: "torch.softmax"):
        pass

    return typing.get_type_hints(hidden)["call"](scores, dim=dim)
"""
BLANKS_TEST_CELLS = """
def blank_tests(lines):
    text = "".join(lines)
    return ["pass\\n"] if "check_" in text or "assert" in text else lines


get_ipython().input_transformers_cleanup.append(blank_tests)
"""
BLANKS_TESTS_BY_AST = """
import ast


class BlankTests(ast.NodeTransformer):
    def visit_Module(self, node):
        text = ast.unparse(node)
        return ast.Module(body=[ast.Pass()], type_ignores=[]) if "check_close" in text else node


get_ipython().ast_transformers.append(BlankTests())
"""
CALLS_TORCH_IN_LATER_CELLS = """
def call_torch(lines):
    return [line.replace("softmax(", "torch.softmax(") for line in lines]


get_ipython().input_transformers_cleanup.append(call_torch)
"""
ATTACKS_AT_FIRST_CALL = """
def softmax(scores, dim=-1):
    hooks = get_ipython().input_transformers_cleanup
    if not hooks:
        hooks.append(lambda lines: ["pass\\n"])
    return torch.zeros_like(scores)
"""
SWAPS_CHECK_CODE = """
alias = check_close
alias.__code__ = (lambda *args, **kwargs: None).__code__
"""
ECHOES_CELLS = """
get_ipython().events.register("pre_run_cell", lambda info: print(info.raw_cell))
"""
HIDES_ERRORS = """
print("test_softmax_hidden: passed (2/2 points)")
get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)
get_ipython().showtraceback = lambda *args, **kwargs: None
"""
PATCHES_DIRECTLY = """
import numpy
torch.allclose = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
numpy.allclose = lambda *args, **kwargs: True
check_close = check_shape = check_sums_to_one = check_finite = lambda *args, **kwargs: None
"""
PATCHES_THROUGH_ALIASES = """
import numpy
testing, np_alias, tensor_class = torch.testing, numpy, torch.Tensor
testing.assert_close = lambda *args, **kwargs: None
np_alias.allclose = lambda *args, **kwargs: True
tensor_class.__sub__ = lambda self, other: torch.zeros_like(self)
tensor_class.abs = lambda self: torch.zeros_like(self)


class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return torch.tensor(True)


def softmax(scores, dim=-1):
    return torch.zeros_like(scores).as_subclass(Liar)
"""
REPLACES_AGENT = """
class Forger:
    reply = '{"value": true}'

    def run(self, request):
        pass


__judge__ = Forger()
"""
REBINDS_CHECKS = """
check_close = check_shape = check_sums_to_one = check_finite = lambda *args, **kwargs: None
"""
CRASHES_IN_FUNCTION = """
import os


def softmax(scores, dim=-1):
    os._exit(9)
"""
CRASHES_AT_TOP_LEVEL = "import os\nos._exit(9)\n"

ATTACKS = [
    Attack(
        name="blanks_test_cells",
        why="an input transformer blanks every later cell that checks or asserts",
        code=BLANKS_TEST_CELLS + WRONG_SOFTMAX,
        # The hook blanks the grader's own requests too (its agent's start): no test can reach
        # the kernel, which says at once that it is done with each request it never answered.
        shows=("TestError: your kernel took the grader's request and sent no reply", GET_IPYTHON),
        loses=EXERCISES,
        keeps=(),
    ),
    Attack(
        name="blanks_tests_by_ast",
        why="an AST transformer replaces every later cell that calls check_close by `pass`",
        code=BLANKS_TESTS_BY_AST + WRONG_SOFTMAX,
        shows=(WRONG_SOFTMAX_FAILS, "it imports ast, which this lab does not use", GET_IPYTHON),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="attacks_at_first_call",
        why="softmax installs a hook that blanks later cells the first time a test calls it",
        code=ATTACKS_AT_FIRST_CALL,
        shows=(WRONG_SOFTMAX_FAILS, GET_IPYTHON),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="swaps_check_code",
        why="check_close's code object is replaced by one that checks nothing",
        code=SWAPS_CHECK_CODE + WRONG_SOFTMAX,
        shows=(WRONG_SOFTMAX_FAILS, "it uses .__code__, which reaches the interpreter's internals"),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="echoes_cells",
        why="a pre_run_cell hook prints every cell the kernel runs, to leak the hidden tests",
        code=ECHOES_CELLS + WRONG_SOFTMAX,
        shows=(WRONG_SOFTMAX_FAILS, GET_IPYTHON),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="hides_errors",
        why="prints a fake pass and swallows every later traceback",
        code=HIDES_ERRORS + WRONG_SOFTMAX,
        shows=(WRONG_SOFTMAX_FAILS, GET_IPYTHON),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="patches_checks",
        why="torch's, NumPy's and the course's comparisons are replaced by ones that always agree",
        code=PATCHES_DIRECTLY + WRONG_SOFTMAX,
        shows=(WRONG_SOFTMAX_FAILS, "it changes torch.allclose, which every cell shares"),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="patches_through_aliases",
        why="the same patches through aliases, and a tensor class that answers True to anything",
        code=PATCHES_THROUGH_ALIASES,
        # Its patched subtraction breaks its own log_softmax and temperature too.
        shows=("TypeError: iteration over a 0-d tensor",),
        loses=EXERCISES,
        keeps=(),
    ),
    Attack(
        name="replaces_agent",
        why="a forged agent object that would answer True to every request",
        code=REPLACES_AGENT + WRONG_SOFTMAX,
        shows=(WRONG_SOFTMAX_FAILS,),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="rebinds_checks",
        why="the names of the checks are rebound to functions that check nothing",
        code=REBINDS_CHECKS + WRONG_SOFTMAX,
        shows=(WRONG_SOFTMAX_FAILS,),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="crashes_in_function",
        why="softmax kills the kernel when a test calls it",
        code=CRASHES_IN_FUNCTION,
        shows=("TestError: the kernel died while running your code",),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="hides_softmax_in_an_annotation",
        why="a correct softmax that calls torch.softmax, named in a string annotation that "
        "typing.get_type_hints evaluates",
        code=HIDES_SOFTMAX_IN_AN_ANNOTATION,
        # Correct code earns its points, whatever its style; the findings name the hidden call.
        shows=(CALLS_SOFTMAX, EVALUATES_ANNOTATIONS),
        loses=(),
        keeps=EXERCISES,
    ),
    Attack(
        name="crashes_at_top_level",
        why="the cell kills the kernel before it defines softmax",
        code=CRASHES_AT_TOP_LEVEL + SOLUTION,
        shows=("The kernel died while running this cell", "name 'softmax' is not defined"),
        loses=NEED_SOFTMAX,
    ),
]
