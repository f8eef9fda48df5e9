"""A work queue of submissions in a PostgreSQL gradebook, for graders on any number of machines.

Every grader of a lab (`make autograde` on each machine) adds the class's submissions to the
table `course_grading_queue`, which sits in the gradebook beside nbgrader's own tables, then
claims them one at a time for its workers. A claim is a lease: the row is taken with
``SELECT ... FOR UPDATE SKIP LOCKED`` (two graders never take the same row) and holds until an
expiry, which the grader pushes back while it grades. A grader that is killed, or whose machine
is lost, stops pushing: its lease runs out and the next grader to look takes the submission
again, from a clean folder. A grader ends when no submission is waiting or being graded, so the
last ones wait for the leases of the others. A submission graded, or failed, stays so: a regrade
is an explicit request (`request_regrade`). Times are the database's, whatever each machine's
clock says. A SQLite gradebook has no queue: one machine grades it (`course.grading.pool`).

States: waiting -> grading (leased by `owner`) -> graded | failed (`owner`: who graded it). A
lease that runs out goes to whoever claims it next, and after `MAX_CLAIMS` claims that all ran
out, to failed. `claims` counts the claims, `gradings` the grades recorded.
"""

import os
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass

import sqlalchemy
from sqlalchemy import text

TABLE = "course_grading_queue"
# A lease lasts this long unless renewed; graders renew theirs every third of it. Under Slurm or
# Kubernetes a lost machine's submissions are graded again after at most this long.
LEASE_SECONDS = 60.0
LEASE_VARIABLE = "COURSE_GRADING_LEASE_SECONDS"
# A submission whose leases ran out this many times (its grader dies with it) is failed.
MAX_CLAIMS = 3
LOST = "its graders stopped %s times before finishing it (a machine lost, or it kills them)"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    assignment TEXT NOT NULL,
    student TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('waiting', 'grading', 'graded', 'failed')),
    regrade BOOLEAN NOT NULL DEFAULT FALSE,
    claims INTEGER NOT NULL DEFAULT 0,
    gradings INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    lease_expires TIMESTAMPTZ,
    finished TIMESTAMPTZ,
    error TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (assignment, student)
)"""
# Graders of the same course that start at once create the table and the lab's records once.
SETUP_LOCK = "course grading setup"


@dataclass(frozen=True)
class Claim:
    """A submission this grader holds: the student, and whether the grade is a requested regrade."""

    student: str
    regrade: bool


def is_shared(url):
    """True for a gradebook several machines can share (PostgreSQL), False for SQLite."""
    return str(url).startswith("postgresql")


def lease_seconds():
    """The lease length: COURSE_GRADING_LEASE_SECONDS if set (positive), else LEASE_SECONDS."""
    value = os.environ.get(LEASE_VARIABLE, "")
    try:
        seconds = float(value) if value else LEASE_SECONDS
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ValueError(f"{LEASE_VARIABLE} must be a positive number of seconds, got {value!r}")
    return seconds


def grader_name():
    """How a grader is named in the queue: its machine and its process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


@contextmanager
def setup_lock(engine):
    """Hold the course's setup lock (a PostgreSQL advisory lock) on a connection of its own."""
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(hashtext(:name))"), {"name": SETUP_LOCK})
        connection.commit()
        try:
            yield
        finally:
            connection.execute(
                text("SELECT pg_advisory_unlock(hashtext(:name))"), {"name": SETUP_LOCK}
            )
            connection.commit()


