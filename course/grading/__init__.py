"""How a submission is graded: sandboxed kernels forked from a zygote, the judge, the allowlist.

`zygote` forks each kernel into a `sandbox` of its own, and `fastkernel` asks it for kernels on
nbgrader's behalf; `judge.JudgeExecute` runs the test cells in the grader against the student's
kernel (with `agent` and `wire` in the kernel); `integrity` filters cells; `output_limits` and
`feedback` are nbgrader preprocessors; `pool` and `worker` grade a class on every core. Imports
`course.build` only.
"""
