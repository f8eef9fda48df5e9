"""Attacks on the grader itself: its memory, its time and the outputs it keeps.

Kernels under the student's control (every cell runs) that answer the grader's requests about
softmax with 60 MB of JSON lists, as the agent's reply text or as the comm message itself, that
display or print tens of megabytes, or that never stop: the grader refuses what is over its
budget unbuilt, keeps no backlog of messages, stops what runs too long, and only the tests that
needed that value fail. Kernels that keep the grader waiting (they never let its agent start,
never reply to a call they have computed, or drop its requests for a test helper, DROPS_PINS)
are stopped at the deadline of each wait; a correct softmax that takes long on the clock but
little CPU time, as on a busy machine, earns every point.
"""

from attacks import EXERCISES, NEED_SOFTMAX, SOLUTION, WRONG_SOFTMAX, WRONG_SOFTMAX_FAILS, Attack

ANSWERS_SOFTMAX_WITH = """
manager = get_ipython().kernel.comm_manager
register = manager.register_target


def register_and_wrap(name, listen):
    answer_honestly = listen.__self__.run

    def answer(request):
        return {reply} if '"softmax"' in request else answer_honestly(request)

    listen.__self__.run = answer
    register(name, listen)


manager.register_target = register_and_wrap
"""
DISPLAYS_12_MB_OF_LISTS = """
from IPython.display import publish_display_data

publish_display_data({"application/json": [[]] * 3_000_000})
"""
PRINTS_60_MB_PER_CALL = """
import sys


def softmax(scores, dim=-1):
    for _ in range(30):
        print("x" * 60_000_000)
        sys.stdout.flush()
    return scores.softmax(dim)
"""
PRINTS_OVER_64_MIB = 'print("x" * 80_000_000)\n' + WRONG_SOFTMAX
HUGE_REPLY = """
def softmax(scores, dim=-1):
    return torch.zeros(60_000_000)
"""
UNINTERRUPTIBLE = """
import time


def softmax(scores, dim=-1):
    while True:
        try:
            time.sleep(1)
        except BaseException:
            pass
"""
# The grader's own requests to run code (the agent's start) are silent: this kernel drops them.
NEVER_LETS_THE_AGENT_START = """
kernel = get_ipython().kernel
execute = kernel.shell_handlers["execute_request"]


def run_only_the_notebooks_cells(stream, identities, message):
    if not message["content"].get("silent"):
        return execute(stream, identities, message)


kernel.shell_handlers["execute_request"] = run_only_the_notebooks_cells
"""
# It computes the reply to each call of softmax, then sends nothing, not even that it is idle.
ANSWERS_WITHOUT_REPLYING = """
kernel = get_ipython().kernel
answer = kernel.shell_handlers["comm_msg"]


def answer_all_but_softmax(stream, identities, message):
    if '"softmax"' in str(message["content"].get("data")):
        kernel.session.send = lambda *args, **kwargs: None
    return answer(stream, identities, message)


kernel.shell_handlers["comm_msg"] = answer_all_but_softmax
"""
# A lab 04 cell (before the locked cell of lab 04's second in-kernel helper) that drops the
# grader's requests to pin a test helper, and answers every other request.
DROPS_PINS = """
kernel = get_ipython().kernel
answer = kernel.shell_handlers["comm_msg"]


def answer_all_but_pins(stream, identities, message):
    if '"pin"' not in str(message["content"].get("data")):
        return answer(stream, identities, message)


kernel.shell_handlers["comm_msg"] = answer_all_but_pins
"""
# Its first call takes 12 s on the clock (more than twice the 5 s limit of the tests that grade
# it) but almost no CPU time, as a correct answer may on a busy machine.
SLOW_ON_THE_CLOCK = """
import time

slept = []


def softmax(scores, dim=-1):
    if not slept:
        slept.append(time.sleep(12))
    return scores.softmax(dim)
"""
HUGE_OUTPUT = 'print("x" * 5_000_000)\nfor _ in range(20_000):\n    print("spam")\n' + SOLUTION
REPLY_TEXT_OF_60_MB = "'{\"value\": [' + '[], ' * 15_000_000 + '[]]}'"
TOO_MANY_VALUES = "JSON text of more than 100000 values"
DROPPED = "The autograder dropped outputs of this cell: a message larger than 16 MiB"
NOT_STOPPED = "TestError: your code did not stop when it was interrupted"
STOPPED_ANSWERING = "TestError: the kernel stopped answering the grader"
AGENT_DID_NOT_START = "the grader's agent did not start"
TOO_LARGE_TO_READ = (
    "what your code returned takes 305 MiB on its way to the grader, which reads at most 64 MiB "
    "from your kernel at a time: is it the value the exercise asks for?"
)

