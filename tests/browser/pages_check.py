"""A hostile submission's pages in a real browser: its feedback HTML and its formgrader page.

Run with `make test-browser` (it needs Chromium, as `jupyterlab_check.py` does).

A student who owns their kernel puts scripts in a written answer and returns markup from a
value's `_repr_mimebundle_` (HTML, JavaScript, SVG, markdown). Each payload, if it ran, would set
`window.pwned`, change the page's title and call a local server that records every request. One
submission is autograded and its feedback written; a second one's autograded notebook is then
replaced by a dirty one, as an autograde made before the cleaning step would have left it. The
feedback HTML and both formgrader pages are opened in headless Chromium: no payload may run and
nothing may be fetched from the recorder. A control page, the dirty notebook rendered by
nbconvert's defaults, shows that the payloads do run where nothing cleans them.
"""

import base64
import http.server
import threading
from pathlib import Path

import nbformat
import pytest
from local_servers import SCREENSHOTS, free_port, jupyter
from nbconvert.exporters import HTMLExporter

from course.coursedir import gradebook_db, notebooks, paths
from course.coursedir.nbgrader_run import instructor as run_instructor
from course.coursedir.scratch import fill, scratch_course, solution_cells, submit

pytestmark = pytest.mark.slow  # Chromium on the course's pages
LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)
PNG = (  # one red pixel
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
SEEN = "() => [window.pwned, document.title]"
# Inside the notebook's cells: event handlers, script URLs and frames, and images from outside.
ACTIVE_ELEMENTS = """() => {
  const found = [];
  for (const element of document.querySelectorAll('.cell *')) {
    for (const attribute of element.attributes) {
      if (/^on/i.test(attribute.name) || /^\\s*javascript:/i.test(attribute.value)) {
        found.push(element.tagName + ' ' + attribute.name + '=' + attribute.value);
      }
    }
    if (['IFRAME', 'OBJECT', 'EMBED'].includes(element.tagName)) found.push(element.tagName);
    if (element.tagName === 'IMG' && !element.src.startsWith('data:image/png')) {
      found.push('IMG ' + element.src);
    }
  }
  return found;
}"""
SHOWN_IMAGES = """() => Array.from(document.querySelectorAll('.cell img'))
  .filter(image => image.src.startsWith('data:image/png') && image.naturalWidth > 0).length"""


class Recorder(http.server.BaseHTTPRequestHandler):
    """Records the path of every request it gets (a payload calling home)."""

    hits = []

    def do_GET(self):
        """Record, and answer with nothing."""
        self.hits.append(self.path)
        self.send_response(204)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()

    def log_message(self, *args):
        """Quiet."""


@pytest.fixture(scope="module")
def recorder():
    """A local server that records requests: its URL and its list of hits."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Recorder.hits
    server.shutdown()


def payload(home, name):
    """JavaScript (no spaces) that marks the page as attacked and calls `home`."""
    return f"window.pwned=1;document.title='pwned';fetch('{home}/{name}')"


def written_answer(home):
    """A written answer with scripts, handlers, script links, frames and an outside image."""
    return "\n".join(
        [
            "The shift overflows at $e^{100}$.",
            f"<script>{payload(home, 'script')}</script>",
            f'<img src=x onerror="{payload(home, "onerror")}">',
            f"[see this](javascript:{payload(home, 'link')})",
            f'<svg onload="{payload(home, "svg")}"></svg>',
            f'<iframe src="{home}/frame"></iframe>',
            f"![pixel]({home}/pixel.png)",
        ]
    )


def hostile_bundle(home):
    """What the student's value returns from `_repr_mimebundle_`."""
    return {
        "text/html": f'<img src=x onerror="{payload(home, "html")}">',
        "application/javascript": payload(home, "javascript"),
        "image/svg+xml": (
            f'<svg xmlns="http://www.w3.org/2000/svg" onload="{payload(home, "svg-output")}"></svg>'
        ),
        "text/markdown": f'<img src=x onerror="{payload(home, "markdown-output")}">',
        "text/plain": "a value",
    }


def hostile_code(home, solution):
    """The softmax cell: the solution, then a displayed value, an image and a returned value."""
    return f"""{solution}

from IPython.display import Image, display


class Page:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {hostile_bundle(home)!r}


display(Image(data={base64.b64decode(PNG)!r}))
display(Page())
Page()
"""




def make_dirty(root, student, home):
    """Put raw hostile markdown and outputs in a student's autograded notebook; the notebook."""
    path = paths.autograded(root, student, LAB) / NOTEBOOK
    nb = notebooks.read(path)
    for cell in nb.cells:
        grade_id = notebooks.nbgrader_meta(cell).get("grade_id")
        if grade_id == "written_stability":
            cell.source = written_answer(home)
        if grade_id == "softmax":
            data = hostile_bundle(home)
            cell.outputs.append(nbformat.v4.new_output("display_data", data=data))
    notebooks.write(nb, path)
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory, recorder):
    """Two hostile students autograded (one left dirty afterwards) with feedback: the root."""
    home, _ = recorder
    root = scratch_course(tmp_path_factory.mktemp("pages"), [LAB])
    answers = solution_cells(LAB)
    release = notebooks.read(root / "release" / LAB / NOTEBOOK)
    hostile = fill(
        release,
        {
            **answers,
            "softmax": hostile_code(home, answers["softmax"]),
            "written_stability": written_answer(home),
        },
    )
    for student in ("hostile", "stale"):
        submit(root, LAB, student, hostile)
    for command in (["autograde"], ["feedback", "--provisional"]):
        result = run_instructor(root, command[0], LAB, *command[1:])
        assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    make_dirty(root, "stale", home)
    return root


