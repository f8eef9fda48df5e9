"""One autograding worker: `python -m course.grading.worker ASSIGNMENT`, run from the course root.

It reads student ids on stdin, one a line, autogrades each with nbgrader's own API (the same
`Autograde` converter as `nbgrader autograde`, configured by nbgrader_config.py) and answers each
with one JSON line on stdout: {"student", "success", "log", "error"}. Its kernels, each in a
sandbox of its own, are forked by the zygote that COURSE_KERNEL_ZYGOTE names
(`course.grading.zygote`). It dies with the process that started it.
"""

import ctypes
import json
import os
import signal
import sys

from course.grading import zygote

PR_SET_PDEATHSIG = 1


def die_with_parent():
    """Ask Linux to kill this process when the process that started it ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the parent is already gone
        sys.exit(1)


def nbgrader_api():
    """nbgrader's API, configured from the current folder as `nbgrader autograde` would be."""
    zygote.skip_slow_unused_imports()  # before nbgrader imports nbformat
    from nbgrader.apps import NbGraderAPI
    from nbgrader.apps.nbgraderapp import NbGraderApp

    from course.build import gradebook_db

    app = NbGraderApp()
    app.initialize([])
    api = NbGraderAPI(config=app.config)
    api.coursedir.db_url = gradebook_db.shared_url(api.coursedir.db_url)
    return api


def answer_channel():
    """A private copy of stdout for the answers; fd 1 then goes to stderr, so no print mixes in."""
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return channel


def grade(api, assignment, student):
    """Autograde one student's submission (kept if already graded); the answer to send back."""
    result = api.autograde(assignment, student, force=False, create=True)
    return {
        "student": student,
        "success": bool(result.get("success")),
        "log": result.get("log", ""),
        "error": result.get("error", ""),
    }


def main(argv=None):
    """Command-line entry point."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: python -m course.grading.worker ASSIGNMENT")
    die_with_parent()
    channel = answer_channel()
    api = nbgrader_api()
    for line in sys.stdin:
        student = line.strip()
        if student:
            channel.write(json.dumps(grade(api, argv[0], student)) + "\n")
            channel.flush()


if __name__ == "__main__":
    main()
