"""Read, transform, execute and write notebooks deterministically.

Executed notebooks are stored as the same bytes on every host and under any load: how a
kernel's output was cut into messages is not kept (see `merge_streams`), nor are timings or
live widgets. Reading and writing need nbformat alone (the student edition needs no more);
executing needs nbclient too.
"""

import ast
import os
import re

import nbformat

from utils.bindings import defined_names

SOLUTION_MARKERS = re.compile(
    r"^[ \t]*(### (BEGIN|END) SOLUTION|=== (BEGIN|END) MARK SCHEME ===)[ \t]*\n?", re.MULTILINE
)
HIDDEN_TESTS = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.MULTILINE | re.DOTALL
)
CELL_TIMEOUT = 120
# Kernels log a warning about unencrypted local TCP sockets on every start; keep errors only.
KERNEL_QUIET = ["--IPKernelApp.log_level=ERROR"]


def read(path):
    """Read a notebook as the current nbformat version."""
    return nbformat.read(str(path), as_version=4)


def write(nb, path):
    """Write a notebook in the canonical form (indent 1, sorted keys, trailing newline)."""
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    nbformat.write(nb, str(path))


def nbgrader_meta(cell):
    """The cell's nbgrader metadata, or an empty dict."""
    return cell.get("metadata", {}).get("nbgrader", {})


def is_solution(cell):
    """True for a cell in which the student writes code or an answer."""
    return bool(nbgrader_meta(cell).get("solution"))


def is_test(cell):
    """True for an autograded test cell."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.cell_type == "code"


def strip_solution_markers(source):
    """Remove the solution and mark-scheme delimiters, keeping the text between them."""
    return SOLUTION_MARKERS.sub("", source)


def remove_hidden_tests(source):
    """Remove every hidden-test block from a cell's source."""
    return HIDDEN_TESTS.sub("", source)


def clear_outputs(nb):
    """Remove outputs and execution counts, in place."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def execute(nb, cwd, timeout=CELL_TIMEOUT, allow_errors=False):
    """Execute a notebook in place with a fresh kernel started in `cwd`."""
    from nbclient import NotebookClient  # only here: reading and writing need nbformat alone

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        extra_arguments=KERNEL_QUIET,
        allow_errors=allow_errors,
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return merge_streams(drop_widget_views(nb))


STREAM_ORDER = {"stdout": 0, "stderr": 1}


def merge_streams(nb):
    """Store, in place, each run of consecutive stream outputs as one stdout, then one stderr.

    A kernel sends what a cell prints in as many messages as its buffers were flushed, which
    depends on how busy the machine is, and it flushes stdout and stderr apart; stored as they
    came, the same cell would give other bytes on another run.
    """
    for cell in nb.cells:
        if cell.get("outputs"):
            cell.outputs = merged_streams(cell.outputs)
    return nb


def merged_streams(outputs):
    """`outputs` with each run of consecutive stream outputs as one stdout, then one stderr."""
    merged, run = [], []
    for output in [*outputs, None]:
        if output is not None and output.output_type == "stream":
            run.append(output)
            continue
        for name in sorted({part.name for part in run}, key=lambda n: (STREAM_ORDER.get(n, 2), n)):
            text = "".join(part.text for part in run if part.name == name)
            merged.append(nbformat.v4.new_output("stream", name=name, text=text))
        run = []
        if output is not None:
            merged.append(output)
    return merged


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_widget_views(nb):
    """Remove the views of live widgets from the outputs, in place, keeping their text.

    A view names a widget model by a random id that only its kernel knows: stored, it would
    change at every run and show an error where no kernel runs.
    """
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    return nb


def read_copy(nb):
    """A deep copy of a notebook object."""
    return nbformat.from_dict(nbformat.reads(nbformat.writes(nb), as_version=4))


def executed_notebook(path):
    """The notebook at `path` if it exists and was executed, else None."""
    if not os.path.exists(str(path)):
        return None
    try:
        nb = read(path)
    except Exception:  # noqa: BLE001 - a half-written file counts as not executed
        return None
    ran = any(cell.get("execution_count") for cell in nb.cells if cell.cell_type == "code")
    return nb if ran else None


def executed(path):
    """True when the notebook at `path` exists and was executed."""
    return executed_notebook(path) is not None


def output_text(nb):
    """The text of every output of every code cell: streams, results and tracebacks."""
    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                parts.append(output.text)
            elif output.output_type == "error":
                parts.append(f"{output.ename}: {output.evalue}")
                parts.extend(output.traceback)
            else:
                parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)


def import_statements(source):
    """The import statements of a cell's source, as source code (everything else left out)."""
    body = ast.parse(source).body
    imports = [node for node in body if isinstance(node, ast.Import | ast.ImportFrom)]
    return ast.unparse(ast.Module(body=imports, type_ignores=[]))


def load_definitions(path, names):
    """A namespace with a notebook's imports and the code cells that define `names`.

    The imports are those of the first code cell (its other lines, which seed the generator or
    change the number of threads, are left out). A cell that defines one of `names` must hold
    nothing but imports, functions and classes, so loading it runs no computation.
    """
    cells = [cell for cell in read(path).cells if cell.cell_type == "code"]
    namespace = {"__name__": f"{os.path.basename(str(path))} definitions"}
    exec(compile(import_statements(cells[0].source), f"<{path} imports>", "exec"), namespace)
    wanted = set(names)
    for index, cell in enumerate(cells[1:], start=1):
        defined = defined_names(cell.source)
        if not defined & wanted:
            continue
        if not all(isinstance(node, DEFINITIONS) for node in ast.parse(cell.source).body):
            raise ValueError(f"{path}: code cell {index} defines {sorted(defined & wanted)} "
                             "beside statements that are not definitions")
        exec(compile(cell.source, f"<{path} code cell {index}>", "exec"), namespace)
    missing = wanted - set(namespace)
    if missing:
        raise ValueError(f"{path} defines no {sorted(missing)}")
    return namespace
