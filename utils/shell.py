"""The IPython shell that a notebook's code runs in, and a cell's code as that shell runs it."""


def ipython_shell():
    """The IPython shell this code runs in, or None (plain Python, or IPython not installed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def as_run(source):
    """A cell's source as IPython runs it: its leading indent removed, and its magics (`%time`,
    `%%bash`), shell lines (`!ls`) and help (`x?`) written as the `get_ipython()` calls they make.

    Its lines keep their numbers (IPython drops the blank lines a cell starts with). Where IPython
    is not installed, the source as it is: plain Python runs it so.
    """
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return source
    lines = source.splitlines(keepends=True)
    blank = next((index for index, line in enumerate(lines) if line.strip()), len(lines))
    try:
        return "\n" * blank + TransformerManager().transform_cell("".join(lines[blank:]))
    except Exception:  # IPython reports the cell itself when it runs
        return source
