"""The project's set-up files agree with each other."""

import re
import subprocess
import sys

from course.build import paths

README = (paths.ROOT / "README.md").read_text()


def requirement_lines():
    """Non-comment lines of requirements.txt."""
    text = (paths.ROOT / "requirements.txt").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_every_requirement_is_pinned_exactly():
    for line in requirement_lines():
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][0-9A-Za-z.+]*", line), line


def test_torch_is_the_cpu_build_on_disk():
    assert "torch==2.13.0" in requirement_lines()


def test_environment_yml_mirrors_requirements():
    text = (paths.ROOT / "environment.yml").read_text()
    pip_section = text.split("- pip:", 1)[1]
    entries = [
        line.strip()[2:].strip()
        for line in pip_section.splitlines()
        if line.strip().startswith("- ")
    ]
    assert [entry for entry in entries if entry != "-e ."] == requirement_lines()
    assert "-e ." in entries, "the course package must be installed in editable mode"
    assert "conda-forge" in text and "python=3.11" in text


def test_readme_starts_with_the_two_commands():
    first_block = README.split("```", 2)[1]
    assert "make lab" in first_block and "make test" in first_block
    assert README.index("make lab") < 1200


def test_ci_runs_make_test():
    assert "make test" in (paths.ROOT / ".ci" / "run").read_text()


def test_local_grading_files_are_ignored():
    ignored = (paths.ROOT / ".gitignore").read_text().split()
    for entry in [
        "gradebook.db",
        "submitted/",
        "autograded/",
        "feedback/",
        "downloaded/",
        ".venv/",
    ]:
        assert entry in ignored


def test_gradebook_is_not_committed():
    tracked = subprocess.run(["git", "ls-files"], cwd=paths.ROOT, capture_output=True, text=True)
    assert "gradebook.db" not in tracked.stdout.split()


def test_pytest_collects_every_test_file():
    listing = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "tests"],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
    ).stdout
    collected = {line.split("::", 1)[0] for line in listing.splitlines() if "::" in line}
    on_disk = {str(p.relative_to(paths.ROOT)) for p in (paths.ROOT / "tests").rglob("test_*.py")}
    assert on_disk - collected == set(), f"pytest never collects {sorted(on_disk - collected)}"
