"""A student's first failing test, a cell's findings and a lecture's control, in JupyterLab.

Run with `make test-browser`.

It needs Chromium (Debian's `chromium` package; `.ci/run` installs it) and is not part of
`make test`. Screenshots go to `browser-screenshots/` (ignored by git).
"""

import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest
from local_servers import SCREENSHOTS, free_port
from playwright.sync_api import expect

from course.build import paths
from course.build.nbgrader_run import nbgrader_environment
from course.build.submissions import scratch_course

LAB = "01_softmax"
WRONG_SOFTMAX = "def softmax(scores, dim=-1):\n    e = scores.exp()\n    return e / e.sum()\n"
MESSAGE = "do not sum to 1 along dim=-1"
IMPORTING_SOFTMAX = (
    "import os\n\n"
    "def softmax(scores, dim=-1):\n"
    "    shifted = scores - scores.amax(dim=dim, keepdim=True)\n"
    "    return shifted.exp() / shifted.exp().sum(dim=dim, keepdim=True)\n"
)
FINDING = "it imports os, which this lab does not use"
FINDING_NOTE = "Your instructor will see these findings about this cell"
NOT_A_FAILURE = "Not a failed test"
SOFTMAX_CELL = "def softmax("  # the solution cell, whatever an earlier check saved into it
FIRST_LINES = 3
LAB_NOTEBOOK = f"release/{LAB}/{paths.lab_filename(LAB)}"
LECTURE = "01_softmax.ipynb"
CONTROL_CALL = "interactive.show("
COURSE_VALIDATE = "utils.validate_findings"  # turned on by the course's jupyter-config/
NBGRADER_VALIDATE = "nbgrader.server_extensions.validate_assignment"  # turned off by it


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """JupyterLab serving a scratch copy of the course: (base URL, token, course root)."""
    root = scratch_course(tmp_path_factory.mktemp("browser"), paths.assignments())
    shutil.copytree(paths.NOTEBOOKS, root / "notebooks")
    port, token = free_port(), secrets.token_hex(16)
    settings = root / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)  # render every cell, so the page holds the whole notebook
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    news = root / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    command = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        f"--port={port}", f"--IdentityProvider.token={token}", f"--notebook-dir={root}",
        f"--LabApp.user_settings_dir={root / 'lab-settings'}",
        f"--LabApp.workspaces_dir={root / 'workspaces'}",  # not the tabs of ~/.jupyter
    ]  # fmt: skip
    env = nbgrader_environment()  # the formgrader validates with the course's configuration
    log = open(root / "jupyter.log", "w")  # noqa: SIM115 - closed after the server stops
    process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        process.kill()
        pytest.fail("JupyterLab did not start:\n" + (root / "jupyter.log").read_text()[-3000:])
    check_validate_handler((root / "jupyter.log").read_text())
    yield url, token, root
    process.terminate()
    process.wait(timeout=30)
    log.close()


def check_validate_handler(log):
    """Fail unless a server's log shows the course's Validate loaded, and nbgrader's not."""
    loaded = "{} | extension was successfully loaded"
    if loaded.format(COURSE_VALIDATE) not in log or loaded.format(NBGRADER_VALIDATE) in log:
        pytest.fail(f"the server should load {COURSE_VALIDATE} instead of {NBGRADER_VALIDATE} "
                    "(make installs jupyter-config/ into the virtualenv):\n" + log[-3000:])


def open_lab(browser, server, notebook=LAB_NOTEBOOK):
    """A page with a notebook (lab 01's student version by default) open and its kernel ready."""
    url, token, _ = server
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    workspace = secrets.token_hex(4)  # a fresh workspace: no tab of another test is restored
    page.goto(f"{url}/lab/workspaces/{workspace}/tree/{notebook}?token={token}")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(
        1, timeout=60_000
    )
    return page


def cell_index(page, text):
    """The index of the first code cell whose text contains `text`."""
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.filter(has_text=text).first.wait_for(timeout=60_000)
    for index in range(cells.count()):
        cell = cells.nth(index)
        if "jp-CodeCell" in cell.get_attribute("class") and text in cell.inner_text():
            return index
    raise AssertionError(f"no cell contains {text!r}")


def replace_cell_text(page, index, text):
    """Type `text` into a cell's editor in place of what it holds, as a student would paste it."""
    editor = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)


