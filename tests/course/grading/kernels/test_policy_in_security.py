"""SECURITY.md's table of what each mode bounds says what course/grading/kernels/policy.py does.

Each row names the policy's constants (`Limits.open_files`, `ROOT_FILES`) and their values
("128", "1 MiB, 256"); every one must be the policy's, and the summary of `make autograde`
must name the same bounds in each mode.
"""

import re

import pytest

from course.coursedir import paths
from course.grading.kernels import cgroups, policy

UNITS = {"": 1, "KiB": policy.KiB, "MiB": policy.MiB, "GiB": 1 << 30}
VALUE = re.compile(r"^(\d[\d ]*)\s*(KiB|MiB|GiB|)$")


def table_rows():
    """(policy names, value texts) of each row of SECURITY.md's "What each mode bounds"."""
    text = (paths.ROOT / "SECURITY.md").read_text()
    section = text.split("## What each mode bounds", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[1].startswith("`"):
            names = [name.strip().strip("`") for name in cells[1].split(",")]
            values = [value.strip() for value in cells[2].split(",")]
            rows.append((names, values))
    return rows


def policy_value(name):
    """The value of `Limits.field` or of a constant of policy.py."""
    if name.startswith("Limits."):
        return getattr(policy.Limits(), name.removeprefix("Limits."))
    return getattr(policy, name)


def number(text):
    """ "4 GiB" -> 4294967296, "128" -> 128."""
    match = VALUE.match(text)
    assert match, f"not a number with a unit: {text!r}"
    return int(match.group(1).replace(" ", "")) * UNITS[match.group(2)]


def test_the_table_has_a_row_for_every_limit_of_a_kernel():
    named = {name for names, _ in table_rows() for name in names}
    fields = {f"Limits.{field}" for field in policy.Limits.__dataclass_fields__}
    assert fields <= named, fields - named


@pytest.mark.parametrize("row", table_rows(), ids=lambda row: ", ".join(row[0]))
def test_each_number_in_security_md_is_the_policys(row):
    names, values = row
    assert len(names) == len(values), row
    for name, value in zip(names, values, strict=True):
        assert number(value) == policy_value(name), (name, value)


@pytest.mark.parametrize("kind", [cgroups.V1, cgroups.V2, cgroups.RLIMITS])
def test_the_summary_names_every_bound_in_force_in_each_mode(kind):
    limits = policy.Limits()
    line = cgroups.Mode(kind, "why").describe(limits)
    assert line.startswith("sandbox limits: ")
    for shown in (f"{limits.open_files} open files", f"{limits.tmp_files} files each",
                  f"{limits.processes} processes", "no extended attribute"):  # fmt: skip
        assert shown in line, (kind, line)
    whole = f"as a whole {limits.sandbox_memory_bytes >> 30:g} GiB of memory"
    assert (whole in line) == (kind != cgroups.RLIMITS), line
    assert ("NOT bounded as a whole" in line) == (kind == cgroups.RLIMITS), line
