"""A student's first failing test, a cell's findings and a lecture's control, in JupyterLab.

Then, in the same server, the instructor's side of one graded submission: the formgrader's
Autograde button keeps a hand grade, and the math of the formgrader's page and of the feedback
renders with the network cut off.

Run with `make test-browser`.

It needs Chromium (Debian's `chromium` package; `.ci/run` installs it) and is not part of
`make test`. Screenshots go to `browser-screenshots/` (ignored by git).
"""

import json
import os
import re
import secrets
import shutil
import statistics
import time
import urllib.request
from pathlib import Path

import pytest
from local_servers import SCREENSHOTS, jupyter
from pages_check import run_instructor, submission_url
from playwright.sync_api import expect

from course.coursedir import gradebook_db, notebooks, paths
from course.coursedir.scratch import fill, scratch_course, solution_cells, submit
from course.coursedir.submissions import cell_comments
from course.lms import feedback_zip

pytestmark = pytest.mark.slow  # Chromium on JupyterLab
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
STUDENT = "ada"
WRITTEN = "written_stability"  # lab 01's written answer, graded by hand
HAND_SCORE = 1.5
PROVISIONAL_FEEDBACK = "feedback_before_hand_grading.html"  # the page a student gets early
NEWS = "@jupyterlab/apputils-extension:notification"  # its fetchNews: the "Jupyter news?" question
# How many math elements the browser lays out as MathML; TeX left for a script to typeset.
RENDERED_MATH = """() => [
  Array.from(document.querySelectorAll('math'))
    .filter(m => m instanceof MathMLElement && m.getBoundingClientRect().width > 0).length,
  document.body.innerText.includes('\\operatorname'),
]"""
NBGRADER_VALIDATE = "nbgrader.server_extensions.validate_assignment"  # turned off by it


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """JupyterLab serving a scratch copy of the course: (base URL, token, course root)."""
    root = scratch_course(tmp_path_factory.mktemp("browser"), paths.assignments())
    shutil.copytree(paths.NOTEBOOKS, root / "notebooks")
    settings = root / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)  # render every cell, so the page holds the whole notebook
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    news = root / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    options = [
        f"--notebook-dir={root}",
        f"--LabApp.user_settings_dir={root / 'lab-settings'}",
        f"--LabApp.workspaces_dir={root / 'workspaces'}",  # not the tabs of ~/.jupyter
    ]  # the formgrader validates with the course's configuration
    with jupyter("lab", root, *options) as (url, token):
        check_validate_handler((root / "jupyter.log").read_text())
        yield url, token, root


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


# In the page: note when Enter sets a control's value, and when a new figure has shown after it
# (its src changed in the cell's outputs and the image decoded), on the page's clock.
WATCH_REDRAW = """cell => {
  const figures = () => Array.from(cell.querySelectorAll('.jp-OutputArea-output img'));
  const before = figures().map(image => image.src).join();
  window.redrawTimes = {valueSet: null, figureShown: null};
  document.addEventListener('keydown', event => {
    if (event.key === 'Enter' && window.redrawTimes.valueSet === null) {
      window.redrawTimes.valueSet = performance.now();
    }
  }, {capture: true});
  const observer = new MutationObserver(() => {
    const images = figures();
    if (images.map(image => image.src).join() === before) return;
    observer.disconnect();
    Promise.all(images.map(image => image.decode().catch(() => null)))
      .then(() => { window.redrawTimes.figureShown = performance.now(); });
  });
  observer.observe(cell, {subtree: true, childList: true, attributes: true,
                          attributeFilter: ['src']});
}"""
REDRAW_MS = """() => window.redrawTimes.figureShown === null ? null
  : window.redrawTimes.figureShown - window.redrawTimes.valueSet"""


MORE_TEMPERATURES = ("0.6", "1.5", "3.0", "0.8")  # further moves, timed too


def move_control(page, cell, slider, value):
    """Type value into the slider's readout and press Enter; the ms until the new figure showed."""
    before_text = cell.locator(".jp-OutputArea-output pre").last.inner_text()
    readout_field = slider.locator(".widget-readout")
    readout_field.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(value)
    cell.evaluate(WATCH_REDRAW)
    page.keyboard.press("Enter")
    expect(cell.locator(".jp-OutputArea-output pre").last).not_to_have_text(
        before_text, timeout=30_000
    )
    page.wait_for_function("() => window.redrawTimes.figureShown !== null", timeout=30_000)
    return page.evaluate(REDRAW_MS)


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
    first_ms = move_control(page, cell, slider, "0.3")
    after_image, after_text = figure_and_readout(cell)
    page.screenshot(path=SCREENSHOTS / "control_after.png")
    assert re.search(r"T = 0\.30", after_text), after_text
    assert after_image != before_image, "the figure did not change"
    times = [first_ms] + [move_control(page, cell, slider, value) for value in MORE_TEMPERATURES]
    print(f"readout before: {before_text!r}; after: {after_text!r}")
    print(f"control to new figure in the browser, ms: {', '.join(f'{t:.0f}' for t in times)}; "
          f"median {statistics.median(times):.0f} (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores)")
    page.close()


