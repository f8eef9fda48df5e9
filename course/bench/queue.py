"""What the gradebook's work queue costs per submission: ``python -m course.bench.queue``.

A throwaway PostgreSQL server (`course.coursedir.scratch_postgres`, on a Unix socket, as a
grading machine beside its database would reach it; over a network add a round trip per
statement) holds a queue of 200 submissions. Graders, each with its own connections as on its
own machine (threads here), empty it: for each submission a claim, a renewal of its lease and
the record of its grade, the calls `course.grading.pool.grade_queue` makes.

* `queue_overhead_ms_per_submission`: the milliseconds a grader spends in those calls per
  submission, with 4 graders at once (the goal: under 50);
* `queue_overhead_ms_per_submission_one_grader`: the same with one grader alone.
"""

import threading
import time

from course.coursedir.scratch_postgres import scratch_postgres
from course.grading import queue

SUBMISSIONS = 200


def drain(grader):
    """Claim, renew and record every submission the queue gives `grader`; (seconds, count)."""
    count, start = 0, time.perf_counter()
    while (claim := grader.claim()) is not None:
        grader.renew([claim.student])
        grader.record(claim.student, graded=True)
        count += 1
    return time.perf_counter() - start, count


def overhead_ms(url, lab, graders):
    """Milliseconds per submission that `graders` graders spend in the queue's calls."""
    queues = [queue.Queue(url, lab, owner=f"grader{number}") for number in range(graders)]
    try:
        queues[0].create()
        queues[0].enqueue([f"s{number:03d}" for number in range(SUBMISSIONS)])
        results = [None] * graders

        def run(index):
            results[index] = drain(queues[index])

        threads = [threading.Thread(target=run, args=(index,)) for index in range(graders)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for grader in queues:
            grader.close()
    if sum(count for _, count in results) != SUBMISSIONS:
        raise RuntimeError(f"the graders claimed {results}, not {SUBMISSIONS} submissions")
    return 1000 * sum(seconds for seconds, _ in results) / SUBMISSIONS


def run():
    """The queue's figures, as {name: value}."""
    with scratch_postgres() as url:
        return {
            "queue_overhead_ms_per_submission": overhead_ms(url, "bench-4", 4),
            "queue_overhead_ms_per_submission_one_grader": overhead_ms(url, "bench-1", 1),
        }


def main():
    """Command-line entry point: print one `name: value` line per figure."""
    for name, value in run().items():
        print(f"{name}: {value:.3g}", flush=True)


if __name__ == "__main__":
    main()
