"""What the checks of the sandbox's filters share: one cell run in a real sandboxed kernel."""

import nbformat
from nbclient import NotebookClient

from course.grading.kernels.provisioner import ForkingKernelManager


def lines_printed_in_a_sandboxed_kernel(code, folder):
    """Run `code` as one cell in a kernel forked into a sandbox, in `folder`: (lines, outputs)."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_manager_class=ForkingKernelManager,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    outputs = notebook.cells[0].outputs
    return "".join(output.get("text", "") for output in outputs).split("\n"), outputs
