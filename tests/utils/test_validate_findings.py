"""The Validate dialog shows each entry's message first, wrapped to its width, then the cell."""

from utils.validate_findings import WIDTH, message_first

SOURCE = "check_softmax(softmax)\n### BEGIN HIDDEN TESTS\nhidden()\n### END HIDDEN TESTS\n"
HINT = "Hint: " + "subtract the row's maximum before exponentiating, then divide " * 3


def test_a_failed_checks_message_and_hint_come_first_and_wrapped():
    shown = "\x1b[0;31mAssertionError:\x1b[0m rows do not sum to 1 along dim=-1\n" + HINT
    entry = message_first(shown, SOURCE)
    lines = entry["source"].splitlines()
    assert lines[0] == "AssertionError: rows do not sum to 1 along dim=-1"
    assert lines[1].startswith("Hint: subtract")
    assert all(len(line) <= WIDTH for line in lines)
    assert " ".join(line.strip() for line in lines[1:]) == HINT.strip()
    assert entry["error"].startswith("In this cell:") and "check_softmax(softmax)" in entry["error"]


def test_a_whole_traceback_shows_its_last_line_first():
    traceback = "-----\nNameError Traceback (most recent call last)\nCell In[3], line 1\n" \
        "NameError: name 'softmax' is not defined"  # fmt: skip
    lines = message_first(traceback, SOURCE)["source"].splitlines()
    assert lines[0] == "NameError: name 'softmax' is not defined"
    assert "Cell In[3], line 1" in lines


def test_the_cell_is_shown_as_text_in_the_html_part():
    entry = message_first("AssertionError: no", "x = '<b>'")
    assert "&lt;b&gt;" in entry["error"] and "<b>" not in entry["error"]
