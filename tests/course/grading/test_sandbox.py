"""The sandbox of a student's kernel, made in a forked child: what it shows and what it hides."""

import json
import os

from course.grading import sandbox


def inside_sandbox(tmp_path, monkeypatch, extra_readable):
    """Enter a sandbox in a forked child with these extra read-only folders; what it saw."""
    real = sandbox.readable_paths
    monkeypatch.setattr(sandbox, "readable_paths", lambda: [*real(), *extra_readable])
    folder, ipc_dir = tmp_path / "work", tmp_path / "ipc"
    folder.mkdir()
    ipc_dir.mkdir()

    def look():
        seen = {str(p): sorted(os.listdir(p)) for p in extra_readable}
        writable = os.access(str(extra_readable[0]), os.W_OK)
        return json.dumps({"seen": seen, "writable": writable, "tmp": os.access("/tmp", os.W_OK)})

    text, error = sandbox.look_inside(folder, ipc_dir, look)
    return json.loads(text) if not error else {"error": error}


def test_a_course_installed_under_tmp_is_readable_inside_a_private_tmp(tmp_path, monkeypatch):
    packages = tmp_path / "clone" / ".venv"  # as when the repository is cloned into /tmp
    packages.mkdir(parents=True)
    (packages / "site.py").write_text("")
    report = inside_sandbox(tmp_path, monkeypatch, [packages])
    assert report == {"seen": {str(packages): ["site.py"]}, "writable": False, "tmp": True}
