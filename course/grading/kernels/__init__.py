"""How a student's kernel starts: forked from a zygote into an OS sandbox of its own.

`provisioner` is jupyter_client's side (the kernel manager nbgrader's Execute uses, and the
kernel provisioner it builds by its entry point); `zygote_client` asks `zygote`, a process that
has imported torch once, to fork a kernel, which enters `sandbox` (its namespaces and root, all
of it run in the forked child), `cgroups` (its limits as a whole), `syscall_filter` and
`landlock`. `socket_folder` is the grader's side of the kernel's folders, and `probe` tells,
before grading, whether this machine can make a sandbox. What they allow is all in `policy`, and
what they need of Linux (the C library, its constants, SandboxError) in `linux`; neither imports
the others. Imports of `course` only `course.grading.channels`.
"""
