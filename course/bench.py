"""Print timings, one `name: value` per line: ``python -m course.bench``.

* `execute_seconds_<notebook>`: wall seconds to execute each lecture and solution notebook;
* `autograde_seconds_per_submission`: wall seconds per submission when nbgrader autogrades a class
  of 20 solution submissions of lab 01, everything included (nbgrader's start, the gradebook);
  `..._unforked` the same with kernels started the ordinary way instead of forked
  (`course.fastkernel`);
* `autograde_seconds_per_submission_<lab>`: the same for a class of 4 submissions of each lab;
* the figures of the lesson benchmarks (`course.bench_seq2seq`, `course.bench_mha`,
  `course.bench_transformer`, `course.bench_scale`), and `course.bench_widgets`: how long each
  lecture's control takes to redraw.
"""

import argparse
import importlib
import tempfile
import time
from pathlib import Path

from course import notebooks, paths
from course.submissions import autograde, fill, scratch_course, solution_cells, submit

LESSON_BENCHMARKS = [
    "course.bench_seq2seq",
    "course.bench_mha",
    "course.bench_transformer",
    "course.bench_scale",
    "course.bench_widgets",
]


def execute_seconds(path):
    """Wall seconds to execute a notebook in a fresh kernel (kernel start included)."""
    nb = notebooks.clear_outputs(notebooks.read(path))
    start = time.perf_counter()
    notebooks.execute(nb, cwd=Path(path).parent)
    return time.perf_counter() - start


def autograde_seconds_per_submission(assignment, students=4, fork=True):
    """Wall seconds per submission for nbgrader to autograde `students` solution submissions."""
    with tempfile.TemporaryDirectory() as scratch:
        root = scratch_course(scratch, [assignment])
        if not fork:
            with open(root / "nbgrader_config.py", "a") as config:
                config.write("\nc.ForkingExecute.fork = False\nc.ForkingExecute.sandbox = False\n")
        release = notebooks.read(root / "release" / assignment / paths.lab_filename(assignment))
        submission = fill(release, solution_cells(assignment))
        for number in range(students):
            submit(root, assignment, f"student{number:02d}", submission)
        start = time.perf_counter()
        autograde(root, assignment)
        return (time.perf_counter() - start) / students


def report(name, value):
    """Print one figure."""
    print(f"{name}: {value:.3f}" if isinstance(value, float) else f"{name}: {value}", flush=True)


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=4, help="submissions per lab to autograde")
    parser.add_argument("--class-size", type=int, default=20, help="submissions of lab 01")
    args = parser.parse_args(argv)
    first = paths.assignments()[0]
    report(
        "autograde_seconds_per_submission", autograde_seconds_per_submission(first, args.class_size)
    )
    report(
        "autograde_seconds_per_submission_unforked",
        autograde_seconds_per_submission(first, args.class_size, fork=False),
    )
    for path in paths.lecture_notebooks() + sorted(paths.SOLUTIONS.rglob("*.ipynb")):
        report(f"execute_seconds_{path.stem}", execute_seconds(path))
    for assignment in paths.assignments():
        report(
            f"autograde_seconds_per_submission_{assignment}",
            autograde_seconds_per_submission(assignment, args.students),
        )
    for module_name in LESSON_BENCHMARKS:
        for name, value in importlib.import_module(module_name).run().items():
            report(name, value)


if __name__ == "__main__":
    main()
