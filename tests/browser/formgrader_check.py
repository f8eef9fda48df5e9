"""The formgrader in a real browser: the instructor's view of a lab, on a hub and locally.

`tests/deploy/test_hub.py` (`make test-hub`) calls `check_formgrader` on its hub once a lab has been
collected: the instructor logs in on the hub's login page, opens JupyterLab and, from its
Nbgrader menu, the formgrader, which JupyterLab shows in a frame. The frame must show the
labs with their Release and Collect actions (JupyterHub forbids frames unless the server says
otherwise: deploy/jupyter/instructor/jupyter_server_config.py), then the lab's submissions.

The tests below (`make test-browser`) serve scratch copies of the course as `make lab` does. A
course graded locally (no exchange) shows no Release or Collect and says why
(course/coursedir/local_formgrader.py); a course with an exchange of its own keeps them, and
they work. A gradebook replaced while the server runs (a new term: other students) is read:
a new student's submission opens (course/coursedir/gradebook_watch.py). A hand grade and a
comment typed on a submission's page reach the gradebook whichever way the page was opened:
from JupyterLab's menu, or straight from a link with the token; a save that fails says so on
the page and locks its fields; a mistyped address answers 404 with no traceback in the log
(course/coursedir/formgrader_pages.py).
Screenshots go to `browser-screenshots/` (ignored by git).
"""

import os
import re
import shutil
import time

import pytest
from local_servers import SCREENSHOTS, jupyter, launch_chromium
from playwright.sync_api import expect, sync_playwright

from course.coursedir import gradebook_db, gradebook_watch, notebooks, paths
from course.coursedir.formgrader_pages import NOT_SAVED_ID
from course.coursedir.local_formgrader import EXCHANGE_HEADERS
from course.coursedir.nbgrader_run import instructor as run_instructor
from course.coursedir.scratch import fill, scratch_course, solution_cells, submit

pytestmark = pytest.mark.slow  # Chromium on a Jupyter server
TIMEOUT = 60_000
LAB = "01_softmax"


def log_in(page, hub_url, user, password):
    """Log in on the hub's page and wait for the user's JupyterLab."""
    page.goto(f"{hub_url}/hub/login")
    page.locator("#username_input").fill(user)
    page.locator("#password_input").fill(password)
    page.locator("#login_submit").click()
    page.wait_for_url(re.compile(rf"/user/{user}/lab"), timeout=TIMEOUT)
    page.locator("#jp-main-dock-panel").wait_for(timeout=TIMEOUT)


def open_formgrader(page):
    """Nbgrader -> Formgrader in JupyterLab's menu; the formgrader's frame."""
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name="Formgrader", exact=True).click()
    frame = page.frame_locator("#formgrader iframe")
    frame.locator("body").wait_for(timeout=TIMEOUT)
    return frame


def check_assignments(page, frame, assignment):
    """The lab is listed with its Release and Collect columns; returns the row's text."""
    for header in ("Release", "Collect"):
        expect(frame.get_by_role("columnheader", name=header, exact=True)).to_be_visible(
            timeout=TIMEOUT
        )
    row = frame.locator("tr", has=frame.get_by_text(assignment, exact=True))
    expect(row.first).to_be_visible(timeout=TIMEOUT)
    row.first.scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "hub_formgrader_assignments.png")
    return row.first.inner_text()


def check_submissions(page, frame, assignment, student):
    """The lab's submissions page lists `student`; returns the page's table text."""
    frame.locator(f"a[href$='manage_submissions/{assignment}']").first.click()
    expect(frame.get_by_text(student, exact=True).first).to_be_visible(timeout=TIMEOUT)
    frame.get_by_text(student, exact=True).first.scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "hub_formgrader_submissions.png")
    return frame.locator("table").first.inner_text()


def check_formgrader(hub_url, user, password, assignment, student):
    """Run the whole check as `user`; returns (the lab's row, the submissions table)."""
    SCREENSHOTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            log_in(page, hub_url, user, password)
            frame = open_formgrader(page)
            row = check_assignments(page, frame, assignment)
            return row, check_submissions(page, frame, assignment, student)
        finally:
            browser.close()


