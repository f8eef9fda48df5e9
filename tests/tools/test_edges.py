"""tools/edges.py: the pieces of make test-edges that need no new environment."""

import platform

from tools import edges


def test_the_colab_install_keeps_the_cells_arguments_and_swaps_only_the_source():
    arguments = edges.colab_install_arguments("git+file:///tmp/edition@main")
    assert "git+file:///tmp/edition@main" in arguments
    assert "--no-deps" in arguments
    assert not any(a.startswith("git+https") for a in arguments)


def test_a_skipped_edge_fails_the_run_only_when_skips_are_not_allowed(capsys):
    passed = edges.Result(edges.EDGES_RUN[0], verdict="passed")
    skipped = edges.Result(edges.EDGES_RUN[1], verdict="skipped: no python3.11")
    assert edges.report([passed, skipped], no_skips=False)
    assert not edges.report([passed, skipped], no_skips=True)
    assert "skipped, and needed (COURSE_NO_SKIPS=1): oldest" in capsys.readouterr().out


def test_a_failed_edge_fails_the_run():
    assert not edges.report([edges.Result(edges.EDGES_RUN[2])], no_skips=False)


def test_the_running_python_is_found_by_its_version():
    version = ".".join(platform.python_version_tuple()[:2])
    found = edges.find_python(version)
    assert found and edges.python_version(found).startswith(version + ".")


def test_the_summary_is_pytests_last_line(tmp_path):
    log = tmp_path / "edge.log"
    log.write_text("== 3 failed in 1.0s ==\nmore\n========= 410 passed in 356.66s (0:05:56) ====\n")
    assert edges.nbval_summary(log) == "410 passed in 356.66s (0:05:56)"
