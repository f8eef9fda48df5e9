"""Tests for the figures of course.bench.report that are computed rather than timed."""

import subprocess
import sys

import pytest

from course.bench.report import cpu_seconds, parallel_ratio_ceiling, report, term_estimates


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


def test_the_term_on_n_machines_splits_each_lab_and_adds_the_queue():
    figures = {
        "class_autograde_seconds_per_submission_01_softmax": 1.0,
        "class_autograde_seconds_per_submission_10_tiny_gpt": 6.0,
        "queue_overhead_ms_per_submission": 30.0,
    }
    estimates = term_estimates(figures, machines=3, students=200)
    assert estimates["term_estimate_minutes_200_students"] == pytest.approx(200 * 7 / 60)
    # 67 submissions of each lab on the busiest machine, and 200/3 claims of 30 ms each
    shared = 67 * 7 + 2 * 200 / 3 * 0.03
    assert estimates["term_estimate_minutes_200_students_3_machines"] == pytest.approx(shared / 60)
