"""nbgrader's Execute step with kernels forked from the zygote, each in a sandbox of its own.

`ForkingExecute` is the base of the course's executor (`judge.JudgeExecute`, which
nbgrader_config.py names); its kernel manager is `course.grading.kernels.provisioner`'s
`ForkingKernelManager`. Without a sandbox (``c.ForkingExecute.sandbox = False``, or
``--ForkingExecute.sandbox=False`` on nbgrader's command line) kernels run as the grading user;
``c.ForkingExecute.fork = False`` also starts them the ordinary way.
"""

from nbgrader.preprocessors import Execute
from traitlets import Bool, default

from course.grading.kernels.provisioner import ForkingKernelManager


class ForkingExecute(Execute):
    """nbgrader's Execute preprocessor, with kernels forked from the zygote."""

    fork = Bool(True, help="Fork kernels from a process that has imported torch").tag(config=True)
    sandbox = Bool(True, help="Run each student's kernel in an OS sandbox of its own").tag(
        config=True
    )

    @default("shutdown_kernel")
    def _shutdown_kernel_default(self):
        """Kill the kernel when the notebook is done: every output has arrived by then."""
        return "immediate"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.sandbox and not self.fork:
            raise ValueError("sandboxed kernels are forked: keep c.ForkingExecute.fork = True")
        if self.fork:
            self.kernel_manager_class = ForkingKernelManager

    def create_kernel_manager(self):
        """The kernel manager, told whether to sandbox its kernels."""
        km = super().create_kernel_manager()
        if isinstance(km, ForkingKernelManager):
            km.sandbox = self.sandbox
        return km
