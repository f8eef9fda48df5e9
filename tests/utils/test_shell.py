"""The IPython shell a notebook's code runs in: the one running, or None outside IPython."""

import subprocess
import sys

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from utils.shell import ipython_shell


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
