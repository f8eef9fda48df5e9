"""The IPython shell that a notebook's code runs in, for what the course shows in a notebook."""


def ipython_shell():
    """The IPython shell this code runs in, or None (plain Python, or IPython not installed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
