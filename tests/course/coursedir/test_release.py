"""make release never overwrites a released lab that was run or edited without saying so, and
writes the same bytes from the same sources however busy the machine is."""

import subprocess
import sys
from contextlib import contextmanager

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


def generated_files(root):
    """{path inside the course: bytes} of lab 01's generated folders, release/ and solutions/."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for folder in ("release", "solutions")
        for path in sorted((root / folder / LAB).rglob("*"))
        if path.is_file()
    }


@contextmanager
def busy_machine(processes=2):
    """Busy loops beside the code within, one a core of this machine."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


@pytest.mark.slow  # generates the release and runs the solution, twice
def test_a_release_writes_the_same_bytes_again_on_a_busy_machine(lab_01_course):
    release.build(lab_01_course, [LAB])
    first = generated_files(lab_01_course)
    assert any(name.startswith("solutions/") for name in first), sorted(first)
    with busy_machine():
        release.build(lab_01_course, [LAB])
    second = generated_files(lab_01_course)
    assert sorted(second) == sorted(first)
    changed = [name for name in first if second[name] != first[name]]
    assert not changed, changed


def stream(name, text):
    """A stream output."""
    return nbformat.v4.new_output("stream", name=name, text=text)


def test_a_cells_printed_text_is_stored_whole_however_the_kernel_cut_it():
    figure = nbformat.v4.new_output("display_data", data={"text/plain": "<Figure>"})
    cut = [stream("stdout", "tests "), stream("stderr", "a warning\n"), stream("stdout", "pass\n"),
           figure, stream("stdout", "after\n")]
    whole = [stream("stdout", "tests pass\n"), stream("stderr", "a warning\n"), figure,
             stream("stdout", "after\n")]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print()")])
    nb.cells[0].outputs = cut
    assert notebooks.merge_streams(nb).cells[0].outputs == whole
