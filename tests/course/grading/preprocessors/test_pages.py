"""What pages show of a hostile submission: markdown and outputs cleaned, every output cut.

Unit tests of `course.grading.preprocessors.pages` and `course.grading.preprocessors.output_limits`,
and of the pages the course's configuration renders; `tests/browser/pages_check.py` opens the real
pages in Chromium.
"""

import copy
import json
from html.parser import HTMLParser

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import (
    new_code_cell,
    new_markdown_cell,
    new_notebook,
    new_output,
    new_raw_cell,
)
from traitlets.config import Config

from course.coursedir.scratch import solution_cells
from course.grading.preprocessors.feedback import FeedbackExporter
from course.grading.preprocessors.output_budget import BudgetedOutputs, OutputBudget
from course.grading.preprocessors.output_limits import (
    Budget,
    LimitOutputSize,
    cut_output,
    size_text,
)
from course.grading.preprocessors.pages import (
    AS_TEXT_NOTE,
    MAX_MARKDOWN_CHARACTERS,
    MAX_SHOWN_CODE_CHARACTERS,
    CleanSubmission,
    markdown_is_inert,
)
from course.lms import feedback_zip

LAB = "01_softmax"
LIMIT = 100_000
HUGE = 3 * 1024 * 1024
NOTE_SLACK = 1_000  # the note that says what was cut, and JSON punctuation
PNG = (  # one pixel
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAC"
    "hwGA60e6kgAAAABJRU5ErkJggg=="
)
RUN = "window.pwned=1"
HOSTILE_MARKDOWN = {
    "script": f"An answer <script>{RUN}</script>",
    "onerror": f'<img src=x onerror="{RUN}">',
    "javascript link": f"[see this](javascript:{RUN})",
    "encoded javascript link": f"[see this](&#106;avascript:{RUN})",
    "svg with script": f"<svg><script>{RUN}</script></svg>",
    "svg onload": f'<svg onload="{RUN}"></svg>',
    "iframe": f'<iframe src="javascript:{RUN}"></iframe>',
    "object": '<object data="data:text/html,<script>parent.pwned=1</script>"></object>',
    "mermaid block": f'```mermaid\n<img src=x onerror="{RUN}">\n```',
    "data link": f"[x](data:text/html,<script>{RUN}</script>)",
    "outside image": "![chart](http://127.0.0.1:9/pwned.png)",
    "mathjax link": f"$\\href{{javascript:{RUN}}}{{x}}$",
    "behind a comment": f"<!-- a comment --><script>{RUN}</script>",
    "broken tag": f"<scr<script>ipt>{RUN}</script>",
    "style": "<style>body { background: url(http://127.0.0.1:9/pwned.png) }</style>",
}
LEGITIMATE_MARKDOWN = [
    "Softmax of $s$ is $e^{s_i} / \\sum_j e^{s_j}$, and $a < b$ when `x < y && z`.",
    "| a | b |\n|:--|--:|\n| 1 | 2 |\n\n3. three\n4. four\n\n> quoted & kept",
    "A [link](https://pytorch.org/docs) and a [section](#top), <https://example.org>.",
    "```python\nweights = scores.softmax(dim=-1)  # <script> in code is text\n```",
    "![attached figure](attachment:figure.png)",
]


def active_markup(html):
    """The places in a page where markup could run a script or load something: a list."""
    finder = ActiveMarkupFinder()
    finder.feed(html)
    finder.close()
    return finder.found


class ActiveMarkupFinder(HTMLParser):
    """Collects scripts and styles that hold a payload, event handlers, script URLs and frames."""

    def __init__(self):
        super().__init__()
        self.found = []
        self.element = ""

    def handle_starttag(self, tag, attrs):
        """Note frames, objects, event handlers and URLs that run script or leave the page."""
        if tag in ("iframe", "object", "embed", "svg"):
            self.found.append(tag)
        self.element = tag
        for name, value in attrs:
            address = "".join((value or "").split()).lower()
            if name.startswith("on") or address.startswith(("javascript:", "data:text")):
                self.found.append(f"{tag} {name}={value}")
            if tag == "img" and name == "src" and not address.startswith("data:image/png"):
                self.found.append(f"img src={value}")

    def handle_data(self, data):
        """Note a script or style element that holds a payload."""
        if self.element in ("script", "style") and "pwned" in data:
            self.found.append(f"{self.element} {data}")

    def handle_endtag(self, tag):
        """An element ends."""
        self.element = ""


