"""``python -m course.bench``: print every figure of `make bench`."""

from course.bench.report import main

main()
