"""The instructor's tools: release, grade, return and measure the course; students never import it.

One submission, from `make autograde` to the gradebook, one folder per step:

1. `instructor` (make autograde) hands each student to a worker of `grading.pool`;
2. the worker runs nbgrader's Autograde, whose steps are `grading.preprocessors`:
   `restore_tests` restores the test cells, `findings` lists what each student cell uses;
3. `preprocessors.judge` asks `grading.kernels.provisioner` for a kernel, which
   `kernels.zygote` forks into `kernels.sandbox` (cgroups, syscall_filter, landlock);
4. the student's cells run there; each test cell runs in the grader, calling the student's
   names through `grading.remote` (client <-> wire <-> agent in the kernel);
5. `preprocessors.pages` and `output_limits` clean and cut what is kept,
   `regrade.KeepManualGrades` (nbgrader's SaveAutoGrades, hand grades kept) stores the scores
   in the gradebook that `coursedir.gradebook_db` opens, and `lms` takes them to the LMS.

Each package imports only those before it: `coursedir` (the course folder: paths, notebooks,
nbgrader runs, the release, the gradebook, scratch courses), `grading`, `lms`, `instructor`,
`bench` (make bench). `utils/`, the students' package, imports nothing from here.
"""
