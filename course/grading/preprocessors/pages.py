"""What a page shows of a submission: its markdown and outputs, with nothing in them that runs.

A submission's markdown cells and outputs come from its student, and reach pages that others
open: the formgrader (served by the instructor's own Jupyter server), the feedback HTML and the
notebooks that go back through the LMS. `CleanSubmission` keeps what such a page shows without
running anything: plain text, LaTeX, PNG and JPEG images, and markdown whose HTML is only what
markdown itself makes (paragraphs, emphasis, lists, tables, code, math, links to web and mail
addresses, images attached to the cell). Everything else is shown as text: a rich output (HTML,
SVG, JavaScript, markdown, widgets, any other type) becomes its plain text, and a markdown cell
with HTML of its own, an unsafe link or an outside image becomes its source in a code block.
"""

import base64
import binascii
import html
import re
from html.parser import HTMLParser

from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbformat.v4 import new_markdown_cell
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import List

from course.grading.preprocessors.findings import FINDINGS_KEY
from course.grading.preprocessors.output_limits import size_text

SHOWN_OUTPUT_TYPES = ("text/plain", "text/latex", "image/png", "image/jpeg")
BASE64_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")
MARKDOWN_TAGS = frozenset(
    "p br hr em strong del a img code pre div span blockquote ul ol li dl dt dd input "
    "h1 h2 h3 h4 h5 h6 table thead tbody tr th td".split()
)
MARKDOWN_ATTRIBUTES = frozenset(
    "id class href src alt title style start type disabled checked".split()
)
SAFE_STYLE = re.compile(r"text-align:\s*(left|right|center);?")
WEB_ADDRESS = re.compile(r"(https?|mailto):|#|[^:/?#]*([/?#]|$)", re.IGNORECASE)
EMBEDDED_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*")
CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]+")
# MathJax commands that make links, load extensions or set HTML attributes.
ACTIVE_TEX = re.compile(r"\\(href|url|require|unicode|class|cssId|style|html|data)(?![A-Za-z])")
# A longer markdown cell is shown as its source, unrendered: rendering costs many times its size.
MAX_MARKDOWN_CHARACTERS = 100_000
# A longer code cell is shown as plain text: pygments takes minutes and 40 times its size in HTML
# on a cell of a few megabytes.
MAX_HIGHLIGHT_CHARACTERS = 100_000
# A page shows this much of a code cell, and says where the rest can be read: a cell of
# megabytes would make a page of as many, for a browser to lay out.
MAX_SHOWN_CODE_CHARACTERS = 200_000
CUT_CODE_NOTE = (
    "\n# [This page shows the first {shown} characters of this cell; {rest} more are cut here, "
    "on the page only. The whole cell, as it ran: cell {number} of {where}.]"
)
AS_TEXT_NOTE = (
    "*(This cell holds HTML, a link or an image that a page could run or fetch, so it is shown "
    "as text.)*"
)


class PageStep(NbGraderPreprocessor):
    """A step of the pages' exporter: takes the exporter's `display_data_priority` quietly.

    nbconvert configures every step of an exporter with it; nbgrader's base class declares it
    unconfigurable, so traitlets would warn at every page for each step.
    """

    display_data_priority = List().tag(config=True)


class CleanSubmission(PageStep):
    """Keep, of each cell, what a page can show without running anything; the rest as text."""

    def preprocess(self, nb, resources):
        """Clean every cell, and drop the widget state that would load scripts from the web."""
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        """Clean one cell: its markdown, raw content or outputs, and its attachments."""
        if "attachments" in cell:
            cell.attachments = shown_attachments(cell.attachments)
        if cell.cell_type == "markdown" and not markdown_is_inert(
            cell.source, cell.get("attachments", {})
        ):
            cell.source = markdown_as_text(cell.source)
        elif cell.cell_type == "raw":
            cell.metadata.pop("format", None)  # a raw cell is then never emitted as HTML
            cell.metadata.pop("raw_mimetype", None)
        elif cell.cell_type == "code":
            for output in cell.outputs:
                clean_output(output)
        return cell, resources