def page(nb, config):
    """A notebook rendered as the formgrader's exporter renders it, with the course's config."""
    exporter = HTMLExporter(config=config, template_name="classic")
    return exporter.from_notebook_node(copy.deepcopy(nb))[0]


def cleaned(nb):
    """A copy of `nb` after CleanSubmission."""
    return CleanSubmission().preprocess(copy.deepcopy(nb), {})[0]


def rich_output(data, metadata=None, output_type="display_data"):
    """A display_data (or execute_result) output."""
    extra = {"execution_count": 1} if output_type == "execute_result" else {}
    return new_output(output_type, data=data, metadata=metadata or {}, **extra)


def hostile_outputs():
    """Rich outputs a student's kernel can send: HTML, JavaScript, SVG, markdown, widgets."""
    return [
        rich_output(
            {"text/html": f"<b>x</b><script>{RUN}</script>", "text/plain": "<Result>"},
            output_type="execute_result",
        ),
        rich_output({"application/javascript": RUN}),
        rich_output({"image/svg+xml": f"<svg><script>{RUN}</script></svg>"}),
        rich_output({"text/markdown": f"<img src=x onerror='{RUN}'>"}),
        rich_output({"text/html": f"<img src=x onerror='{RUN}'>"}, {"text/html": {"isolated": 1}}),
        rich_output({"application/vnd.jupyter.widget-view+json": {"model_id": "x"}}),
        rich_output({"image/png": f'"><script>{RUN}</script>'}),
        rich_output({"text/latex": f"$\\href{{javascript:{RUN}}}{{x}}$"}),
    ]


def hostile_notebook():
    """A submission with every hostile markdown cell and output, and legitimate ones."""
    cells = [new_markdown_cell(source) for source in HOSTILE_MARKDOWN.values()]
    cells += [new_markdown_cell(source) for source in LEGITIMATE_MARKDOWN]
    cells[-1].attachments = {"figure.png": {"image/png": PNG, "image/svg+xml": "<svg/>"}}
    cells.append(new_code_cell("show()", outputs=hostile_outputs()))
    cells.append(new_raw_cell(f"<script>{RUN}</script>", metadata={"raw_mimetype": "text/html"}))
    cells.append(
        new_code_cell(
            "figure()",
            outputs=[rich_output({"image/png": PNG, "text/plain": "<Figure>"}, {"image/png": {}})],
        )
    )
    nb = new_notebook(cells=cells)
    nb.metadata.widgets = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return nb


@pytest.mark.parametrize("name", HOSTILE_MARKDOWN)
def test_hostile_markdown_is_shown_as_text(name, course_config):
    source = HOSTILE_MARKDOWN[name]
    nb = cleaned(new_notebook(cells=[new_markdown_cell(source)]))
    assert not markdown_is_inert(source, {})
    assert nb.cells[0].source.startswith(AS_TEXT_NOTE)
    assert source in nb.cells[0].source
    assert active_markup(page(nb, course_config)) == []


@pytest.mark.parametrize("source", LEGITIMATE_MARKDOWN)
def test_legitimate_markdown_is_kept_as_written(source):
    attachments = {"figure.png": {"image/png": PNG}}
    assert markdown_is_inert(source, attachments)
    nb = new_notebook(cells=[new_markdown_cell(source, attachments=attachments)])
    assert cleaned(nb).cells[0].source == source


def test_the_courses_written_answers_are_kept_as_written():
    answer = solution_cells(LAB)["written_stability"]
    assert markdown_is_inert(answer, {})


def test_a_text_version_stays_text_when_cleaned_again():
    once = cleaned(hostile_notebook())
    assert cleaned(once) == once


def test_hostile_outputs_keep_only_text_and_real_images():
    outputs = cleaned(hostile_notebook()).cells[-3].outputs
    kept = [set(output.data) for output in outputs]
    assert kept == [{"text/plain"}] * len(outputs)
    assert outputs[0].data["text/plain"] == "<Result>"
    assert outputs[1].data["text/plain"] == f"(application/javascript, shown as text)\n{RUN}"
    assert all(output.metadata == {} for output in outputs)


def test_images_plain_text_and_math_are_kept():
    nb = cleaned(hostile_notebook())
    assert nb.cells[-1].outputs[0].data == {"image/png": PNG, "text/plain": "<Figure>"}
    assert nb.cells[-4].attachments == {"figure.png": {"image/png": PNG}}
    math = {"text/latex": "$\\frac{1}{2}$", "text/plain": "1/2"}
    nb = cleaned(new_notebook(cells=[new_code_cell(outputs=[rich_output(dict(math))])]))
    assert nb.cells[0].outputs[0].data == math


