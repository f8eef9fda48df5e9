"""The formgrader inside JupyterHub, in a real browser: the instructor's view of a lab.

`tests/deploy/test_hub.py` (`make test-hub`) calls `check_formgrader` on its hub once a lab has been
collected: the instructor logs in on the hub's login page, opens JupyterLab and, from its
Nbgrader menu, the formgrader, which JupyterLab shows in a frame. The frame must show the
labs with their Release and Collect actions (JupyterHub forbids frames unless the server says
otherwise: deploy/jupyter/instructor/jupyter_server_config.py), then the lab's submissions.
Screenshots go to `browser-screenshots/` (ignored by git).
"""

import re

from local_servers import SCREENSHOTS, launch_chromium
from playwright.sync_api import expect, sync_playwright

TIMEOUT = 60_000


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
