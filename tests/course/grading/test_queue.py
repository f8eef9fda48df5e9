"""The gradebook's work queue against a real PostgreSQL: claims, leases, records and regrades.

Graders are `Queue` objects with names of their own, as on several machines; no submission is
graded here (`test_slurm.py` grades a class through the queue on a real Slurm cluster).
"""

import threading
import time

import pytest
from postgres_server import postgres_server

from course.grading import queue

pytestmark = pytest.mark.slow  # a PostgreSQL server

LAB = "01_softmax"
CLASS = [f"s{number:03d}" for number in range(40)]


@pytest.fixture(scope="module")
def server():
    """A PostgreSQL server for this module's queues; its URL."""
    with postgres_server() as url:
        yield url


@pytest.fixture
def grader(server, request):
    """A function: a grader named `name` on a lab of this test's own, with `lease` seconds."""
    made = []

    def make(name, lease=60.0):
        found = queue.Queue(server, f"{LAB}-{request.node.name}", owner=name, lease=lease)
        found.create()
        made.append(found)
        return found

    yield make
    for found in made:
        found.close()


def claim_all(grader_queue):
    """The students a grader claims until the queue gives it none."""
    claimed = []
    while (claim := grader_queue.claim()) is not None:
        claimed.append(claim.student)
    return claimed


def test_graders_claiming_at_once_never_share_a_submission_and_leave_none(grader):
    graders = [grader(f"node{number}") for number in range(4)]
    graders[0].enqueue(CLASS)
    claimed = {}
    threads = [
        threading.Thread(target=lambda g=g: claimed.setdefault(g.owner, claim_all(g)))
        for g in graders
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [student for students in claimed.values() for student in students]
    assert sorted(every) == CLASS  # each once, none left
    for name, students in claimed.items():
        for student in students:
            assert graders[int(name[-1])].record(student, graded=True)
    rows = graders[0].rows()
    assert {row[:3] for row in rows.values()} == {("graded", 1, 1)}
    assert graders[0].unfinished() == 0


def test_adding_the_class_again_changes_nothing_graded_or_claimed(grader):
    first = grader("node0")
    first.enqueue(CLASS[:3], graded={CLASS[0]})
    assert first.claim().student == CLASS[1]
    first.enqueue(CLASS[:4])
    assert first.rows() == {
        CLASS[0]: ("graded", 0, 0, ""),
        CLASS[1]: ("grading", 1, 0, ""),
        CLASS[2]: ("waiting", 0, 0, ""),
        CLASS[3]: ("waiting", 0, 0, ""),
    }


def test_a_lease_that_runs_out_returns_the_submission_to_another_grader(grader):
    lost, other = grader("lost", lease=0.5), grader("other")
    lost.enqueue(CLASS[:1])
    assert lost.claim().student == CLASS[0]
    assert other.claim() is None and other.unfinished() == 1  # leased: the others wait
    time.sleep(1.0)
    assert other.claim().student == CLASS[0]
    assert not lost.record(CLASS[0], graded=True)  # too late: another grader holds it
    assert lost.renew([CLASS[0]]) == {CLASS[0]}
    assert other.record(CLASS[0], graded=True)
    assert other.rows()[CLASS[0]] == ("graded", 2, 1, "")


def test_a_renewed_lease_holds_while_its_grader_works(grader):
    working, other = grader("working", lease=1.0), grader("other")
    working.enqueue(CLASS[:1])
    working.claim()
    for _ in range(4):
        time.sleep(0.4)
        assert working.renew([CLASS[0]]) == set()
        assert other.claim() is None
    assert working.record(CLASS[0], graded=True)


def test_a_submission_whose_graders_keep_dying_fails_after_a_few_claims(grader):
    dying = grader("dying", lease=0.2)
    dying.enqueue(CLASS[:1])
    for _ in range(queue.MAX_CLAIMS):
        assert dying.claim().student == CLASS[0]
        time.sleep(0.4)
    assert dying.claim() is None
    state, claims, gradings, error = dying.rows()[CLASS[0]]
    assert (state, claims, gradings) == ("failed", queue.MAX_CLAIMS, 0)
    assert error == queue.LOST % queue.MAX_CLAIMS
    assert dying.unfinished() == 0


def test_a_regrade_is_an_explicit_request(grader):
    first = grader("node0")
    first.enqueue(CLASS[:2])
    for student in claim_all(first):
        first.record(student, graded=True)
    first.enqueue(CLASS[:2])
    assert first.claim() is None  # a new run regrades nothing
    assert first.request_regrade([CLASS[1], "nobody"]) == 1
    claim = first.claim()
    assert claim == queue.Claim(CLASS[1], regrade=True)
    first.record(claim.student, graded=True)
    assert first.rows()[CLASS[1]] == ("graded", 1, 2, "")
    assert first.claim() is None


def test_failures_wait_for_a_new_round_not_for_a_grader_joining_one(grader):
    first, joining = grader("node0"), grader("node1")
    first.enqueue(CLASS[:3])
    claim = first.claim()
    first.record(claim.student, graded=False, error="the grader died")
    joining.enqueue(CLASS[:3])  # two are still waiting: a round under way
    assert joining.rows()[claim.student][0] == "failed"
    for student in claim_all(joining):
        joining.record(student, graded=True)
    first.enqueue(CLASS[:3])  # nothing waiting: a new round
    assert first.claim() == queue.Claim(claim.student, regrade=False)


def test_a_stopped_grader_gives_its_submissions_back_at_once(grader):
    stopped, other = grader("stopped"), grader("other")
    stopped.enqueue(CLASS[:2])
    held = claim_all(stopped)
    stopped.give_back(held)
    assert sorted(claim_all(other)) == CLASS[:2]
    assert {row[1] for row in other.rows().values()} == {1}


def test_only_a_postgresql_gradebook_has_a_queue(monkeypatch):
    assert queue.is_shared("postgresql+psycopg2://grader@/gradebook")
    assert not queue.is_shared("sqlite:////course/gradebook.db")
    with pytest.raises(ValueError, match="PostgreSQL gradebook URL"):
        queue.Queue("sqlite:////course/gradebook.db", LAB)
    monkeypatch.setenv(queue.LEASE_VARIABLE, "soon")
    with pytest.raises(ValueError, match="positive number of seconds"):
        queue.lease_seconds()
    monkeypatch.setenv(queue.LEASE_VARIABLE, "12.5")
    assert queue.lease_seconds() == 12.5