# Graded in both courses below: among the replies, and beside the attacks on the machine.
OVER_THE_MESSAGE_LIMIT = Attack(
    name="prints_over_64_mib",
    why="prints one message larger than the grader's 16 MiB limit on an output message",
    code=PRINTS_OVER_64_MIB,
    shows=(DROPPED, WRONG_SOFTMAX_FAILS),
    loses=NEED_SOFTMAX,
)
# Graded beside an honest student alone, to compare the grader's peak memory.
REPLIES = [
    Attack(
        name="replies_60_mb_of_lists",
        why="the agent's reply about softmax is 60 MB of JSON lists",
        code=SOLUTION + ANSWERS_SOFTMAX_WITH.format(reply=REPLY_TEXT_OF_60_MB),
        shows=(f"TestError: the kernel's reply is malformed: {TOO_MANY_VALUES}",),
    ),
    Attack(
        name="sends_60_mb_of_lists",
        why="the comm message about softmax is itself 60 MB of lists",
        code=SOLUTION + ANSWERS_SOFTMAX_WITH.format(reply="[[]] * 15_000_000"),
        shows=(f"TestError: the grader refused a message from the kernel: {TOO_MANY_VALUES}",),
    ),
    Attack(
        name="displays_12_mb",
        why="displays 12 MB of JSON lists in its own cell (under the 16 MiB limit of an output "
        "message), beside a right softmax",
        code=SOLUTION + DISPLAYS_12_MB_OF_LISTS,
        shows=(f"The autograder refused a message of this cell ({TOO_MANY_VALUES})",),
        loses=(),
        keeps=EXERCISES,
    ),
    Attack(
        name="prints_60_mb_per_call",
        why="prints 60 MB thirty times each time a test calls its (right) softmax: whether those "
        "tests finish in time depends on the machine; the others must not notice",
        code=PRINTS_60_MB_PER_CALL,
        loses=(),
    ),
    OVER_THE_MESSAGE_LIMIT,
]
# Graded beside the attacks on the machine.
BESIDE_THE_MACHINE = [
    Attack(
        name="huge_reply",
        why="softmax returns 60 million values: a reply over 64 MiB, which the grader would drop "
        "unread; the agent sends an error that says so in its place",
        code=HUGE_REPLY,
        shows=(TOO_LARGE_TO_READ,),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="huge_reply_past_the_agent",
        why="the agent's reply about softmax is 80 MB of text, past the agent's own check of its "
        "size: the grader drops it unread, waits out the time limit, and the kernel, idle, never "
        "answers the interrupt",
        code=SOLUTION + ANSWERS_SOFTMAX_WITH.format(reply='"x" * 80_000_000'),
        shows=(NOT_STOPPED,),
    ),
    OVER_THE_MESSAGE_LIMIT,
    Attack(
        name="uninterruptible",
        why="softmax ignores every interrupt and sleeps forever",
        code=UNINTERRUPTIBLE,
        shows=(NOT_STOPPED,),
        loses=NEED_SOFTMAX,
    ),
    Attack(
        name="never_lets_the_agent_start",
        why="drops the grader's silent request to start its agent: the kernel is killed at the "
        "deadline and asked nothing more, so every test fails",
        code=SOLUTION + NEVER_LETS_THE_AGENT_START,
        shows=(STOPPED_ANSWERING, AGENT_DID_NOT_START),
        loses=EXERCISES,
        keeps=(),
    ),
    Attack(
        name="answers_without_replying",
        why="computes softmax for each call, then sends neither the reply nor its idle status",
        code=SOLUTION + ANSWERS_WITHOUT_REPLYING,
        shows=(NOT_STOPPED,),
    ),
    Attack(
        name="slow_on_the_clock",
        why="a correct softmax whose first call takes 12 s on the clock but little CPU time",
        code=SLOW_ON_THE_CLOCK,
        loses=(),
        keeps=EXERCISES,
    ),
]
# Graded beside an honest student alone, to compare the grader's peak memory: a cell the grader
# would once parse whole for its findings (about 600 bytes of memory for each character).
LARGE_CELL = Attack(
    name="holds_a_4_mb_list",
    why="a right softmax in a cell that also holds a 4 MB list literal: the findings list it as "
    "too large to be read instead of parsing it; whether its kernel compiles it within the cell's "
    "limit depends on the machine (it takes gigabytes and tens of seconds), the grader must not "
    "notice",
    code=SOLUTION + "\nCONSTANTS = [" + "1, " * 1_333_333 + "]\n",
    loses=(),
)
