"""The course at the edges of what it claims (``make test-edges``).

Usage, from the repository root: ``python -m tools.edges [--jobs 2] [--only NAME]``

Each edge is a new virtual environment under build/edges/, set up as the course's users set up
theirs, in which the stored notebooks run:

* ``newest``: the newest Python the course claims with the newest packages its ranges allow;
* ``oldest``: the oldest Python it claims, the newest packages and the newest torch pip finds;
* ``colab``: as on Colab, a newer torch and older Jupyter packages are there first; the student
  edition is installed exactly as its Colab cell installs it (which must change no package's
  version), and every lecture and lab of the edition runs, each lab filled in with its solution.

The first two run the strict nbval of ``make nbval`` over notebooks/ and solutions/ (outputs
compared exactly); the Colab-like edge runs the edition with ``--nbval-lax``, since another
torch may print other digits: there every cell must run. It prints each edge's Python, torch and
numpy, its time, what pip downloaded and its verdict, and exits non-zero if an edge failed or,
under COURSE_NO_SKIPS=1, was skipped for want of something the machine could install (a Python).
"""

import argparse
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from course.coursedir import edition, notebooks, paths
from course.coursedir.scratch import fill, solution_cells

EDGES = paths.ROOT / "build" / "edges"
NBVAL = ("pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg"
         " -p no:randomly")
SANITIZE = paths.ROOT / "tests" / "nbval_sanitize.cfg"
NEWER_TORCH = "torch==2.14.1"  # newer than requirements.txt's pin: the newest this machine holds
# What Colab ships of Jupyter, older than the course's pins: installed before the edition.
COLAB_JUPYTER = (
    "ipykernel==6.17.1",
    "ipython==7.34.0",
    "notebook==6.5.7",
    "jupyter-client==7.4.9",
    "nbclient==0.10.2",
)
# A kernel that a busy machine starts slowly is no failure of the course (nbval's default: 60 s).
KERNEL_STARTUP = ["--nbval-kernel-startup-timeout", "300"]
COLAB_EDITION_REPOSITORY = "course/attention-step-by-step"  # the edition as if published there
DOWNLOAD = re.compile(r"Downloading \S+ \(([\d.]+) (kB|MB|GB)\)")
UNITS = {"kB": 1e-3, "MB": 1.0, "GB": 1e3}


@dataclass(frozen=True)
class Edge:
    """An environment at an edge: its Python, what goes in first, and how the course goes in."""

    name: str
    python: str
    first: tuple = ()  # requirements installed with the course (on Colab: before it)
    colab: bool = False  # the edition, as its Colab cell installs it; else the course with pip


EDGES_RUN = (
    Edge("newest", "3.13"),
    Edge("oldest", "3.11", first=(NEWER_TORCH,)),
    Edge("colab", "3.11", first=(NEWER_TORCH, *COLAB_JUPYTER), colab=True),
)


@dataclass
class Result:
    """What an edge gave: its verdict, versions, seconds, downloads and nbval's last line."""

    edge: Edge
    verdict: str = "failed"
    versions: str = "?"
    seconds: float = 0.0
    downloaded_mb: float = 0.0
    summary: str = ""
    notes: list = field(default_factory=list)


class EdgeFailed(Exception):
    """A step of an edge failed; the message says which."""


def find_python(version):
    """The path of Python `version` (on PATH, else under pyenv), or None."""
    found = shutil.which(f"python{version}", path=os.pathsep.join(system_path()))
    if found and python_version(found).startswith(f"{version}."):
        return found
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted(glob.glob(str(pyenv / "versions" / f"{version}.*" / "bin" / "python3")))
    return candidates[-1] if candidates else None


def system_path():
    """The folders of PATH, the course's own .venv left out."""
    own = str(paths.ROOT / ".venv" / "bin")
    return [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != own]


def python_version(python):
    """The version `python` reports, or "" if it does not run."""
    run = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                         capture_output=True, text=True)
    return run.stdout.strip() if run.returncode == 0 else ""


def project_requirement(extra, name):
    """The requirement of `name` in pyproject.toml's extra `extra` (or its dependencies)."""
    project = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]
    listed = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return next(r for r in listed if re.match(rf"{re.escape(name)}\b", r))


def test_requirements():
    """nbval and pytest, in the ranges of the dev extra."""
    return [project_requirement("dev", "nbval"), project_requirement("dev", "pytest")]


def student_requirements():
    """What the notebooks import, in the ranges students get (Colab already has these)."""
    project = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"])