class BoundedHighlight2HTML(Highlight2HTML):
    """nbconvert's `highlight_code` filter, but a cell over MAX_HIGHLIGHT_CHARACTERS is shown as
    plain, escaped text (the configuration gives it to every page: the formgrader's)."""

    def __call__(self, source, language=None, metadata=None):
        """The HTML of a code cell's source."""
        if len(source) > MAX_HIGHLIGHT_CHARACTERS:
            return f'<div class="highlight"><pre>{html.escape(source, quote=False)}</pre></div>'
        return super().__call__(source, language, metadata)


def bounded_highlight(exporter, nb):
    """The `highlight_code` filter of `exporter` for `nb`'s language, within the bound."""
    language = nb.metadata.get("language_info", {})
    lexer = language.get("pygments_lexer", language.get("name"))
    return BoundedHighlight2HTML(pygments_lexer=lexer, parent=exporter)


class CutLongCode(PageStep):
    """Show a page's reader the first MAX_SHOWN_CODE_CHARACTERS of a longer code cell, and where
    the whole cell is: the notebook's file, which stays as it was graded."""

    def preprocess_cell(self, cell, resources, index):
        """Cut one code cell, for this page only."""
        if cell.cell_type == "code" and len(cell.source) > MAX_SHOWN_CODE_CHARACTERS:
            where = resources.get("notebook_path") or "the notebook as it was submitted"
            rest = len(cell.source) - MAX_SHOWN_CODE_CHARACTERS
            note = CUT_CODE_NOTE.format(
                shown=f"{MAX_SHOWN_CODE_CHARACTERS:,}", rest=size_text(rest), number=index + 1,
                where=where,
            )
            cell.source = cell.source[:MAX_SHOWN_CODE_CHARACTERS] + note
        return cell, resources


class ShowFindings(PageStep):
    """Show a page's reader the findings about the submission (`findings`) first."""

    def preprocess(self, nb, resources):
        """Put a markdown cell listing the findings, if any, above the submission's first cell."""
        listed = nb.metadata.get(FINDINGS_KEY) or []
        if listed:
            nb.cells.insert(0, new_markdown_cell(findings_markdown(listed)))
        return nb, resources


def findings_markdown(listed):
    """The markdown that lists a submission's findings, as text."""
    lines = "\n".join(str(finding).replace("`", "'") for finding in listed)
    return (
        "**Findings** about the code of this submission (from a reading of its text, best "
        f"effort; no points depend on them):\n\n```text\n{lines}\n```"
    )


def clean_output(output):
    """Reduce a rich output to the types a page shows as they are; the others become text."""
    if output.output_type not in ("display_data", "execute_result"):
        return
    hidden = {key: value for key, value in output.data.items() if not shown(key, value)}
    for key in hidden:
        del output.data[key]
    if hidden and "text/plain" not in output.data:
        mime_type, value = next(iter(hidden.items()))
        output.data["text/plain"] = f"({mime_type}, shown as text)\n{as_text(value)}"
    sizes = {key: image_size(value) for key, value in output.get("metadata", {}).items()}
    output.metadata = {key: size for key, size in sizes.items() if key in output.data and size}


def shown(mime_type, value):
    """True for an output type a page shows as it is: text, LaTeX without links, real images."""
    if mime_type not in SHOWN_OUTPUT_TYPES or not isinstance(value, str):
        return False
    if mime_type == "text/latex":
        return not ACTIVE_TEX.search(value)
    return mime_type == "text/plain" or is_base64(value)


def as_text(value):
    """An output's value as text (a JSON value as its repr)."""
    return value if isinstance(value, str) else repr(value)


def image_size(metadata):
    """The width and height (numbers) of an image's output metadata; {} without them."""
    if not isinstance(metadata, dict):
        return {}
    return {
        key: metadata[key] for key in ("width", "height")
        if isinstance(metadata.get(key), int | float) and not isinstance(metadata[key], bool)
    }  # fmt: skip


