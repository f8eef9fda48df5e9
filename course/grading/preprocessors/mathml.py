"""Math on a page as MathML made on the server: it renders offline, and nothing on the page runs.

The formgrader's pages and the feedback HTML are made by nbconvert, which leaves TeX such as
`$\\operatorname{softmax}(x)$` for MathJax to typeset in the browser, from a CDN. Here the step
that follows the rendering of each markdown cell and comment to HTML (nbconvert's
`strip_files_prefix` filter) is followed by a pass that turns the math in the HTML's text into
MathML (with `latex2mathml`), which the browser draws itself. That HTML is markdown's own (a
student's markdown was made inert by `pages.CleanSubmission`); only its text changes. Where a
template sanitizes that HTML afterwards (nbconvert's `clean_html`), each formula that is
presentation MathML only is set aside and put back after the sanitizing. Math in
code, preformatted text and code blocks stays as it is, as MathJax would leave it. A formula is
kept as TeX when it holds a command that makes links or HTML (`pages.ACTIVE_TEX`), when it is
longer than MAX_FORMULA_CHARACTERS (converting costs many times its size) or past the first
MAX_FORMULAS of a cell, when it
cannot be converted, or when its MathML holds anything besides presentation elements and their
layout attributes. The pages load no MathJax: `templates/base/mathjax.html.j2` replaces
nbconvert's `mathjax` macro by one that loads nothing.
"""

import html
import re
import secrets
from html.parser import HTMLParser
from pathlib import Path

import nbgrader
from latex2mathml.converter import convert
from nbconvert.filters.strings import clean_html, strip_files_prefix

from course.grading.preprocessors.pages import ACTIVE_TEX, only_allowed_markup

# The course's templates first (a `mathjax` macro that loads nothing), then nbgrader's own
# (the formgrader's page and the feedback page).
TEMPLATE_BASEDIRS = [
    str(Path(__file__).parent / "templates"),
    str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
]
MAX_FORMULA_CHARACTERS = 1_000  # a longer formula stays TeX: the course's longest has 200
MAX_FORMULAS = 500  # of one rendered cell converted; the rest stay TeX (each takes ~0.3 ms)
# Display math ($$...$$, \[...\], \begin{env}...\end{env}), then inline math ($...$, \(...\)).
# Each looks no further than MAX_FORMULA_CHARACTERS for its end, so that text full of openings
# without an end takes a time in proportion to its length, not to its square.
MATH_PATTERN = (
    r"\$\$(?P<display>.{1,N}?)\$\$|\\\[(?P<bracket>.{1,N}?)\\\]"
    r"|(?P<environment>\\begin\{(?P<name>[A-Za-z]+\*?)\}.{1,N}?\\end\{(?P=name)\})"
    r"|\\\((?P<paren>.{1,N}?)\\\)|(?<![\\$])\$(?P<inline>[^$]{1,N}?)(?<!\\)\$"
)
MATH = re.compile(MATH_PATTERN.replace("{1,N}", f"{{1,{MAX_FORMULA_CHARACTERS}}}"), re.DOTALL)
LEFT_AS_IS = frozenset({"pre", "code", "script", "style", "textarea"})
MATHML_TAGS = frozenset(
    "math mrow mi mn mo ms mtext mspace msub msup msubsup munder mover munderover mfrac msqrt "
    "mroot mstyle mpadded mphantom menclose mtable mtr mtd mlabeledtr mmultiscripts mprescripts "
    "none merror mfenced".split()
)
MATHML_ATTRIBUTES = frozenset(
    "display mathvariant stretchy fence separator lspace rspace accent accentunder "
    "movablelimits displaystyle scriptlevel linethickness notation columnalign columnlines "
    "columnspacing rowalign rowspacing rowlines frame framespacing minsize maxsize width height "
    "depth largeop symmetric form open close separators mathsize bevelled numalign denomalign "
    "align voffset equalrows equalcolumns".split()
)
MATHML_NAMESPACE = "http://www.w3.org/1998/Math/MathML"
LAYOUT_VALUE = re.compile(r"[\w.%+\- ]*")
MATH_ELEMENT = re.compile(r"<math\b[^>]*>.*?</math>", re.DOTALL)


