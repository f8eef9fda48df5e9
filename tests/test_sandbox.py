"""The sandbox of a student's kernel, made in a forked child: what it shows and what it hides."""

import json
import os

from course import sandbox


def inside_sandbox(tmp_path, monkeypatch, extra_readable):
    """Enter a sandbox in a forked child with these extra read-only folders; what it saw."""
    real = sandbox.readable_paths
    monkeypatch.setattr(sandbox, "readable_paths", lambda: [*real(), *extra_readable])
    folder, ipc_dir = tmp_path / "work", tmp_path / "ipc"
    folder.mkdir()
    ipc_dir.mkdir()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            sandbox.enter(folder, ipc_dir)
            seen = {str(p): sorted(os.listdir(p)) for p in extra_readable}
            writable = os.access(str(extra_readable[0]), os.W_OK)
            report = {"seen": seen, "writable": writable, "tmp": os.access("/tmp", os.W_OK)}
        except BaseException as error:  # noqa: BLE001 - the test reads the reason
            report = {"error": repr(error)}
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    return json.loads(text)


def test_a_course_installed_under_tmp_is_readable_inside_a_private_tmp(tmp_path, monkeypatch):
    packages = tmp_path / "clone" / ".venv"  # as when the repository is cloned into /tmp
    packages.mkdir(parents=True)
    (packages / "site.py").write_text("")
    report = inside_sandbox(tmp_path, monkeypatch, [packages])
    assert report == {"seen": {str(packages): ["site.py"]}, "writable": False, "tmp": True}
