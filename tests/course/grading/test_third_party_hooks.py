"""The private members of jupyter_client and nbgrader that the grader relies on are still there.

The grader overrides or reads members of its libraries that are not public API. Each row says
which member, on which class, and which of the library's own functions must still call it: if a
new release renames a member or stops calling it, the course's override would silently stop
running, and this test names it.
requirements.txt pins these libraries; the behaviour of the hooks that carry security weight is
tested where it matters (tests/course/grading/test_hostile.py: a kernel reached only through its
pinned sockets; remote/test_client.py: an oversized message part refused by the replaced unpack).
"""

import inspect

import pytest
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.client import KernelClient
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session
from nbclient import NotebookClient
from nbgrader.preprocessors import SaveAutoGrades

from course.grading import channels
from course.grading.kernels import provisioner
from course.grading.preprocessors import judge, output_budget, regrade
from course.grading.remote import client

# (the class the course extends or reads, the member, the library function that must use it)
HOOKS = [
    (KernelManager, "_created_context", KernelManager),
    (KernelClient, "_created_context", KernelClient),
    (AsyncKernelClient, "_async_is_alive", KernelClient),
    (KernelClient, "_handle_kernel_info_reply", KernelClient._async_wait_for_ready),
    (KernelClient, "_iopub_channel", KernelClient),
    (Session, "unpack", Session.deserialize),
    (SaveAutoGrades, "_add_score", SaveAutoGrades.preprocess_cell),
    (NotebookClient, "_update_display_id", NotebookClient.process_message),
    (NotebookClient, "_display_id_map", NotebookClient.output),
]

# Where the course touches each member: a change there must update HOOKS.
USERS = {
    "_created_context": provisioner,
    "_async_is_alive": channels,
    "_handle_kernel_info_reply": channels,
    "_iopub_channel": judge,
    "unpack": client,
    "_add_score": regrade,
    "_update_display_id": output_budget,
    "_display_id_map": output_budget,
}


@pytest.mark.parametrize(
    ("owner", "member", "caller"), HOOKS, ids=[f"{o.__name__}.{m}" for o, m, _ in HOOKS]
)
def test_each_private_member_the_grader_relies_on_is_still_used_by_its_library(
    owner, member, caller
):
    source = inspect.getsource(caller)
    defined = hasattr(owner, member) or f"self.{member} =" in inspect.getsource(owner)
    assert defined, f"{owner.__module__}.{owner.__name__}.{member} is gone"
    assert member in source, (
        f"{caller.__qualname__} no longer uses {member}: the course's override would never run"
    )


def test_every_member_the_course_touches_is_listed():
    for member, module in USERS.items():
        assert member in inspect.getsource(module), f"{module.__name__} no longer uses {member}"
    assert {member for _, member, _ in HOOKS} == set(USERS)