# The local checks (make test-browser): scratch courses served by `jupyter server`.

STUDENTS = {"term 1": "ada", "term 2": "grace"}  # one student a term, each in a gradebook
REPLACED = "replaced: the formgrader reads the new one"  # gradebook_watch's line in the log
# The assignments' table as shown: the text of each header, whether it shows, and how many cells
# of the lab's row show.
SHOWN_COLUMNS = """lab => [
  Array.from(document.querySelectorAll('thead th'))
    .map(th => [th.innerText.trim(), th.offsetParent !== null]),
  Array.from(document.querySelectorAll('#main-table tr'))
    .filter(row => row.querySelector('td.name') && row.querySelector('td.name').innerText === lab)
    .map(row => Array.from(row.cells).filter(td => td.offsetParent !== null).length)[0],
]"""


def autograded_term(folder, student, config_lines=()):
    """A scratch course whose one student handed in lab 01's solution, autograded: its root."""
    root = scratch_course(folder, [LAB], config_lines)
    release = notebooks.read(root / "release" / LAB / paths.lab_filename(LAB))
    submit(root, LAB, student, fill(release, solution_cells(LAB)))
    result = run_instructor(root, "autograde", LAB)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    return root


@pytest.fixture(scope="module")
def terms(tmp_path_factory):
    """Two terms of the course graded locally, each with its own student: their roots."""
    return {
        term: autograded_term(tmp_path_factory.mktemp(term.replace(" ", "")), student)
        for term, student in STUDENTS.items()
    }


@pytest.fixture(scope="module")
def local_server(terms):
    """The formgrader on the first term's course, which has no exchange: (URL, token, root)."""
    root = terms["term 1"]
    with jupyter("server", root, f"--ServerApp.root_dir={root}") as (url, token):
        yield url, token, root


@pytest.fixture(scope="module")
def exchange_server(tmp_path_factory):
    """The formgrader on a course with an exchange of its own: (URL, token, exchange)."""
    exchange = tmp_path_factory.mktemp("exchange")
    root = scratch_course(
        tmp_path_factory.mktemp("hubcourse"), [LAB], [f"c.Exchange.root = {str(exchange)!r}"]
    )
    with jupyter("server", root, f"--ServerApp.root_dir={root}") as (url, token):
        yield url, token, exchange


def open_assignments(browser, server, screenshot):
    """The Manage Assignments page, once it lists the lab: (page, the lab's row)."""
    url, token, _ = server
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{url}/formgrader/manage_assignments?token={token}")
    row = page.locator("#main-table tr", has=page.locator("td.name", has_text=LAB))
    expect(row).to_have_count(1, timeout=TIMEOUT)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / screenshot, full_page=True)
    return page, row


def submission_page(url, token, root, student):
    """The formgrader's URL of a student's lab, as the gradebook at `root` numbers it now."""
    with gradebook_db.open_gradebook(root) as gradebook:
        notebook = paths.lab_filename(LAB).removesuffix(".ipynb")
        submission = gradebook.find_submission_notebook(notebook, LAB, student).id
    return f"{url}/formgrader/submissions/{submission}/?token={token}"


def test_a_local_course_hides_release_and_collect_and_says_why(browser, local_server):
    page, row = open_assignments(browser, local_server, "formgrader_local_course.png")
    note = page.locator("#course-graded-locally")
    expect(note).to_be_visible()
    expect(note).to_contain_text("make collect")
    expect(note).to_contain_text("Release, Collect and Release Feedback")
    expect(row.locator("td.num-submissions")).to_have_text("1")  # ada's
    headers, cells = page.evaluate(SHOWN_COLUMNS, LAB)
    hidden = [text for text, shown in headers if not shown]
    shown = [text for text, shown in headers if shown]
    assert hidden == list(EXCHANGE_HEADERS), headers
    assert shown == ["Name", "Due Date", "Edit", "Generate", "Preview", "# Submissions",
                     "Generate Feedback"], headers  # fmt: skip
    assert cells == len(shown)  # the lab's row lines up with its headers
    page.close()


