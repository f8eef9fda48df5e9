"""Tests for the figures of course.bench.report that are computed rather than timed."""

import subprocess
import sys

import pytest

from course.bench.report import cpu_seconds, parallel_ratio_ceiling, report


def test_ceiling_is_the_ratio_with_every_core_busy():
    # 18 CPU seconds keep 2 cores busy for 9 s at best: a 14 s sequential run is 1.56 times that
    assert parallel_ratio_ceiling(14.0, 18.0, 2) == pytest.approx(14 / 9)


def test_ceiling_equals_the_cores_when_the_sequential_run_used_one_core_throughout():
    assert parallel_ratio_ceiling(10.0, 10.0, 4) == pytest.approx(4.0)


@pytest.mark.parametrize("cpu, cores", [(0.0, 2), (-1.0, 2), (5.0, 0)])
def test_ceiling_refuses_what_no_run_measures(cpu, cores):
    with pytest.raises(ValueError, match="expected positive CPU seconds and cores"):
        parallel_ratio_ceiling(10.0, cpu, cores)


def test_cpu_seconds_counts_a_child_once_it_has_ended():
    spin = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    before = cpu_seconds()
    subprocess.run([sys.executable, "-c", spin], check=True)
    assert cpu_seconds() - before >= 0.3


def test_a_small_figure_keeps_its_significant_digits(capsys):
    report("parity", 1.0728836059570312e-06)
    report("seconds", 1.6851)
    assert capsys.readouterr().out == "parity: 1.07e-06\nseconds: 1.685\n"