class Runner:
    """Runs the commands of one edge, each logged to build/edges/<name>.log."""

    def __init__(self, edge, folder):
        self.edge = edge
        self.folder = folder
        self.venv = folder / "venv"
        self.log = EDGES / f"{edge.name}.log"

    def run(self, command, cwd=paths.ROOT, env=None, check=True):
        """Run `command`, its output appended to the log; EdgeFailed if it fails and `check`."""
        start = time.monotonic()
        with open(self.log, "a") as log:
            log.write(f"\n$ {shlex.join(map(str, command))}\n")
            log.flush()
            done = subprocess.run(list(map(str, command)), cwd=cwd, env=env or self.environment(),
                                  stdout=log, stderr=subprocess.STDOUT)
            log.write(f"[{time.monotonic() - start:.0f} s, exit {done.returncode}]\n")
        if check and done.returncode != 0:
            words = list(map(str, command))
            what = words[words.index("-m") + 1] if "-m" in words else Path(words[0]).name
            raise EdgeFailed(f"{what} exited {done.returncode}"
                             f" (see {self.log.relative_to(paths.ROOT)})")
        return done.returncode

    def environment(self, checkout=True):
        """The edge's environment: its venv first on PATH, the course's own .venv left out."""
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env["PATH"] = os.pathsep.join([str(self.venv / "bin"), *system_path()])
        env["PYTHONHASHSEED"] = "0"
        if checkout:
            env["PYTHONPATH"] = str(paths.ROOT)
        return env

    def pip(self, *arguments, compile_ahead=False):
        """pip install in the edge's venv, pip's cache and configuration as the machine has them.

        Unless `compile_ahead`, without compiling every module ahead (``--no-compile``): torch's
        thousands take minutes, and Python compiles what a notebook imports as it imports it.
        """
        options = ["--progress-bar", "off", "--disable-pip-version-check"]
        self.run([self.venv / "bin" / "python", "-m", "pip", "install", *options,
                  *([] if compile_ahead else ["--no-compile"]), *arguments],
                 cwd=self.folder, env=self.environment(checkout=False))

    def installed(self):
        """name -> version of every distribution in the venv, as pip lists them."""
        done = subprocess.run([str(self.venv / "bin" / "python"), "-m", "pip", "list", "--format",
                               "json", "--disable-pip-version-check"], capture_output=True,
                              text=True, check=True, cwd=self.folder,
                              env=self.environment(checkout=False))
        return {item["name"].lower(): item["version"] for item in json.loads(done.stdout)}

    def versions(self):
        """Python, torch and numpy versions of the venv."""
        code = "import platform, torch, numpy; " \
            "print(platform.python_version(), torch.__version__, numpy.__version__)"
        done = subprocess.run([str(self.venv / "bin" / "python"), "-c", code],
                              capture_output=True, text=True, cwd=self.folder,
                              env=self.environment(checkout=False))
        if done.returncode != 0:
            return "?"
        python, torch, numpy = done.stdout.split()
        return f"Python {python}, torch {torch}, numpy {numpy}"

    def downloaded_mb(self):
        """Megabytes pip reports it downloaded, from the log."""
        text = self.log.read_text() if self.log.exists() else ""
        return sum(float(size) * UNITS[unit] for size, unit in DOWNLOAD.findall(text))


def course_wheel(out):
    """Build the course's wheel once (what `pip install .` installs) into `out`."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "-w", str(out),
                    str(paths.ROOT)], check=True, capture_output=True)
    return next(out.glob("attention_step_by_step-*.whl"))


def nbval_summary(log):
    """pytest's last summary line in the log (``== 312 passed in 290.1s ==``)."""
    lines = [line for line in log.read_text().splitlines() if re.match(r"=+ .* in [\d.]+s", line)]
    return lines[-1].strip("= ") if lines else ""


def run_checkout_edge(runner, wheel, nbval):
    """The course installed with pip, then the strict nbval over notebooks/ and solutions/."""
    runner.pip(*runner.edge.first, f"{wheel}[jupyter]", *test_requirements())
    command = [runner.venv / "bin" / "python", "-m", *shlex.split(nbval), *KERNEL_STARTUP,
               "notebooks", "solutions"]
    runner.run(command)


def filled_edition(folder):
    """The student edition with Colab's cells, each lab filled in with its solution, in a git
    repository on its branch main (what the Colab cell installs from)."""
    edition.build(folder, repository=COLAB_EDITION_REPOSITORY, branch="main")
    for assignment in paths.assignments():
        lab = folder / edition.LABS / assignment / paths.lab_filename(assignment)
        notebooks.write(fill(notebooks.read(lab), solution_cells(assignment)), lab)
    git = ["git", "-C", str(folder), "-c", "user.name=course", "-c", "user.email=course@localhost"]
    for step in (["init", "--quiet", "--initial-branch", "main"], ["add", "--all"],
                 ["commit", "--quiet", "--message", "the student edition"]):
        subprocess.run(git + step, check=True, capture_output=True)
    return folder