def test_a_course_with_an_exchange_keeps_release_and_collect_and_they_work(
    browser, exchange_server
):
    page, row = open_assignments(browser, exchange_server, "formgrader_exchange_course.png")
    expect(page.locator("#course-graded-locally")).to_have_count(0)
    headers, cells = page.evaluate(SHOWN_COLUMNS, LAB)
    assert all(shown for _, shown in headers) and len(headers) == cells == 11, (headers, cells)
    assert [text for text, _ in headers if text in EXCHANGE_HEADERS] == list(EXCHANGE_HEADERS)
    expect(row.locator("td.status")).to_have_text("draft")
    row.locator("td.release a").click()
    expect(page.locator("#success-modal")).to_contain_text(f"Successfully released '{LAB}'")
    page.locator("#success-modal").get_by_role("button", name="OK").click()
    expect(page.locator("#success-modal")).to_have_count(0)
    expect(row.locator("td.status")).to_have_text("released", timeout=TIMEOUT)
    released = exchange_server[2] / paths.COURSE_ID / "outbound" / LAB / paths.lab_filename(LAB)
    assert released.is_file()
    row.locator("td.collect a").click()
    collected = page.locator("#success-modal.in .modal-dialog")  # shown, its fade-in over
    expect(collected).to_contain_text(f"Successfully collected submissions of '{LAB}'")
    page.wait_for_timeout(500)
    page.screenshot(path=SCREENSHOTS / "formgrader_exchange_collected.png")
    page.close()


def wait_for_log(root, text, seconds=30):
    """Wait until the server's log (root/jupyter.log) holds `text`; whether it came."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in (root / "jupyter.log").read_text():
            return True
        time.sleep(0.5)
    return False


def test_a_gradebook_replaced_while_the_server_runs_opens_the_new_terms_students(
    browser, local_server, terms
):
    url, token, root = local_server
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    old = page.goto(submission_page(url, token, root, STUDENTS["term 1"]))
    assert old.status == 200  # the formgrader now keeps this gradebook open
    time.sleep(1.5 * gradebook_watch.CHECK_MILLISECONDS / 1000)  # and the watch has seen it
    new_term, student = terms["term 2"], STUDENTS["term 2"]
    for folder in ("submitted", "autograded"):
        shutil.copytree(new_term / folder / student, root / folder / student)
    shutil.copy(new_term / "gradebook.db", root / "new-term.db")
    os.replace(root / "new-term.db", root / "gradebook.db")  # as a new term's is put in place
    assert wait_for_log(root, REPLACED), "the server did not notice the new gradebook"
    opened = page.goto(submission_page(url, token, root, student))
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "formgrader_replaced_gradebook.png")
    assert opened.status == 200, page.inner_text("body")[:500]
    expect(page.locator("body")).not_to_contain_text("Invalid submission")
    expect(page.get_by_text("Submission 1 / 1")).to_be_visible()  # the new term's one student
    expect(page.get_by_text("def softmax(").first).to_be_visible(timeout=TIMEOUT)
    page.close()


# A hand grade typed on a submission's page: lab 01's written answer, worth 2 points.

WRITTEN = "written_stability"
LOADED = "() => window.formgrader && formgrader.grades.loaded && formgrader.comments.loaded"


@pytest.fixture(scope="module")
def grading_server(terms):
    """The formgrader on the second term's course: (URL, token, root)."""
    root = terms["term 2"]
    with jupyter("server", root, f"--ServerApp.root_dir={root}") as (url, token):
        yield url, token, root


def hand_grade(root, student):
    """(manual score, manual comment) of the student's written answer in the gradebook."""
    notebook = paths.lab_filename(LAB).removesuffix(".ipynb")
    with gradebook_db.open_gradebook(root) as gradebook:
        submission = gradebook.find_submission_notebook(notebook, LAB, student)
        grade = next(g for g in submission.grades if g.name == WRITTEN)
        comment = next(c for c in submission.comments if c.name == WRITTEN)
        return grade.manual_score, comment.manual_comment