def test_raw_cells_and_widget_state_are_not_emitted():
    nb = cleaned(hostile_notebook())
    assert "widgets" not in nb.metadata
    assert nb.cells[-2].metadata == {}


def test_the_page_of_a_hostile_notebook_runs_nothing_and_shows_the_rest(course_config):
    html = page(hostile_notebook(), course_config)
    assert active_markup(html) == []
    assert f"data:image/png;base64,{PNG}" in html
    assert "<math" in html and "e^{s_i}" not in html  # math as MathML


def test_the_page_check_sees_the_payloads_without_the_course_config():
    raw = HTMLExporter(template_name="classic").from_notebook_node(hostile_notebook())[0]
    assert len(active_markup(raw)) >= len(HOSTILE_MARKDOWN) // 2


def test_the_feedback_page_loads_no_mathjax(feedback_config):
    resources = {"nbgrader": {"notebook": LAB, "score": 1, "max_score": 2, "late_penalty": 0}}
    nb = hostile_notebook()
    html = FeedbackExporter(config=feedback_config).from_notebook_node(nb, resources=resources)[0]
    assert "cdnjs" not in html and "MathJax.Hub" not in html
    assert "<script" not in html.lower()
    assert active_markup(html) == []
    assert "<math" in html and "e^{s_i}" not in html  # math as MathML


def output_size(output):
    """Characters an output takes in a notebook file."""
    return len(json.dumps(output))


HUGE_OUTPUTS = {
    "stream": lambda: new_output("stream", name="stdout", text="x" * HUGE),
    "stream of one long line per print": lambda: new_output(
        "stream", name="stdout", text=("y" * 9_000 + "\n") * 500
    ),
    "value": lambda: rich_output({"text/plain": "v" * HUGE}, output_type="execute_result"),
    "html": lambda: rich_output({"text/html": "<p>" * HUGE, "text/plain": "<HTML>"}),
    "javascript": lambda: rich_output({"application/javascript": "1;" * HUGE}),
    "svg": lambda: rich_output({"image/svg+xml": "<svg>" + " " * HUGE + "</svg>"}),
    "markdown": lambda: rich_output({"text/markdown": "m" * HUGE}),
    "image": lambda: rich_output({"image/png": "A" * HUGE, "text/plain": "<Figure>"}),
    "json": lambda: rich_output({"application/json": {"k": "j" * HUGE}}),
    "many types": lambda: rich_output({f"text/x-{i}": "t" * 1000 for i in range(1000)}),
    "long type name": lambda: rich_output({"text/" + "n" * HUGE: "t"}),
    "metadata": lambda: rich_output({"text/plain": "x"}, {"image/png": {"m": "d" * HUGE}}),
    "exception message": lambda: new_output(
        "error", ename="ValueError", evalue="e" * HUGE, traceback=["ValueError: ..."]
    ),
    "exception name": lambda: new_output("error", ename="E" * HUGE, evalue="", traceback=[]),
    "traceback": lambda: new_output(
        "error", ename="RecursionError", evalue="", traceback=["t" * 50_000] * 100
    ),
}


@pytest.mark.parametrize("kind", HUGE_OUTPUTS)
def test_every_kind_of_huge_output_is_cut(kind):
    output = HUGE_OUTPUTS[kind]()
    cut_output(output, LIMIT)
    assert output_size(output) < LIMIT + NOTE_SLACK
    assert "output cut: " in json.dumps(output)
    nbformat.validate(new_notebook(cells=[new_code_cell(outputs=[output])]))


def test_the_autograde_chain_cuts_every_output_of_a_cell():
    outputs = [factory() for factory in HUGE_OUTPUTS.values()]
    cell = new_code_cell(outputs=outputs)
    nb = new_notebook(cells=[cell])
    nb = CleanSubmission().preprocess(nb, {})[0]
    nb = LimitOutputSize(max_characters=LIMIT).preprocess(nb, {})[0]
    for output in nb.cells[0].outputs:
        assert output_size(output) < LIMIT + NOTE_SLACK


