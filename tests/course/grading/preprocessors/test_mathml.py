"""Math on the formgrader's and the feedback's pages is MathML made on the server."""

import pytest

from course.grading.preprocessors.mathml import (
    MAX_FORMULA_CHARACTERS,
    MAX_FORMULAS,
    clean_html_keeping_mathml,
    is_presentation_mathml,
    math_as_mathml,
)

SOFTMAX = r"\operatorname{softmax}(x)_i = \frac{e^{x_i}}{\sum_j e^{x_j}}"


def test_display_and_inline_math_become_mathml():
    page = math_as_mathml(f"<p>$${SOFTMAX}$$ and $a &lt; b$</p>")
    assert page.count("<math") == 2 and "$" not in page
    assert 'display="block"' in page and 'display="inline"' in page
    assert "<mfrac>" in page and "<mo>&#x0003C;</mo>" in page


def test_math_in_code_stays_as_it_is():
    page = "<p><code>$x$</code></p><pre>$$y &lt; z$$</pre>"
    assert math_as_mathml(page) == page


def test_the_markup_around_the_math_is_kept():
    page = math_as_mathml('<p class="x">see <a href="https://example.org">this</a>: $x^2$</p>')
    assert page.startswith('<p class="x">see <a href="https://example.org">this</a>: <math')
    assert page.endswith("</math></p>")


def test_a_style_keeps_its_text():
    page = "<style>p > a { color: red; }</style>"
    assert math_as_mathml(page) == page


@pytest.mark.parametrize(
    "tex",
    [r"\href{javascript:alert(1)}{x}", r"\text{<script>alert(1)</script>}", r"\style{x}{y}",
     r"\color{red}{x}", r"\frac{1}{"],
)  # fmt: skip
def test_a_formula_that_could_run_or_fetch_or_fails_stays_tex(tex):
    page = math_as_mathml(f"<p>${tex.replace('<', '&lt;')}$</p>")
    assert "<math" not in page and "<script" not in page and "href=" not in page
    assert page.startswith("<p>$")


@pytest.mark.parametrize(
    "markup",
    ['<math><mrow href="javascript:x"><mi>x</mi></mrow></math>',
     '<math><mi onclick="x">x</mi></math>', "<math><mtext><script></mtext></math>",
     '<math xmlns="http://example.org"><mi>x</mi></math>'],
)  # fmt: skip
def test_only_presentation_mathml_is_kept(markup):
    assert not is_presentation_mathml(markup)


def test_sanitizing_keeps_the_mathml_and_escapes_the_rest():
    formula = math_as_mathml("$x^2$")
    hostile = '<math><mi href="javascript:x">y</mi></math><script>run()</script>'
    cleaned = clean_html_keeping_mathml(f"<div>{formula}{hostile}</div>")
    assert cleaned.startswith(f"<div>{formula}")
    assert "<mi href" not in cleaned and "<script" not in cleaned


def test_a_formula_longer_than_the_budget_stays_tex_and_one_within_it_converts():
    within = "+".join(["x"] * ((MAX_FORMULA_CHARACTERS - 1) // 2))
    assert "<math" in math_as_mathml(f"<p>${within}$</p>")
    too_long = within + "+y+z"  # a nest of fractions this long would cost many times its size
    assert math_as_mathml(f"<p>${too_long}$</p>") == f"<p>${too_long}$</p>"


def test_text_full_of_openings_without_an_end_stays_as_it_is():
    # Each opening looks no further than MAX_FORMULA_CHARACTERS for its end: in proportion to the
    # text's length, not its square (this took minutes for a cell of 100 000 characters).
    text = r"\[" * 30_000 + "$$" + r"\(" * 10_000
    assert math_as_mathml(f"<p>{text}</p>") == f"<p>{text}</p>"


def test_a_cell_converts_at_most_its_budget_of_formulas_and_leaves_the_rest_tex():
    page = math_as_mathml("<p>" + "$x$ " * (MAX_FORMULAS + 10) + "</p>")
    assert page.count("<math") == MAX_FORMULAS
    assert page.endswith("$x$ " * 10 + "</p>")