HEAD_LECTURE = "07_multihead_attention.ipynb"
HEAD_CONTROL = "interactive.head_view("


def test_the_head_control_marks_the_chosen_query_word_in_its_figure(browser, server):
    page = open_lab(browser, server, f"notebooks/{HEAD_LECTURE}")
    index = cell_index(page, HEAD_CONTROL)
    run_cells_up_to(page, index)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    word = cell.locator(".widget-slider", has_text="query word")
    word.wait_for(timeout=120_000)
    before_image, before_text = figure_and_readout(cell)
    before_word = word.locator(".widget-readout").inner_text()
    word.locator(".ui-slider-handle, .noUi-handle").first.focus()
    page.keyboard.press("ArrowRight")
    expect(cell.locator(".jp-OutputArea-output pre").last).not_to_have_text(
        before_text, timeout=60_000
    )
    after_image, after_text = figure_and_readout(cell)
    after_word = word.locator(".widget-readout").inner_text()
    cell.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "head_control_after_a_move.png")
    page.close()
    assert after_word != before_word and not after_word.isdigit(), (before_word, after_word)
    assert f"weights of query {after_word!r}" in after_text, after_text
    assert after_image != before_image, "the heat map did not change with the query"


def test_a_failed_checks_message_and_hint_come_first_in_validate(browser, server):
    page = open_lab(browser, server)
    solution = cell_index(page, SOFTMAX_CELL)
    replace_cell_text(page, solution, WRONG_SOFTMAX)
    page.get_by_role("button", name="Validate").first.click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text(MESSAGE, timeout=120_000)
    first = dialog.locator("pre").first
    lines = first.inner_text().splitlines()
    assert lines[0].startswith("AssertionError") and MESSAGE in " ".join(lines[:2]), lines
    assert any(line.startswith("Hint") for line in lines), lines
    assert first.evaluate("pre => pre.scrollWidth <= pre.clientWidth"), "the message is cut off"
    assert dialog.locator("pre").nth(1).inner_text().startswith("In this cell:")
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "validate_message_first.png")
    page.close()


def test_jupyterlab_asks_no_question_about_news(server):
    url, token, _ = server
    answer = urllib.request.urlopen(f"{url}/lab/api/settings/{NEWS}?token={token}", timeout=30)
    schema = json.loads(answer.read())["schema"]
    assert schema["properties"]["fetchNews"]["default"] == "false", "the virtualenv's overrides"


@pytest.fixture(scope="module")
def graded(server):
    """Lab 01 of one student in the server's course: autograded, its written answer graded by
    hand in the formgrader, its feedback written. The course's root."""
    _, _, root = server
    release = notebooks.read(root / "release" / LAB / paths.lab_filename(LAB))
    submit(root, LAB, STUDENT, fill(release, solution_cells(LAB)))
    result = run_instructor(root, "autograde", LAB)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    grade_id, _, waiting = hand_grade(root)
    assert waiting, "the written answer should wait for hand grading"
    result = run_instructor(root, "feedback", LAB, "--provisional")  # handed out early
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    shutil.copy(feedback_page(root), root / PROVISIONAL_FEEDBACK)
    set_hand_grade(server, grade_id, HAND_SCORE)
    result = run_instructor(root, "feedback", LAB)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    return root


def feedback_page(root):
    """The path of the student's feedback page of lab 01."""
    return root / "feedback" / STUDENT / LAB / f"{Path(paths.lab_filename(LAB)).stem}.html"


def test_feedback_handed_out_early_says_to_be_graded(browser, graded):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto((graded / PROVISIONAL_FEEDBACK).as_uri(), wait_until="load")
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "feedback_to_be_graded.png")
    text = page.inner_text("body")
    page.close()
    assert "Score: to be graded / 2.0" in text and "written answer still to grade" in text, text
    assert "Score: 0.0 / 2.0" not in text


def hand_grade(root):
    """(its id, manual score, needs manual grade) of the student's written answer."""
    notebook = Path(paths.lab_filename(LAB)).stem
    with gradebook_db.open_gradebook(root) as gradebook:
        submission = gradebook.find_submission_notebook(notebook, LAB, STUDENT)
        grade = next(grade for grade in submission.grades if grade.name == WRITTEN)
        return grade.id, grade.manual_score, grade.needs_manual_grade


def set_hand_grade(server, grade_id, score):
    """Give a grade a manual score through the formgrader's API, as its score field does."""
    url, token, _ = server
    request = urllib.request.Request(
        f"{url}/formgrader/api/grade/{grade_id}",
        method="PUT",
        data=json.dumps({"manual_score": score}).encode(),
        headers={"Authorization": f"token {token}"},
    )
    urllib.request.urlopen(request, timeout=60)