@pytest.fixture(scope="module")
def formgrader(course):
    """A Jupyter server with the formgrader on the scratch course: (base URL, token)."""
    with jupyter("server", course, f"--ServerApp.root_dir={course}") as address:
        yield address


def visit(browser, url, recorder, screenshot):
    """Open `url` and give its scripts time to run: what they could have changed or called.

    Returns ((window.pwned, the title), the active elements, the PNG images shown, the requests
    the recorder got meanwhile).
    """
    hits = recorder[1]
    hits.clear()
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url, wait_until="load")
    page.wait_for_timeout(3000)
    seen = page.evaluate(SEEN), page.evaluate(ACTIVE_ELEMENTS), page.evaluate(SHOWN_IMAGES)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / screenshot, full_page=True)
    page.close()
    return (*seen, list(hits))


def submission_url(root, formgrader, student):
    """The formgrader's page of a student's lab."""
    with gradebook_db.open_gradebook(root) as gradebook:
        notebook = Path(NOTEBOOK).stem
        submission = gradebook.find_submission_notebook(notebook, LAB, student).id
    url, token = formgrader
    return f"{url}/formgrader/submissions/{submission}/?token={token}"


def assert_nothing_ran(seen):
    """No payload marked the page, changed its title or called home; no active element is left."""
    (pwned, title), active, images, hits = seen
    assert pwned is None and title != "pwned", (pwned, title)
    assert active == []
    assert hits == []
    assert images >= 1, "the student's PNG image is not shown"


def test_the_payloads_run_in_a_page_that_nothing_cleans(course, browser, recorder, tmp_path):
    dirty = notebooks.read(paths.autograded(course, "stale", LAB) / NOTEBOOK)
    control = tmp_path / "control.html"
    control.write_text(HTMLExporter(template_name="classic").from_notebook_node(dirty)[0])
    (pwned, title), active, _, hits = visit(
        browser, control.as_uri(), recorder, "pages_control.png"
    )
    assert pwned == 1 and title == "pwned"
    assert active
    assert hits, "no payload called the recorder"


def test_the_feedback_page_runs_nothing(course, browser, recorder):
    html = course / "feedback" / "hostile" / LAB / f"{Path(NOTEBOOK).stem}.html"
    assert_nothing_ran(visit(browser, html.as_uri(), recorder, "pages_feedback.png"))


@pytest.mark.parametrize("student", ["hostile", "stale"])
def test_the_formgrader_page_runs_nothing(course, browser, recorder, formgrader, student):
    url = submission_url(course, formgrader, student)
    assert_nothing_ran(visit(browser, url, recorder, f"pages_{student}.png"))
