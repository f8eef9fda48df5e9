"""What the checks of the sandbox's filters share: one cell run in a real sandboxed kernel."""

import nbformat
from nbclient import NotebookClient

from course.grading.kernels.provisioner import ForkingKernelManager

# A kernel's everyday work, which no filter of the sandbox may stop: torch on two threads, a
# figure saved as PNG, a subprocess. The test of each filter adds what that filter refuses.
EVERYDAY_WORK = """
import io, subprocess, torch
import matplotlib.pyplot as plt
torch.set_num_threads(2)
a = torch.ones(256, 256)
print("matmul", (a @ a)[0, 0].item(), torch.get_num_threads())
figure, axes = plt.subplots()
axes.plot([1, 2, 3])
image = io.BytesIO()
figure.savefig(image, format="png")
print("png", image.getvalue()[:4] == b"\\x89PNG")
print("true", subprocess.run(["/bin/true"]).returncode)
"""
EVERYDAY_PRINTED = ["matmul 256.0 2", "png True", "true 0"]


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