def colab_install_arguments(url):
    """The arguments of the Colab cell's `%pip install`, installing from `url` instead."""
    line = next(line.strip() for line in edition.COLAB_CELL.splitlines() if "%pip " in line)
    arguments = shlex.split(line.removeprefix("%pip "))[1:]
    sources = [a for a in arguments if a.startswith("git+")]
    if len(sources) != 1:
        raise EdgeFailed(f"expected one git+ source in the Colab cell, got {line!r}")
    return [url if a in sources else a for a in arguments]


def run_colab_edge(runner):
    """Colab's packages first; the edition as its Colab cell installs it; every notebook runs."""
    runner.pip(*runner.edge.first, *student_requirements(), *test_requirements())
    before = runner.installed()
    folder = filled_edition(runner.folder / "edition")
    runner.pip(*colab_install_arguments(f"git+file://{folder}@main"), compile_ahead=True)
    after = runner.installed()
    project = tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]["name"].lower()
    changed = sorted(name for name in before.keys() | after.keys()
                     if before.get(name) != after.get(name) and name != project)
    if changed or project not in after:
        raise EdgeFailed(f"the Colab cell's install changed {changed or 'nothing, and missed'}"
                         f" {'' if changed else project}")
    command = [runner.venv / "bin" / "python", "-m", "pytest", "--rootdir", folder,
               "-c", folder / "pyproject.toml", "--nbval-lax", "--nbval-current-env",
               "--nbval-sanitize-with", SANITIZE, "-p", "no:randomly", *KERNEL_STARTUP,
               "notebooks", edition.LABS]
    runner.run(command, cwd=folder, env=runner.environment(checkout=False))


def run_edge(edge, wheel, nbval, keep):
    """Set up one edge in a new venv and run its notebooks; its Result."""
    result = Result(edge)
    start = time.monotonic()
    python = find_python(edge.python)
    if python is None:
        result.verdict = f"skipped: no Python {edge.python} on this machine"
        return result
    runner = Runner(edge, EDGES / edge.name)
    shutil.rmtree(runner.folder, ignore_errors=True)
    runner.folder.mkdir(parents=True)
    runner.log.write_text(f"edge {edge.name}: {python}\n")
    try:
        runner.run([python, "-m", "venv", runner.venv])
        if edge.colab:
            run_colab_edge(runner)
        else:
            run_checkout_edge(runner, wheel, nbval)
        result.verdict = "passed"
    except (EdgeFailed, ValueError, OSError, subprocess.CalledProcessError) as failure:
        result.verdict = f"failed: {failure}"
    result.versions = runner.versions()
    result.summary = nbval_summary(runner.log)
    result.downloaded_mb = runner.downloaded_mb()
    result.seconds = time.monotonic() - start
    if result.verdict == "passed" and not keep:
        shutil.rmtree(runner.folder, ignore_errors=True)
    return result


def report(results, no_skips):
    """Print one line per edge; True if every edge passed (a skip passes unless `no_skips`)."""
    print("\nmake test-edges:")
    for r in results:
        print(f"  {r.edge.name:7} {r.versions:45} {r.seconds:6.0f} s  "
              f"downloaded {r.downloaded_mb:6.0f} MB  {r.verdict}"
              + (f"  [{r.summary}]" if r.summary else ""))
    bad = [r for r in results if not r.verdict.startswith(("passed", "skipped"))]
    skipped = [r for r in results if r.verdict.startswith("skipped")]
    if no_skips and skipped:
        names = ", ".join(r.edge.name for r in skipped)
        print(f"  skipped, and needed (COURSE_NO_SKIPS=1): {names}")
    return not bad and not (no_skips and skipped)


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="edges run at once (default 2)")
    parser.add_argument("--only", action="append", choices=[e.name for e in EDGES_RUN],
                        help="run only this edge (repeatable)")
    parser.add_argument("--nbval", default=NBVAL, help="the strict nbval command (make's NBVAL)")
    parser.add_argument("--keep", action="store_true", help="keep the venvs of passing edges")
    args = parser.parse_args(argv)
    edges = [e for e in EDGES_RUN if not args.only or e.name in args.only]
    start = time.monotonic()
    EDGES.mkdir(parents=True, exist_ok=True)
    wheel = course_wheel(EDGES / "dist")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda e: run_edge(e, wheel, args.nbval, args.keep), edges))
    passed = report(results, os.environ.get("COURSE_NO_SKIPS") == "1")
    print(f"  {'passed' if passed else 'FAILED'} in {time.monotonic() - start:.0f} s")
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
