"""The command line that every lesson benchmark shares: ``python -m course.bench.<lesson>``."""

import argparse


def lesson_main(run, doc, argv=None, repeats=None, threads=1):
    """Parse --threads (and --repeats when `repeats` is given), run, print `name: value` lines."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    if repeats is not None:
        parser.add_argument("--repeats", type=int, default=repeats, help="timed calls per measure")
    parser.add_argument(
        "--threads",
        type=int,
        default=threads,
        help="torch threads during the measures (0: leave the setting as it is)",
    )
    args = parser.parse_args(argv)
    options = {"num_threads": args.threads or None}
    if repeats is not None:
        options["repeats"] = args.repeats
    for name, value in run(**options).items():
        print(f"{name}: {value:.6g}", flush=True)
