"""A kernel's CPU time: every process below it, or its control group's counter."""

import time


def test_a_kernels_cpu_time_counts_every_process_below_it():
    import subprocess
    import sys

    from course.grading.kernels import cpu_time

    burn = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'sum(range(3 * 10**7))'])"
    parent = subprocess.Popen([sys.executable, "-c", burn + "; input()"], stdin=subprocess.PIPE)
    try:
        readings = []
        while not readings or readings[-1][1] < 0.2:  # the child's time, then its parent's
            time.sleep(0.05)
            readings.append(cpu_time.kernel_cpu_seconds(parent.pid))
        assert all(pid == parent.pid for pid, _ in readings)
        assert [seconds for _, seconds in readings] == sorted(s for _, s in readings)
    finally:
        parent.communicate(b"\n")
    assert cpu_time.kernel_cpu_seconds(parent.pid) is None


def test_a_control_groups_cpu_counter_is_read_in_seconds():
    from course.grading.kernels import cpu_time

    stat = "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n"
    assert cpu_time.parse_counter(stat, "cpu.stat") == 2_500_000
    assert cpu_time.parse_counter("123456789\n", "cpuacct.usage") == 123_456_789
