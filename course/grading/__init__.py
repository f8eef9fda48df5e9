"""How a submission is graded: sandboxed kernels forked from a zygote, the judge, the findings.

`zygote` forks each kernel into a `sandbox` of its own (in a control group of its own: `cgroups`;
its system calls filtered: `syscall_filter`, `landlock`),
and `fastkernel` asks it for kernels on nbgrader's behalf; `judge.JudgeExecute` runs the test
cells in the grader against the student's kernel (with `agent` and `wire` in the kernel);
`findings` lists for the instructor what each student cell uses; `pages`, `output_limits` and
`feedback` are nbgrader preprocessors, `feedback.FeedbackExporter` writes the feedback page;
`mathml` draws the pages' math without a script; `regrade` keeps hand grades when the formgrader
grades a submission again; `pool` and `worker` grade a class on every core. Imports
`course.build` only.
"""
