"""The IPython shell a notebook's code runs in (None outside IPython), and a cell as it runs it."""

import subprocess
import sys

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from utils.shell import as_run, ipython_shell


def test_outside_ipython_there_is_no_shell():
    code = "from utils.shell import ipython_shell\nprint(ipython_shell())"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout == "None\n"


def test_in_ipython_it_is_the_shell_running():
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    try:
        assert ipython_shell() is shell
    finally:
        InteractiveShell.clear_instance()


def test_a_cell_reads_as_ipython_runs_it():
    assert as_run("    x = 1\n    y = x\n") == "x = 1\ny = x\n"
    assert as_run("\n  \n    x = 1\n") == "\n\nx = 1\n"  # its lines keep their numbers
    assert as_run("x = 1\n!ls\n") == "x = 1\nget_ipython().system('ls')\n"
    assert as_run('s = """\n!not a shell line\n"""\n') == 's = """\n!not a shell line\n"""\n'
