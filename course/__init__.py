"""Tools that build, grade and measure the course (Makefile and tests; never imported by students).

Four packages, one per role, each importing only from those above it:

* `course.build`: the course folder (paths, notebooks, nbgrader runs, the release, the
  gradebook, scratch courses and submissions for tests and benchmarks). Imports no other role.
* `course.grading`: how a submission is graded (sandbox, forked kernels, judge, allowlist, output
  limits, feedback filter, parallel workers). Imports `course.build`.
* `course.lms`: the round trip through Canvas, Moodle and Blackboard (export formats, collect).
  Imports `course.build` and `course.grading`.
* `course.instructor`: the instructor's commands (`make autograde`, `feedback`, `grades`,
  `collect`). Imports the three above.
* `course.bench`: `make bench`. Imports everything above; nothing imports it.

`utils/`, the students' package, imports nothing from here.
"""
