"""Print timings, one `name: value` per line: ``python -m course.bench``.

* `execute_seconds_<notebook>`: wall seconds to execute each lecture and solution notebook;
* `autograde_seconds_per_submission`: wall seconds per submission when one `nbgrader autograde`
  grades a class of 40 solution submissions of lab 01, everything included (nbgrader's start,
  the gradebook);
  `..._unforked` the same with kernels started the ordinary way instead of forked
  (`course.grading.kernels.provisioner`);
* `class_autograde_seconds_sequential` and `class_autograde_seconds_parallel`: wall seconds for
  `make autograde` (`course.instructor.autograde`) to grade the same class of 40 solution
  submissions of lab 01 with one worker (JOBS=1) and with one per core, and
  `class_autograde_parallel_ratio`, the first over the second;
  `class_autograde_cpu_seconds_sequential` and `..._parallel`: the CPU seconds every process of
  those runs used (workers, zygote, kernels), and `class_autograde_parallel_ratio_ceiling`, the
  ratio the parallel run would reach had it kept every core busy from start to end;
* `class_autograde_seconds_per_submission_<lab>`: wall seconds per submission when `make
  autograde` grades a class of 20 solution submissions of each lab on every core;
  `class_autograde_cpu_seconds_per_submission_<lab>` the CPU seconds of every process per
  submission in that run; `notebook_cpu_seconds_<lab>` the CPU seconds to run the lab's solution
  notebook alone (the student's run: fresh kernel, visible tests, no hidden ones) and
  `grading_cpu_over_notebook_<lab>` the first over the second;
* `queue_overhead_ms_per_submission` (and `..._one_grader`): the milliseconds a grader spends
  per submission in the calls of the gradebook's work queue, on a throwaway PostgreSQL
  (`course.bench.queue`; not measured where no PostgreSQL is installed);
* `term_estimate_minutes_200_students`: from those, the minutes `make autograde` takes on this
  machine for 200 students and every lab; `term_estimate_minutes_200_students_<N>_machines` the
  same on N machines like this one sharing the queue (each lab: its submissions split between
  them, a machine with one more than the others sets the pace, plus the queue's overhead);
* the figures of the lesson benchmarks (`course.bench.seq2seq`, `course.bench.mha`,
  `course.bench.transformer`, `course.bench.scale`, `course.bench.gpt`,
  `course.bench.encoder_decoder`), and
  `course.bench.widgets`: how long each lecture's control takes to redraw (lectures 06 and 11
  have none).
"""

import argparse
import importlib
import math
import resource
import tempfile
import time
from pathlib import Path

from course import instructor
from course.bench import queue as queue_bench
from course.coursedir import notebooks, paths
from course.coursedir.scratch import autograde_scratch, fill, scratch_course, solution_cells, submit
from course.coursedir.scratch_postgres import NoPostgres
from course.grading import pool

LESSON_BENCHMARKS = [
    "course.bench.seq2seq",
    "course.bench.mha",
    "course.bench.transformer",
    "course.bench.scale",
    "course.bench.gpt",
    "course.bench.encoder_decoder",
    "course.bench.widgets",
]


def execute_seconds(path):
    """Wall seconds to execute a notebook in a fresh kernel (kernel start included)."""
    nb = notebooks.clear_outputs(notebooks.read(path))
    start = time.perf_counter()
    notebooks.execute(nb, cwd=Path(path).parent)
    return time.perf_counter() - start


def notebook_cpu_seconds(path):
    """CPU seconds of this process and the kernel to execute a notebook in a fresh kernel."""
    start = cpu_seconds()
    execute_seconds(path)
    return cpu_seconds() - start


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
        autograde_scratch(root, assignment)
        return (time.perf_counter() - start) / students


def class_course(scratch, assignment, students):
    """A scratch course where `students` have handed in the solution of `assignment`."""
    root = scratch_course(scratch, [assignment])
    release = notebooks.read(root / "release" / assignment / paths.lab_filename(assignment))
    submission = fill(release, solution_cells(assignment))
    for number in range(students):
        submit(root, assignment, f"student{number:03d}", submission)
    return root


def cpu_seconds():
    """CPU seconds used so far by this process and by its descendants that have ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime


def class_autograde_run(assignment, students, jobs=None):
    """(wall seconds, CPU seconds of every process) of `make autograde JOBS=jobs` on a class."""
    with tempfile.TemporaryDirectory() as scratch:
        root = class_course(scratch, assignment, students)
        instructor.ensure_in_gradebook(assignment, root)
        start, cpu = time.perf_counter(), cpu_seconds()
        ok, message = instructor.autograde(assignment, root, jobs=jobs)
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    if not ok:
        raise RuntimeError(f"autograde of {assignment} failed:\n{message}")
    return seconds, cpu


def parallel_ratio_ceiling(sequential_seconds, parallel_cpu_seconds, cores):
    """The highest sequential/parallel ratio the parallel run's CPU seconds allow on `cores`."""
    if parallel_cpu_seconds <= 0 or cores < 1:
        raise ValueError(
            f"expected positive CPU seconds and cores, got {parallel_cpu_seconds!r}, {cores!r}"
        )
    return sequential_seconds / (parallel_cpu_seconds / cores)


