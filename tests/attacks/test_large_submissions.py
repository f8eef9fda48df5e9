"""A notebook too large for the grader to read whole is not collected, and collect says so.

nbgrader reads a submitted notebook whole, and holds about three times its size at its peak: a
notebook of 100 MB (one cell of a list literal, say) would cost the grader 300 MB before any
step of the course could look at it. Collect takes no file over `policy.SUBMITTED_FILE_BYTES`
(32 MiB: no kernel may write a larger one either), from an LMS export or from the hub's exchange
(tests/deploy/test_course_exchange.py), and names each one it refused with its student.
"""

import zipfile

from course.coursedir import paths
from course.grading.kernels import policy
from course.lms.collect import TOO_LARGE, collect_export

LAB = "01_softmax"
NOTEBOOK = paths.lab_filename(LAB)


def test_a_notebook_over_the_bound_in_an_lms_export_is_refused_and_named(tmp_path):
    archive = tmp_path / "downloaded" / LAB / "archive"
    archive.mkdir(parents=True)
    huge = b'{"cells": [{"source": "x = [' + b"1, " * (policy.SUBMITTED_FILE_BYTES // 3) + b']"}]}'
    with zipfile.ZipFile(archive / "gradebook_lab1.zip", "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr(f"Lab1_ada_attempt_2026-10-01-10-00-00_{NOTEBOOK}", b"{}")
        bundle.writestr(f"Lab1_eve_attempt_2026-10-01-10-00-00_{NOTEBOOK}", huge)
    result = collect_export(tmp_path, LAB)
    assert not result.ok
    line = f"Lab1_eve_attempt_2026-10-01-10-00-00_{NOTEBOOK} from student eve: {TOO_LARGE}"
    assert line in result.message, result.message
    assert TOO_LARGE == "larger than 32 MiB, which the grader reads whole"
    submitted = tmp_path / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["ada"]