def test_the_formgraders_autograde_button_keeps_a_hand_grade(browser, server, graded):
    url, token, _ = server
    grade_id = hand_grade(graded)[0]
    assert hand_grade(graded) == (grade_id, HAND_SCORE, False)
    headers = {"Authorization": f"token {token}"}  # the page's own requests carry it too
    page = browser.new_page(viewport={"width": 1280, "height": 800}, extra_http_headers=headers)
    page.goto(f"{url}/formgrader/manage_submissions/{LAB}")
    row = page.locator("tr", has=page.get_by_text(STUDENT, exact=True))
    row.locator(".autograde a").click()
    log = page.locator("#success-modal pre").first
    log.wait_for(timeout=300_000)
    text = log.inner_text()
    page.screenshot(path=SCREENSHOTS / "formgrader_autograde_log.png")
    page.close()
    assert hand_grade(graded) == (grade_id, HAND_SCORE, False)
    assert "[DEBUG]" not in text and "has changed!" not in text, text
    assert "Restored the hidden tests of cell" in text, text
    assert "[WARNING] Removing existing" not in text and "Grading again" in text, text
    assert "Every test passed" in text, text  # or one line per failed test, and per finding


CODE_ANSWER = "softmax"  # lab 01's first code answer
CODE_COMMENT = "Clear and stable: the maximum is subtracted along the same dim."
WRITTEN_COMMENT = "Right idea; say why the shift leaves the weights unchanged."


def comment_on(root, comments):
    """Write the grader's comments (cell id -> text) on the student's lab 01, as the formgrader."""
    notebook = Path(paths.lab_filename(LAB)).stem
    with gradebook_db.open_gradebook(root) as gradebook:
        submission = gradebook.find_submission_notebook(notebook, LAB, STUDENT)
        for comment in submission.comments:
            if comment.name in comments:
                comment.manual_comment = comments[comment.name]
        gradebook.db.commit()


def test_the_canvas_notebook_shows_each_comment_under_its_answer(browser, server, graded):
    comment_on(graded, {CODE_ANSWER: CODE_COMMENT, WRITTEN: WRITTEN_COMMENT})
    autograded = paths.autograded(graded, STUDENT, LAB) / paths.lab_filename(LAB)
    grades = feedback_zip.cell_grades(LAB, STUDENT, graded)
    with gradebook_db.open_gradebook(graded) as gradebook:
        comments = cell_comments(gradebook, LAB, STUDENT)
    nb = feedback_zip.feedback_notebook(autograded, grades, LAB, comments)
    notebooks.write(nb, graded / "canvas_feedback.ipynb")
    page = open_lab(browser, server, "canvas_feedback.ipynb")
    rendered = page.locator(".jp-RenderedMarkdown")
    for text in (CODE_COMMENT, WRITTEN_COMMENT):
        expect(rendered.get_by_text(text)).to_be_visible(timeout=60_000)
    rendered.get_by_text(CODE_COMMENT).scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "canvas_notebook_comments.png")
    page.close()


def offline_page(browser):
    """A page that may fetch from this machine only; the list of what it tried to fetch beyond."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    refused = []

    def local_only(route):
        address = route.request.url
        if re.match(r"https?://(127\.0\.0\.1|localhost)[:/]", address) or not re.match(
            r"https?:", address
        ):
            route.continue_()
        else:
            refused.append(address)
            route.abort()

    page.route("**/*", local_only)
    return page, refused


def rendered_math(page, url, screenshot):
    """(math elements laid out as MathML, whether TeX shows as text) once `url` has loaded."""
    page.goto(url, wait_until="load")
    page.wait_for_timeout(1000)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / screenshot, full_page=True)
    return tuple(page.evaluate(RENDERED_MATH))


def test_math_renders_offline_in_the_formgrader(browser, server, graded):
    page, refused = offline_page(browser)
    url = submission_url(graded, server[:2], STUDENT)
    shown, tex = rendered_math(page, url, "formgrader_math_offline.png")
    page.close()
    assert shown >= 3 and not tex, (shown, tex)
    assert refused == []


def test_math_renders_offline_in_the_feedback(browser, graded):
    page, refused = offline_page(browser)
    shown, tex = rendered_math(page, feedback_page(graded).as_uri(), "feedback_math_offline.png")
    page.close()
    assert shown >= 3 and not tex, (shown, tex)
    assert refused == []


def test_the_formgrader_warns_of_no_missing_exchange(browser, server):
    url, token, _ = server
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{url}/formgrader/manage_assignments?token={token}")
    expect(page.get_by_text(LAB, exact=True).first).to_be_visible(timeout=60_000)
    assert page.locator("#warning-exchange").count() == 0, page.locator("body").inner_text()
    page.close()
