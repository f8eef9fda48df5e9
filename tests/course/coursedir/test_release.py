"""make release never overwrites a released lab that was run or edited without saying so."""

import nbformat
import pytest

from course.coursedir import notebooks, paths, release

LAB = "01_softmax"


def released_lab(root):
    """The path of lab 01 in the course's release/."""
    return root / "release" / LAB / paths.lab_filename(LAB)


def change(path, how):
    """Change the released lab at `path` as a student would: run it, edit a cell, add one."""
    nb = notebooks.read(path)
    cell = next(c for c in nb.cells if notebooks.is_solution(c) and c.cell_type == "code")
    if how == "run":
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
        cell.execution_count = 1
    elif how == "edited":
        cell.source = "def softmax(scores, dim=-1):\n    return scores.softmax(dim)\n"
    else:
        nb.cells.append(nbformat.v4.new_code_cell("print('my own cell')"))
    notebooks.write(nb, path)


def test_a_fresh_release_has_no_changes():
    assert release.changed_labs(paths.ROOT, paths.assignments()) == {}


@pytest.mark.parametrize("how, reason", [
    ("run", "it was run"), ("edited", "its cell softmax was edited"), ("added", "a code cell")])
def test_a_changed_lab_stops_the_release_before_anything_is_written(lab_01_course, how, reason):
    path = released_lab(lab_01_course)
    change(path, how)
    before = path.read_bytes()
    with pytest.raises(release.ChangedLabError, match=reason) as refused:
        release.build(lab_01_course, [LAB])
    assert str(path) in str(refused.value) and "FORCE=1" in str(refused.value)
    assert path.read_bytes() == before
    assert not (lab_01_course / "solutions").exists()


@pytest.mark.slow  # generates the release and runs the solution
def test_force_overwrites_a_changed_lab_and_says_which(lab_01_course):
    path = released_lab(lab_01_course)
    change(path, "run")
    overwritten = release.build(lab_01_course, [LAB], force=True)
    assert list(overwritten) == [path]
    assert release.changes_in_released_lab(path) == []


def test_the_command_line_refuses_and_names_the_lab(lab_01_course, monkeypatch):
    change(released_lab(lab_01_course), "edited")
    monkeypatch.setattr(release.paths, "ROOT", lab_01_course)
    with pytest.raises(SystemExit, match="its cell softmax was edited"):
        release.main([LAB])
