"""The probe: whether this machine can sandbox a kernel, and why not."""

import sys

from attacks.on_the_machine import PLANTED

from course.grading.kernels import probe


def test_sandbox_can_be_made_here():
    assert probe.probe() == (True, "")


def test_a_module_planted_in_the_working_folder_never_runs_in_the_probe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "resource.py").write_text(PLANTED.format(marker=str(tmp_path / "ran")))
    assert probe.probe() == (True, "")
    assert not (tmp_path / "ran").exists()


def test_off_linux_the_probe_says_why_without_trying(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert probe.probe() == (False, "the sandbox needs Linux namespaces, and this is darwin")


def test_a_child_hands_back_its_value_or_why_it_failed():
    assert probe.in_child(lambda: {"answer": 42}) == ({"answer": 42}, "")
    assert probe.in_child(lambda: 1 / 0) == (None, "division by zero")