def strip_files_prefix_with_mathml(page):
    """nbconvert's `strip_files_prefix`, then the math in the HTML's text as MathML."""
    return math_as_mathml(strip_files_prefix(page))


def clean_html_keeping_mathml(element):
    """nbconvert's `clean_html`, which keeps each formula that is presentation MathML only."""
    element = element.decode() if isinstance(element, bytes) else str(element)
    marker, kept = f"mathml-{secrets.token_hex(8)}-", []

    def set_aside(match):
        if not is_presentation_mathml(match.group()):
            return match.group()
        kept.append(match.group())
        return f"{marker}{len(kept) - 1}."

    cleaned = clean_html(MATH_ELEMENT.sub(set_aside, element))
    return re.sub(rf"{marker}(\d+)\.", lambda found: kept[int(found.group(1))], cleaned)


def math_as_mathml(page):
    """Rendered markdown (HTML) with the math of its text (outside code) as MathML."""
    rewriter = MathRewriter()
    rewriter.feed(page)
    rewriter.close()
    return "".join(rewriter.parts)


def text_with_mathml(text, budget=None):
    """Plain text as HTML, each formula in it as MathML when it converts safely.

    `budget` ([formulas left to convert]) is shared by the texts of one page: past it, formulas
    stay TeX.
    """
    budget = [MAX_FORMULAS] if budget is None else budget
    parts, start = [], 0
    for match in MATH.finditer(text):
        parts.append(html.escape(text[start : match.start()], quote=False))
        converted = formula_as_mathml(match) if budget[0] > 0 else None
        budget[0] -= 1
        parts.append(converted or html.escape(match.group(), quote=False))
        start = match.end()
    parts.append(html.escape(text[start:], quote=False))
    return "".join(parts)


def formula_as_mathml(match):
    """The MathML of one formula found by `MATH`, or None when it stays TeX."""
    tex = next(group for group in match.group("display", "bracket", "environment", "paren",
                                              "inline") if group is not None)  # fmt: skip
    display = match.group("inline") is None and match.group("paren") is None
    if len(tex) > MAX_FORMULA_CHARACTERS or ACTIVE_TEX.search(tex):
        return None
    try:
        mathml = convert(tex.strip(), display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - TeX that latex2mathml cannot read stays TeX
        return None
    return mathml if is_presentation_mathml(mathml) else None


def is_presentation_mathml(markup):
    """True when `markup` holds presentation MathML elements and layout attributes only."""
    return only_allowed_markup(markup, mathml_tag)


class MathRewriter(HTMLParser):
    """Copies rendered markdown into `parts`, with the math in its text (outside code) as MathML."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.left_as_is = 0  # how many elements that keep their text as it is are open
        self.budget = [MAX_FORMULAS]  # formulas this page may still convert

    def handle_starttag(self, tag, attrs):
        """Copy the tag as it was written."""
        self.left_as_is += tag in LEFT_AS_IS
        self.parts.append(self.get_starttag_text())

    def handle_startendtag(self, tag, attrs):
        """Copy a self-closing tag as it was written."""
        self.parts.append(self.get_starttag_text())

    def handle_endtag(self, tag):
        """Copy an end tag."""
        if tag in LEFT_AS_IS and self.left_as_is:
            self.left_as_is -= 1
        self.parts.append(f"</{tag}>")

    def handle_data(self, data):
        """Text: as it is inside code, scripts and styles, else with its math as MathML."""
        if self.cdata_elem:  # a script's or a style's text, which the parser does not unescape
            self.parts.append(data)
        elif self.left_as_is:
            self.parts.append(html.escape(data, quote=False))
        else:
            self.parts.append(text_with_mathml(data, self.budget))

    def handle_comment(self, data):
        """Copy a comment."""
        self.parts.append(f"<!--{data}-->")


def mathml_tag(tag, attrs):
    """True for an element of presentation MathML with layout attributes only."""
    return tag in MATHML_TAGS and all(layout_attribute(*pair) for pair in attrs)


def layout_attribute(name, value):
    """True for a MathML layout attribute with a plain value, or the MathML namespace."""
    if name == "xmlns":
        return value == MATHML_NAMESPACE
    return name in MATHML_ATTRIBUTES and bool(LAYOUT_VALUE.fullmatch(value or ""))