@pytest.mark.slow  # outputs of many megabytes
def test_a_cell_keeps_its_outputs_while_they_fit_and_says_how_many_it_dropped():
    many = [rich_output({"text/plain": "<Figure>", "image/png": PNG}) for _ in range(10_000)]
    cell = new_code_cell(outputs=many)
    limits = LimitOutputSize(max_characters=LIMIT, max_cell_characters=LIMIT)
    nb = limits.preprocess(new_notebook(cells=[cell]), {})[0]
    outputs = nb.cells[0].outputs
    assert 1 < len(outputs) < len(many)
    assert sum(len(json.dumps(output)) for output in outputs) < LIMIT + NOTE_SLACK
    assert f"{len(many) - len(outputs) + 1} more outputs of this cell dropped" in outputs[-1].text
    nbformat.validate(nb)


def test_a_notebook_keeps_its_cells_outputs_while_they_fit():
    cells = [new_code_cell(outputs=[rich_output({"text/plain": "x" * 90_000})]) for _ in range(50)]
    limits = LimitOutputSize(max_characters=LIMIT, max_notebook_characters=10 * LIMIT)
    nb = limits.preprocess(new_notebook(cells=cells), {})[0]
    kept = [cell for cell in nb.cells if "text/plain" in cell.outputs[0].get("data", {})]
    assert 5 < len(kept) < 12
    assert all("1 more outputs of this cell dropped" in cell.outputs[0].text
               for cell in nb.cells[len(kept) + 1:])
    assert len(json.dumps(nb)) < 10 * LIMIT + 50 * NOTE_SLACK
    nbformat.validate(nb)


def test_small_outputs_are_not_touched():
    outputs = [
        new_output("stream", name="stdout", text="fine\n"),
        rich_output({"text/plain": "tensor([0.1, 0.9])", "image/png": PNG}),
        new_output("error", ename="ValueError", evalue="bad", traceback=["a", "", "b"]),
    ]
    before = copy.deepcopy(outputs)
    for output in outputs:
        cut_output(output, LIMIT)
    assert outputs == before


def test_a_negative_limit_is_refused():
    with pytest.raises(ValueError, match="0 characters or more"):
        Budget(-1)


def test_the_lms_feedback_notebook_is_cleaned_and_cut(tmp_path, course_config):
    nb = hostile_notebook()
    nb.cells.append(new_code_cell(outputs=[HUGE_OUTPUTS["value"]()]))
    path = tmp_path / "autograded.ipynb"
    nbformat.write(nb, path)
    feedback = feedback_zip.feedback_notebook(path, [("softmax", 1, 2, "")], LAB)
    assert active_markup(page(feedback, course_config)) == []
    assert all(output_size(o) < LIMIT + NOTE_SLACK for o in feedback.cells[-1].outputs)
    assert feedback.cells[0].source.startswith(f"# Feedback on {LAB}")


# Outputs as they arrive from a kernel (output_budget.py): each message goes through nbclient's
# process_message, as in the course's executor.
CELL_LIMIT = 20 * LIMIT
MESSAGE = 1_000_000  # characters of each message of a flood


class BudgetedClient(BudgetedOutputs, NotebookClient):
    """nbclient with the course's handling of outputs, fed messages by hand."""


def budgeted_client(cells=1):
    """A client of a notebook of `cells` code cells, its budget at the course's limits."""
    nb = new_notebook(cells=[new_code_cell() for _ in range(cells)])
    client = BudgetedClient(nb)
    client.clear_before_next_output = False
    return client


def kernel_message(msg_type, **content):
    """An IOPub message of one cell, as jupyter_client delivers it."""
    header = {"msg_type": msg_type, "msg_id": "m"}
    return {"msg_type": msg_type, "header": header, "parent_header": {"msg_id": "p"},
            "content": content}


def send(client, message, index=0):
    """Let the client process one message for cell `index`."""
    client.process_message(message, client.nb.cells[index], index)


def held(client):
    """Characters of all the outputs the client holds."""
    return sum(output_size(o) for cell in client.nb.cells for o in cell.get("outputs", []))


