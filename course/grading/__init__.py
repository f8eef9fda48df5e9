"""How a submission is graded, one folder per step.

`pool` grades a class on every core (the pool and its worker processes), from a list of students
or from `queue`, the work queue that graders on several machines share in a PostgreSQL gradebook;
each worker runs nbgrader's steps in `preprocessors/`, whose `judge` runs the notebook in a
kernel that `kernels/` starts and confines, and talks to it through `remote/`; both open their
sockets on the kernel through `channels` (bounded messages, the time a kernel has to answer).
Imports `course.coursedir`.
"""