def is_base64(text):
    """True when `text` is base64 (line breaks allowed), as image data must be."""
    try:
        base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def shown_attachments(attachments):
    """A cell's attachments reduced to base64 PNG, JPEG and GIF images."""
    kept = {}
    for name, bundle in attachments.items():
        images = {
            mime_type: value for mime_type, value in bundle.items()
            if mime_type in BASE64_IMAGE_TYPES and isinstance(value, str) and is_base64(value)
        }  # fmt: skip
        if images:
            kept[name] = images
    return kept


def markdown_is_inert(source, attachments):
    """True when markdown renders (as nbconvert renders it) to markdown's own safe HTML only.

    A source over MAX_MARKDOWN_CHARACTERS is not rendered here: it is shown as text.
    """
    if len(source) > MAX_MARKDOWN_CHARACTERS:
        return False
    renderer = IPythonRenderer(escape=False, attachments=attachments)
    try:
        html, state = MarkdownWithMath(renderer=renderer).parse(source)
    except Exception:  # any source nbconvert cannot render is shown as text
        return False
    if not all(inert_token(token) for token in tokens(state.tokens)):
        return False
    return only_allowed_markup(html, markdown_tag)


def tokens(found):
    """Every token of a mistune token tree, children included."""
    for token in found:
        yield token
        yield from tokens(token.get("children", ()))


def inert_token(token):
    """False for raw HTML, and for text outside code with a MathJax command for links or HTML."""
    if token["type"] in ("block_html", "inline_html"):
        return False
    if token["type"] in ("codespan", "block_code"):
        return True
    text = token.get("raw") or token.get("attrs", {}).get("body", "")
    return not ACTIVE_TEX.search(text)


def markdown_as_text(source):
    """Markdown that shows `source` as it is, in a code block, under a note saying why."""
    longest = max((len(run) for run in re.findall(r"`+|~+", source)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{AS_TEXT_NOTE}\n\n{fence}text\n{source}\n{fence}\n"


def only_allowed_markup(html, allowed_tag):
    """True when every element of `html` passes `allowed_tag(tag, attrs)`, with nothing else:
    no comment, declaration, processing instruction or markup the parser could not read."""
    checker = AllowedMarkupChecker(allowed_tag)
    checker.feed(html)
    checker.close()
    return checker.allowed


class AllowedMarkupChecker(HTMLParser):
    """Reads HTML; `allowed` turns False at anything `allowed_tag(tag, attrs)` does not allow."""

    def __init__(self, allowed_tag):
        super().__init__(convert_charrefs=False)
        self.allowed_tag, self.allowed = allowed_tag, True

    def handle_starttag(self, tag, attrs):
        """A tag and its attributes, as `allowed_tag` says."""
        if not self.allowed_tag(tag, attrs):
            self.allowed = False

    def handle_startendtag(self, tag, attrs):
        """A self-closing tag: as any other start tag."""
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        """The end of an allowed tag."""
        self.handle_starttag(tag, [])

    def handle_data(self, data):
        """Text; a '<' that no tag took means markup the parser could not read."""
        if "<" in data:
            self.allowed = False

    def handle_comment(self, data):
        """Neither markdown nor MathML of the pages makes comments."""
        self.allowed = False

    def handle_decl(self, decl):
        """... nor declarations."""
        self.allowed = False

    def handle_pi(self, data):
        """... nor processing instructions."""
        self.allowed = False

    def unknown_decl(self, data):
        """... nor CDATA sections."""
        self.allowed = False


def markdown_tag(tag, attrs):
    """True for a tag that markdown makes, with safe attributes."""
    return tag in MARKDOWN_TAGS and all(safe_attribute(tag, *pair) for pair in attrs)


def safe_attribute(tag, name, value):
    """True for an attribute markdown makes, with a value that can neither run nor fetch."""
    value = value or ""
    if name not in MARKDOWN_ATTRIBUTES:
        return False
    if name == "href":
        return bool(WEB_ADDRESS.match(CONTROL_OR_SPACE.sub("", value)))
    if name == "src":
        return tag == "img" and bool(EMBEDDED_IMAGE.fullmatch(value))
    if name == "style":
        return bool(SAFE_STYLE.fullmatch(value.strip()))
    if name == "type":
        return tag == "input" and value == "checkbox"
    return True