def autograde_figures(class_size, lab_class_size, labs=None):
    """The class-scale autograding figures, name -> value."""
    first = paths.assignments()[0]
    sequential, sequential_cpu = class_autograde_run(first, class_size, jobs=1)
    parallel, parallel_cpu = class_autograde_run(first, class_size)
    cores = pool.default_jobs()
    figures = {
        "autograde_workers": cores,
        "class_autograde_seconds_sequential": sequential,
        "class_autograde_seconds_parallel": parallel,
        "class_autograde_parallel_ratio": sequential / parallel,
        "class_autograde_cpu_seconds_sequential": sequential_cpu,
        "class_autograde_cpu_seconds_parallel": parallel_cpu,
        "class_autograde_parallel_ratio_ceiling": parallel_ratio_ceiling(
            sequential, parallel_cpu, cores
        ),
    }
    for assignment in labs or paths.assignments():
        figures.update(lab_figures(assignment, lab_class_size))
    return figures


def lab_figures(assignment, lab_class_size):
    """Wall and CPU seconds per submission of one lab's class, and CPU against the notebook's."""
    seconds, cpu = class_autograde_run(assignment, lab_class_size)
    cpu_per_submission = cpu / lab_class_size
    notebook = notebook_cpu_seconds(paths.SOLUTIONS / assignment / paths.lab_filename(assignment))
    return {
        f"class_autograde_seconds_per_submission_{assignment}": seconds / lab_class_size,
        f"class_autograde_cpu_seconds_per_submission_{assignment}": cpu_per_submission,
        f"notebook_cpu_seconds_{assignment}": notebook,
        f"grading_cpu_over_notebook_{assignment}": cpu_per_submission / notebook,
    }


def queue_figures():
    """The work queue's overhead per submission, or {} where no PostgreSQL can be started."""
    try:
        return queue_bench.run()
    except NoPostgres as reason:
        print(f"queue_overhead_ms_per_submission: not measured ({reason})", flush=True)
        return {}


def term_estimates(figures, machines, students=200):
    """Minutes to grade `students` in every lab measured, on one machine and on `machines`."""
    per_submission = {
        name.removeprefix("class_autograde_seconds_per_submission_"): value
        for name, value in figures.items()
        if name.startswith("class_autograde_seconds_per_submission_")
    }
    overhead = figures.get("queue_overhead_ms_per_submission", 0.0) / 1000
    shared = sum(
        math.ceil(students / machines) * seconds + students / machines * overhead
        for seconds in per_submission.values()
    )
    return {
        f"term_estimate_minutes_{students}_students": students * sum(per_submission.values()) / 60,
        f"term_estimate_minutes_{students}_students_{machines}_machines": shared / 60,
    }


def report(name, value):
    """Print one figure: 3 decimals, or 3 significant digits below 0.01 (an error of 1.07e-06)."""
    if isinstance(value, float):
        value = f"{value:.3g}" if 0 < abs(value) < 0.01 else f"{value:.3f}"
    print(f"{name}: {value}", flush=True)


def main(argv=None):
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class-size", type=int, default=40, help="lab 01 class, both ways")
    parser.add_argument("--lab-class-size", type=int, default=20, help="class of each lab")
    parser.add_argument(
        "--autograde-only", action="store_true", help="print the autograding figures only"
    )
    parser.add_argument("--labs", nargs="+", help="the labs whose class is graded (default: all)")
    parser.add_argument("--machines", type=int, default=4, help="N of the term estimate on N")
    args = parser.parse_args(argv)
    if args.class_size < 1 or args.lab_class_size < 1 or args.machines < 1:
        parser.error("--class-size, --lab-class-size and --machines must be at least 1")
    unknown = set(args.labs or ()) - set(paths.assignments())
    if unknown:
        parser.error(f"no such lab: {', '.join(sorted(unknown))} (expected NN_topic of source/)")
    first = paths.assignments()[0]
    report(
        "autograde_seconds_per_submission", autograde_seconds_per_submission(first, args.class_size)
    )
    report(
        "autograde_seconds_per_submission_unforked",
        autograde_seconds_per_submission(first, args.class_size, fork=False),
    )
    figures = autograde_figures(args.class_size, args.lab_class_size, args.labs)
    figures.update(queue_figures())
    figures.update(term_estimates(figures, args.machines))
    for name, value in figures.items():
        report(name, value)
    if args.autograde_only:
        return
    for path in paths.lecture_notebooks() + sorted(paths.SOLUTIONS.rglob("*.ipynb")):
        report(f"execute_seconds_{path.stem}", execute_seconds(path))
    for module_name in LESSON_BENCHMARKS:
        for name, value in importlib.import_module(module_name).run().items():
            report(name, value)


if __name__ == "__main__":
    main()