def run_cells_up_to(page, last):
    """Select cell `last`, run every cell above it from the Run menu, then run it."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(last)
    cell.locator(".jp-InputPrompt").click()
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Above Selected Cell").click()
    cell.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Enter")


def last_output(page, index):
    """The last output of cell `index` once it appears."""
    output = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea-output")
    output.last.wait_for(timeout=60_000)
    return output.last


def test_a_wrong_softmax_shows_its_message_first(browser, server):
    page = open_lab(browser, server)
    solution = cell_index(page, "YOUR CODE HERE")
    test = solution + 1  # each solution cell is followed by its visible test
    replace_cell_text(page, solution, WRONG_SOFTMAX)
    run_cells_up_to(page, test)
    output = last_output(page, test)
    expect(output).to_contain_text(MESSAGE, timeout=60_000)
    lines = output.inner_text().splitlines()
    assert any(MESSAGE in line for line in lines[:FIRST_LINES]), "\n".join(lines)
    assert "grading.py" not in output.inner_text()
    output.scroll_into_view_if_needed()
    assert output.get_by_text(MESSAGE, exact=False).first.is_visible()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "failing_test_cell.png")
    print(f"error output: {len(lines)} lines; the message is on line "
          f"{next(i for i, line in enumerate(lines) if MESSAGE in line) + 1}")  # fmt: skip
    page.close()


def test_validate_reports_the_failing_test(browser, server):
    page = open_lab(browser, server)
    solution = cell_index(page, "YOUR CODE HERE")
    replace_cell_text(page, solution, WRONG_SOFTMAX)
    page.get_by_role("button", name="Validate").first.click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=120_000)
    expect(dialog).to_contain_text("fail", ignore_case=True, timeout=120_000)
    verdict = dialog.inner_text()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "validate.png")
    assert MESSAGE in verdict, verdict[:2000]
    page.close()


def test_a_cell_shows_its_findings_as_it_runs(browser, server):
    page = open_lab(browser, server)
    solution = cell_index(page, SOFTMAX_CELL)
    replace_cell_text(page, solution, IMPORTING_SOFTMAX)
    run_cells_up_to(page, solution)
    output = last_output(page, solution)
    expect(output).to_contain_text(FINDING, timeout=60_000)
    assert FINDING_NOTE in output.inner_text(), output.inner_text()
    output.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "cell_findings.png")
    page.close()


def test_validate_lists_a_cells_findings(browser, server):
    page = open_lab(browser, server)
    solution = cell_index(page, SOFTMAX_CELL)
    replace_cell_text(page, solution, IMPORTING_SOFTMAX)
    unsaved = page.locator(".lm-TabBar-tab.jp-mod-dirty")
    expect(unsaved).to_have_count(1)
    page.keyboard.press("Control+S")
    expect(unsaved).to_have_count(0, timeout=30_000)
    started = time.monotonic()
    page.get_by_role("button", name="Validate").first.click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text(FINDING, timeout=120_000)
    seconds = time.monotonic() - started
    verdict = dialog.inner_text()
    assert NOT_A_FAILURE in verdict and FINDING_NOTE in verdict, verdict[:3000]
    assert MESSAGE not in verdict, "the correct softmax failed its test"
    note = dialog.locator("pre", has_text=FINDING).last
    note.scroll_into_view_if_needed()
    assert note.evaluate("pre => pre.scrollWidth <= pre.clientWidth"), "the note is cut off"
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "validate_findings.png")
    print(f"Validate answered with the finding in {seconds:.1f} s")
    page.close()


def test_the_formgrader_lists_every_lab(browser, server):
    url, token, _ = server
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{url}/formgrader?token={token}")
    for assignment in paths.assignments():
        expect(page.get_by_text(assignment, exact=True).first).to_be_visible(timeout=60_000)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "formgrader.png")
    page.close()


def figure_and_readout(cell):
    """(the src of the control's figure, the text of its readout) in a cell's outputs."""
    image = cell.locator(".jp-OutputArea-output img").last
    image.wait_for(timeout=60_000)
    readout = cell.locator(".jp-OutputArea-output pre").last
    return image.get_attribute("src"), readout.inner_text()


def test_moving_a_lecture_control_redraws_its_figure_and_readout(browser, server):
    page = open_lab(browser, server, f"notebooks/{LECTURE}")
    index = cell_index(page, CONTROL_CALL)
    run_cells_up_to(page, index)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    slider = cell.locator(".widget-slider").first
    slider.wait_for(timeout=60_000)
    before_image, before_text = figure_and_readout(cell)
    cell.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "control_before.png")
    readout_field = slider.locator(".widget-readout")
    readout_field.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("0.3")
    page.keyboard.press("Enter")
    expect(cell.locator(".jp-OutputArea-output pre").last).not_to_have_text(
        before_text, timeout=30_000
    )
    after_image, after_text = figure_and_readout(cell)
    page.screenshot(path=SCREENSHOTS / "control_after.png")
    assert re.search(r"T = 0\.30", after_text), after_text
    assert after_image != before_image, "the figure did not change"
    print(f"readout before: {before_text!r}; after: {after_text!r}")
    page.close()
