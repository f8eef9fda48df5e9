"""nbgrader's Execute step with forked kernels: sandboxed unless told, and never unforked in one."""

import nbformat
import pytest
from jupyter_client.manager import KernelManager

from course.grading.kernels.provisioner import ForkingKernelManager
from course.grading.preprocessors.execute import ForkingExecute


def manager_of(**options):
    """The kernel manager a ForkingExecute with these options would start its kernel with."""
    execute = ForkingExecute(**options)
    execute.nb = nbformat.v4.new_notebook()
    return execute.create_kernel_manager()


@pytest.mark.parametrize("sandbox", [True, False])
def test_forked_kernels_are_sandboxed_as_the_option_says(sandbox):
    manager = manager_of(sandbox=sandbox)
    assert type(manager) is ForkingKernelManager and manager.sandbox is sandbox


def test_unforked_kernels_start_the_ordinary_way_and_only_unsandboxed():
    manager = manager_of(fork=False, sandbox=False)
    assert isinstance(manager, KernelManager) and not isinstance(manager, ForkingKernelManager)
    with pytest.raises(ValueError, match="sandboxed kernels are forked"):
        ForkingExecute(fork=False)


def test_the_kernel_is_killed_once_the_notebook_is_done():
    assert ForkingExecute().shutdown_kernel == "immediate"