def type_hand_grade(frame, score, comment=None):
    """Type a score (and a comment) on a loaded submission's page (a page or a frame's page)."""
    frame.wait_for_function(LOADED, timeout=TIMEOUT)
    frame.locator(f"#{WRITTEN}").fill(str(score))
    frame.locator(f"#{WRITTEN}").press("Tab")  # a field saves when it is left
    if comment is not None:
        frame.locator(f"#{WRITTEN}-comment").fill(comment)
        frame.locator(f"#{WRITTEN}-comment").press("Tab")


def wait_for_hand_grade(root, student, expected, seconds=30):
    """The student's hand grade once it is `expected`, or as it is after `seconds`."""
    deadline = time.monotonic() + seconds
    while (found := hand_grade(root, student)) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


def test_a_grade_typed_on_a_page_opened_from_a_link_with_the_token_is_saved(
    browser, grading_server
):
    url, token, root = grading_server
    student = STUDENTS["term 2"]
    page = browser.new_page(viewport={"width": 1280, "height": 800})  # no cookie of JupyterLab
    page.goto(submission_page(url, token, root, student))
    type_hand_grade(page, 1.5, "Opened from the token link.")
    assert wait_for_hand_grade(root, student, (1.5, "Opened from the token link.")) == (
        1.5, "Opened from the token link.")  # fmt: skip
    expect(page.locator(f"#{NOT_SAVED_ID}")).to_have_count(0)
    page.close()


def test_a_grade_typed_on_a_page_opened_from_jupyterlab_is_saved(browser, grading_server):
    url, token, root = grading_server
    student = STUDENTS["term 2"]
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"{url}/lab?token={token}")
    page.locator("#jp-main-dock-panel").wait_for(timeout=TIMEOUT)
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    shown = page.locator("#jp-mainmenu-nbgrader .lm-Menu-item").filter(visible=True)
    entries = [text.strip() for text in shown.all_inner_texts()]
    assert [entry for entry in entries if "Formgrader" in entry] == ["Formgrader"], entries
    page.keyboard.press("Escape")
    frame = open_formgrader(page)
    frame.get_by_role("link", name="Manual Grading").first.click()
    frame.get_by_role("link", name=LAB, exact=True).click()
    frame.get_by_role("link", name=paths.lab_filename(LAB).removesuffix(".ipynb")).click()
    frame.locator("a[href*='/formgrader/submissions/']").first.click()
    frame.locator(f"#{WRITTEN}").wait_for(timeout=TIMEOUT)
    graded = page.frame(url=re.compile("/formgrader/submissions/"))
    type_hand_grade(graded, 2, "Opened from JupyterLab.")
    assert wait_for_hand_grade(root, student, (2, "Opened from JupyterLab.")) == (
        2, "Opened from JupyterLab.")  # fmt: skip
    page.screenshot(path=SCREENSHOTS / "formgrader_hand_grade_from_jupyterlab.png")
    page.close()


def test_a_grade_that_does_not_reach_the_gradebook_is_said_so_and_no_more_is_taken(
    browser, grading_server
):
    url, token, root = grading_server
    student = STUDENTS["term 2"]
    before = hand_grade(root, student)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(submission_page(url, token, root, student))
    page.wait_for_function(LOADED, timeout=TIMEOUT)
    page.context.clear_cookies()  # the log-in is gone: the server refuses what the page sends
    type_hand_grade(page, 0.5)
    note = page.locator(f"#{NOT_SAVED_ID}")
    expect(note).to_be_visible(timeout=TIMEOUT)
    expect(note).to_contain_text("NOT in the gradebook")
    expect(note).to_contain_text("type it there")
    for field in (f"#{WRITTEN}", f"#{WRITTEN}-comment"):
        expect(page.locator(field)).to_be_disabled()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "formgrader_not_saved.png")
    assert hand_grade(root, student) == before
    page.close()


def test_a_mistyped_formgrader_address_answers_404_and_logs_no_traceback(browser, grading_server):
    url, token, root = grading_server
    page = browser.new_page()
    answer = page.goto(f"{url}/formgrader/manage_assignment?token={token}")  # no final s
    assert answer.status == 404
    expect(page.locator("body")).to_contain_text("404")
    assert wait_for_log(root, "404 GET /formgrader/manage_assignment")
    assert "Traceback" not in (root / "jupyter.log").read_text()
    page.close()