ARRIVING = {
    "stdout": lambda text: kernel_message("stream", name="stdout", text=text),
    "stderr": lambda text: kernel_message("stream", name="stderr", text=text),
    "display_data": lambda text: kernel_message(
        "display_data", data={"text/plain": text}, metadata={}
    ),
    "execute_result": lambda text: kernel_message(
        "execute_result", data={"text/plain": text}, metadata={}, execution_count=1
    ),
    "error": lambda text: kernel_message(
        "error", ename="ValueError", evalue="flood", traceback=[text[:1000]] * (len(text) // 1000)
    ),
    "image": lambda text: kernel_message(
        "display_data", data={"image/png": text, "text/plain": "<Figure>"}, metadata={}
    ),
}


@pytest.mark.parametrize("kind", ARRIVING)
def test_every_kind_of_output_is_kept_within_the_budget_as_it_arrives(kind):
    client = budgeted_client()
    for _ in range(100):
        send(client, ARRIVING[kind]("x" * MESSAGE))
        assert held(client) <= CELL_LIMIT + NOTE_SLACK  # never more, not even for a moment
    assert client.output_budget.lost > 90 * MESSAGE
    nbformat.validate(client.nb)


def test_a_stream_is_cut_as_it_grows_and_the_cut_is_told_with_its_size():
    client = budgeted_client()
    for _ in range(50):
        send(client, ARRIVING["stdout"]("y" * MESSAGE))
        assert len(client.nb.cells[0].outputs) == 1  # one stream, never longer than an output
        assert len(client.nb.cells[0].outputs[0].text) <= LIMIT + NOTE_SLACK
    assert "output cut: 49.9 MB more than the grader keeps" in client.output_budget.note().text


def test_a_message_over_the_limit_of_an_output_is_cut_before_it_is_kept():
    client = budgeted_client()
    send(client, ARRIVING["display_data"]("v" * HUGE))
    send(client, ARRIVING["stdout"]("fine\n"))
    first, second = client.nb.cells[0].outputs
    assert output_size(first) < LIMIT + NOTE_SLACK and "output cut: " in first.data["text/plain"]
    assert second.text == "fine\n"


def test_past_the_cells_budget_outputs_are_counted_not_kept():
    client = budgeted_client()
    for _ in range(1000):
        send(client, ARRIVING["display_data"]("z" * 90_000))
    kept = client.nb.cells[0].outputs
    assert 15 < len(kept) < 23
    assert client.output_budget.lost > (1000 - len(kept)) * 90_000


def test_tiny_outputs_count_what_the_grader_holds_of_each():
    client = budgeted_client()
    for _ in range(3_000):
        send(client, ARRIVING["display_data"]("t"))
        send(client, ARRIVING["stderr"]("t"))
    assert len(client.nb.cells[0].outputs) < CELL_LIMIT / 1_000


def test_a_notebook_keeps_its_cells_outputs_while_they_fit_as_they_arrive():
    client = budgeted_client(cells=15)
    for index in range(15):
        client.output_budget.start_cell()
        for _ in range(25):
            send(client, ARRIVING["display_data"]("n" * 200_000), index)
    assert held(client) <= 10 * CELL_LIMIT + NOTE_SLACK
    assert len(client.nb.cells[9].outputs) > 10 and client.nb.cells[-1].outputs == []


def test_cleared_outputs_give_their_room_back():
    client = budgeted_client()
    for step in range(200):
        send(client, kernel_message("clear_output", wait=step % 2 == 0))
        send(client, ARRIVING["display_data"](f"{step}: " + "p" * 50_000))
        send(client, ARRIVING["stdout"]("q" * 50_000))
    assert [o.output_type for o in client.nb.cells[0].outputs] == ["display_data", "stream"]
    assert client.nb.cells[0].outputs[0].data["text/plain"].startswith("199: ")
    assert client.output_budget.lost == 0


def test_a_display_updated_by_its_id_is_cut_and_only_kept_displays_are_named():
    client = budgeted_client()
    transient = {"display_id": "d"}
    send(client, kernel_message("display_data", data={"text/plain": "start"}, metadata={},
                                transient=transient))
    for _ in range(30):
        send(client, kernel_message("update_display_data", data={"text/plain": "u" * MESSAGE},
                                    metadata={}, transient=transient))
    (shown,) = client.nb.cells[0].outputs
    assert shown.output_type == "display_data" and "output cut: " in shown.data["text/plain"]
    assert output_size(shown) < LIMIT + NOTE_SLACK
    for _ in range(100):
        send(client, kernel_message("display_data", data={"text/plain": "w" * 90_000},
                                    metadata={}, transient={"display_id": "e"}))
    assert len(client._display_id_map["e"][0]) == len(client.nb.cells[0].outputs) - 1


@pytest.mark.parametrize(
    "message",
    [
        kernel_message("stream", name="stdout", text=["not", "text"]),
        kernel_message("error", ename="E", evalue="e", traceback="t" * HUGE),
        kernel_message("display_data", data=["x"], metadata={}),
        kernel_message("execute_result", data={"text/plain": "x"}, metadata={},
                       execution_count="one"),
        kernel_message("display_data", data={"text/plain": 3}, metadata={}),
        kernel_message("stream", name="stdout"),
    ],
)
def test_a_malformed_output_is_dropped(message):
    client = budgeted_client()
    send(client, message)
    assert client.nb.cells[0].outputs == []


def test_no_widget_state_is_kept():
    client = budgeted_client()
    state = {"_model_module": "@jupyter-widgets/output", "_model_name": "OutputModel",
             "outputs": [], "msg_id": "p", "big": "s" * MESSAGE}
    send(client, kernel_message("comm_open", comm_id="c", target_name="jupyter.widget",
                                data={"state": state}))
    send(client, ARRIVING["stdout"]("captured\n"))
    assert client.widget_state == {} and client.comm_objects == {}
    assert client.nb.cells[0].outputs[0].text == "captured\n"


def test_the_budget_is_the_one_limit_output_size_is_configured_with():
    config = Config()
    config.LimitOutputSize.max_characters = 10
    client = BudgetedClient(new_notebook(), config=config)
    assert (client.output_budget.per_output, client.output_budget.per_cell) == (10, CELL_LIMIT)


def test_a_budget_needs_limits_of_zero_characters_or_more():
    with pytest.raises(ValueError, match="0 characters or more"):
        OutputBudget(LIMIT, -1, LIMIT)


@pytest.mark.parametrize(
    "characters, shown",
    [(12, "12 characters"), (8_388_608, "8.39 MB"), (812_000_000, "812 MB"), (1.14e9, "1.14 GB")],
)
def test_what_was_cut_is_told_as_a_size_a_person_reads(characters, shown):
    assert size_text(characters) == shown


def test_a_markdown_cell_too_large_to_render_is_shown_as_text_unrendered():
    within = "*fine* " * ((MAX_MARKDOWN_CHARACTERS - 1) // 7)
    assert markdown_is_inert(within, {})
    nb = new_notebook(cells=[new_markdown_cell(within + "*and more*")])
    cleaned, _ = CleanSubmission().preprocess(nb, {})
    assert cleaned.cells[0].source.startswith(AS_TEXT_NOTE)
    assert within in cleaned.cells[0].source


PAGE_MEMORY_BYTES = 256 * 2**20  # what the formgrader may hold to render a submission's page


def formgrader_page(nb, config, notebook_path):
    """A submission's page as the formgrader renders it: its template, its resources."""
    config = copy.deepcopy(config)
    config.HTMLExporter.template_name = "formgrade"
    resources = {"assignment_id": LAB, "notebook_id": f"{LAB}_lab", "submission_id": "s1",
                 "index": 0, "total": 1, "base_url": "", "student": "ada", "last_name": "",
                 "first_name": "", "notebook_path": notebook_path}  # fmt: skip
    return HTMLExporter(config=config).from_notebook_node(nb, resources=resources)[0]


def test_the_formgrader_shows_a_4_mb_code_cell_cut_unhighlighted_and_says_where_it_is(
    course_config,
):
    import time
    import tracemalloc

    huge = "CONSTANTS = [" + "1, " * (4_000_000 // 3) + "]  # the end\n"
    nb = new_notebook(cells=[new_code_cell("x = 1  # small"), new_code_cell(huge)])
    path = "course/autograded/ada/01_softmax/01_softmax_lab.ipynb"
    tracemalloc.start()
    started = time.process_time()
    try:
        html = formgrader_page(nb, course_config, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print(f"a 4 MB code cell's formgrader page: {len(html) / 1e6:.2f} MB of HTML, "
          f"{time.process_time() - started:.1f} s of CPU time, {peak / 2**20:.0f} MiB at peak")
    assert '<span class="n">x</span>' in html  # a small cell is highlighted
    assert html.count('<span class="mi">1</span>') == 1  # the small cell's: the long one is plain
    assert "CONSTANTS = [1, 1, 1," in html and "# the end" not in html
    assert f"The whole cell, as it ran: cell 2 of {path}." in html
    assert "3.8 MB more are cut here, on the page only" in html
    assert len(html) < 2 * MAX_SHOWN_CODE_CHARACTERS + 200_000  # the page itself, and the cut
    assert peak < PAGE_MEMORY_BYTES
    assert nb.cells[1].source == huge  # what is graded stays whole