class Queue:
    """The queue of one lab's submissions in the PostgreSQL gradebook at `url`."""

    def __init__(self, url, assignment, owner=None, lease=None):
        if not is_shared(url):
            raise ValueError(f"expected a PostgreSQL gradebook URL for the queue, got {url!r}")
        # Each statement is atomic alone: no BEGIN and COMMIT round trips around it.
        self.engine = sqlalchemy.create_engine(
            url, isolation_level="AUTOCOMMIT", pool_size=1, max_overflow=1
        )
        self.assignment = assignment
        self.owner = owner or grader_name()
        self.lease = lease_seconds() if lease is None else lease
        self.renewed = time.monotonic()

    def close(self):
        """Close the connections to the database."""
        self.engine.dispose()

    def run(self, statement, **values):
        """Execute one statement (a transaction of its own); its rows, if it returns any."""
        with self.engine.begin() as connection:
            result = connection.execute(text(statement), {"lab": self.assignment, **values})
            return result.fetchall() if result.returns_rows else []

    @contextmanager
    def setting_up(self):
        """Hold the course's setup lock, with the queue's table created if it was not there."""
        with setup_lock(self.engine):
            self.run(SCHEMA)
            yield

    def create(self):
        """Create the queue's table if it is not there yet."""
        with self.setting_up():
            pass

    def enqueue(self, students, graded=()):
        """Add the students not in the queue yet: waiting, or graded if in `graded` already.

        A grader that starts a new round (nothing waiting or being graded) first puts back the
        submissions that failed: a new run finishes what an earlier one could not. One that joins
        a round under way leaves them failed.
        """
        rows = [{"student": s, "state": "graded" if s in graded else "waiting"} for s in students]
        with self.engine.begin() as connection:
            connection.execute(
                text(
                    f"UPDATE {TABLE} SET state = 'waiting', claims = 0, error = '' "
                    "WHERE assignment = :lab AND state = 'failed' AND NOT EXISTS "
                    f"(SELECT 1 FROM {TABLE} WHERE assignment = :lab "
                    "AND state IN ('waiting', 'grading'))"
                ),
                {"lab": self.assignment},
            )
            if rows:
                connection.execute(
                    text(
                        f"INSERT INTO {TABLE} (assignment, student, state) "
                        "VALUES (:lab, :student, :state) ON CONFLICT DO NOTHING"
                    ),
                    [{"lab": self.assignment, **row} for row in rows],
                )

    def request_regrade(self, students):
        """Put graded or failed submissions back in the queue, to be graded afresh; how many."""
        rows = self.run(
            f"UPDATE {TABLE} SET state = 'waiting', regrade = TRUE, claims = 0, owner = NULL, "
            "error = '' WHERE assignment = :lab AND student = ANY(:students) "
            "AND state IN ('graded', 'failed') RETURNING student",
            students=list(students),
        )
        return len(rows)

    def claim(self):
        """Lease the next submission waiting, or one whose lease ran out; a Claim, or None.

        One statement: those whose leases ran out `MAX_CLAIMS` times are failed, and of the
        others the first free one is leased.
        """
        rows = self.run(
            f"WITH lost AS (UPDATE {TABLE} SET state = 'failed', owner = NULL, "
            "finished = now(), error = format(:lost, claims) WHERE assignment = :lab "
            "AND state = 'grading' AND lease_expires < now() AND claims >= :most) "
            f"UPDATE {TABLE} SET state = 'grading', owner = :owner, claims = claims + 1, "
            "lease_expires = now() + make_interval(secs => :lease) "
            f"WHERE (assignment, student) = (SELECT assignment, student FROM {TABLE} "
            "WHERE assignment = :lab AND (state = 'waiting' OR (state = 'grading' "
            "AND lease_expires < now() AND claims < :most)) "
            "ORDER BY state = 'grading', student LIMIT 1 FOR UPDATE SKIP LOCKED) "
            "RETURNING student, regrade",
            lost=LOST,
            most=MAX_CLAIMS,
            owner=self.owner,
            lease=self.lease,
        )
        return Claim(rows[0].student, rows[0].regrade) if rows else None

    def renew(self, students):
        """Push back the leases of `students` (held by this grader); those it no longer holds."""
        self.renewed = time.monotonic()
        if not students:
            return set()
        rows = self.run(
            f"UPDATE {TABLE} SET lease_expires = now() + make_interval(secs => :lease) "
            "WHERE assignment = :lab AND student = ANY(:students) AND owner = :owner "
            "AND state = 'grading' RETURNING student",
            students=list(students),
            owner=self.owner,
            lease=self.lease,
        )
        return set(students) - {row.student for row in rows}

    def renew_due(self):
        """True when a third of the lease has passed since the last renewal."""
        return time.monotonic() - self.renewed > self.lease / 3

    def record(self, student, graded, error=""):
        """Record the end of this grader's grading of `student`; False if it had lost the lease."""
        rows = self.run(
            f"UPDATE {TABLE} SET state = :state, finished = now(), "
            "regrade = FALSE, gradings = gradings + :counted, error = :error "
            "WHERE assignment = :lab AND student = :student AND owner = :owner "
            "AND state = 'grading' RETURNING student",
            state="graded" if graded else "failed",
            counted=1 if graded else 0,
            error=error,
            student=student,
            owner=self.owner,
        )
        return bool(rows)

    def give_back(self, students):
        """Return submissions this grader holds to the queue at once (it stops grading them)."""
        if students:
            self.run(
                f"UPDATE {TABLE} SET state = 'waiting', owner = NULL, claims = claims - 1 "
                "WHERE assignment = :lab AND student = ANY(:students) AND owner = :owner "
                "AND state = 'grading'",
                students=list(students),
                owner=self.owner,
            )

    def unfinished(self):
        """How many submissions are waiting or being graded (by any grader)."""
        rows = self.run(
            f"SELECT count(*) AS n FROM {TABLE} WHERE assignment = :lab "
            "AND state IN ('waiting', 'grading')"
        )
        return rows[0].n

    def rows(self):
        """student -> (state, claims, gradings, error) of every submission of the lab."""
        found = self.run(
            f"SELECT student, state, claims, gradings, error FROM {TABLE} "
            "WHERE assignment = :lab ORDER BY student"
        )
        return {row.student: (row.state, row.claims, row.gradings, row.error) for row in found}

    def graders(self):
        """student -> the grader that holds, or last held, each submission of the lab."""
        found = self.run(f"SELECT student, owner FROM {TABLE} WHERE assignment = :lab")
        return {row.student: row.owner for row in found}
