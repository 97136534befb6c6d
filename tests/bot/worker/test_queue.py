"""The job queue: at-least-once (leases, heartbeats, re-queue of a dead worker's job), atomic dedupe."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from bot.worker.queue import QueueConfig, open_queue
from bot.infra.settings import load_settings
from tests.conftest import REDIS_TEST_URL
from tests.patience import wait_for


@pytest.fixture(params=["sqlite", "redis"])
def make_queue(request, tmp_path):
    settings = load_settings({"CI_REGISTRAR_DATA_DIR": str(tmp_path)})
    made = []

    def make(lease_s=30.0):
        if request.param == "redis":
            prefix = request.getfixturevalue("redis_prefix")
            config = QueueConfig(prefix, REDIS_TEST_URL, "", lease_s)
        else:
            config = QueueConfig(f"q-{uuid.uuid4().hex[:8]}", None, str(tmp_path / "queue.db"), lease_s)
        queue = open_queue(settings, config=config)
        made.append(queue)
        return queue

    yield make
    for queue in made:
        queue.storage.flush_queue()


def test_a_delivery_id_is_queued_once(make_queue):
    queue = make_queue()
    assert queue.enqueue_delivery("d1", "pull_request", b"{}") is True
    assert queue.enqueue_delivery("d1", "pull_request", b"{}") is False
    assert queue.enqueue_delivery("d2", "pull_request", b"{}") is True
    assert queue.depth() == 2


def test_forgetting_a_delivery_lets_it_in_again(make_queue):
    queue = make_queue()
    queue.enqueue_delivery("d1", "pull_request", b"{}")
    queue.forget_delivery("d1")
    assert queue.enqueue_delivery("d1", "pull_request", b"{}") is True


def test_a_claimed_message_stays_in_flight_until_acknowledged(make_queue):
    queue = make_queue()
    queue.enqueue_delivery("d1", "pull_request", b"{}")
    claim_id, data = queue.storage.claim()
    assert queue.depth() == 0 and queue.inflight() == 1
    queue.storage.ack(claim_id)
    assert queue.inflight() == 0 and queue.depth() == 0


def test_a_dead_workers_message_comes_back_after_its_lease(make_queue):
    queue = make_queue(lease_s=30)
    queue.enqueue_delivery("d1", "pull_request", b"{}")
    queue.storage.claim()  # ... and the worker dies: never acknowledged
    assert queue.storage.requeue_expired(time.time()) == 0
    assert queue.storage.requeue_expired(time.time() + 31) == 1
    assert queue.depth() == 1 and queue.inflight() == 0
    task = queue.dequeue()
    assert task.args[0] == "d1"


def test_the_heartbeat_keeps_a_running_jobs_lease(make_queue):
    queue = make_queue(lease_s=0.6)
    queue.enqueue_delivery("d1", "pull_request", b"{}")
    task = queue.dequeue()
    time.sleep(1.5)  # well past the lease: only the heartbeat keeps it
    assert queue.storage.requeue_expired() == 0
    assert queue.inflight() == 1
    queue._held.clear()
    queue.storage.ack(task._claim_id)


def test_a_consumer_runs_each_job_and_acknowledges_it(make_queue):
    queue = make_queue()
    seen = []
    lock = threading.Lock()

    @queue.task(name="note")
    def note(value):
        with lock:
            seen.append(value)

    for i in range(20):
        note(i)
    consumer = queue.create_consumer(workers=3, worker_type="thread", initial_delay=0.01, max_delay=0.1)
    consumer.start()
    try:
        wait_for(lambda: len(seen) == 20)
    finally:
        consumer.stop(graceful=True)
    assert sorted(seen) == list(range(20))
    assert queue.depth() == 0 and queue.inflight() == 0


def test_a_failing_job_is_acknowledged_not_stuck_in_flight(make_queue):
    queue = make_queue()

    @queue.task(name="boom")
    def boom():
        raise RuntimeError("bug")

    boom()
    task = queue.dequeue()
    queue.execute(task)
    assert queue.inflight() == 0 and queue.depth() == 0


def test_an_interrupted_job_is_not_acknowledged(make_queue):
    queue = make_queue()

    @queue.task(name="interrupted")
    def interrupted():
        raise KeyboardInterrupt

    interrupted()
    task = queue.dequeue()
    queue.execute(task)
    assert queue.inflight() == 1  # its lease will expire and it runs again


def test_a_delayed_retry_moves_into_the_queue_when_due_in_one_step(make_queue):
    import datetime as dt

    from huey.exceptions import RetryTask

    queue = make_queue()
    calls = []

    @queue.task(name="flaky")
    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise RetryTask(delay=1)

    flaky()
    queue.execute(queue.dequeue())
    assert queue.depth() == 0 and queue.scheduled_count() == 1
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    assert queue.read_schedule(now) == [] and queue.depth() == 0  # not due yet
    time.sleep(1.1)
    assert queue.read_schedule(now + dt.timedelta(seconds=1.1)) == []
    assert queue.depth() == 1 and queue.scheduled_count() == 0
    queue.execute(queue.dequeue())
    assert len(calls) == 2 and queue.inflight() == 0


def _enqueue_once_idle(queue, enqueue, started: list) -> None:
    """A one-thread consumer of `queue`, backed off to a 2 s poll; `enqueue()` once it has gone idle,
    then wait (at most 5 s) until the job has started."""
    consumer = queue.create_consumer(workers=1, worker_type="thread", periodic=False, initial_delay=2.0,
                                     backoff=1.0, max_delay=2.0, check_worker_health=False)
    consumer.start()
    try:
        time.sleep(0.5)  # the worker found nothing and sleeps (or waits) up to 2 s
        enqueue()
        deadline = time.time() + 5
        while not started and time.time() < deadline:
            time.sleep(0.01)
    finally:
        consumer.stop(graceful=True)


def test_a_worker_of_the_same_process_starts_at_once_on_an_enqueue(make_queue):
    """The worker has backed off to a 2 s poll; an enqueue in its process wakes it well before that."""
    queue = make_queue()
    started = []

    @queue.task(name="mark")
    def mark(at):
        started.append(time.time() - at)

    _enqueue_once_idle(queue, lambda: mark(time.time()), started)
    assert started and started[0] < 0.5, started


def test_a_redis_worker_in_another_process_starts_at_once_on_an_enqueue(tmp_path, redis_prefix):
    """Redis: the worker blocks on the queue's doorbell (BLPOP); a delivery queued by another
    process (here another queue instance, as the web process is) rings it: no 2 s poll to wait."""
    settings = load_settings({"CI_REGISTRAR_DATA_DIR": str(tmp_path)})
    config = QueueConfig(redis_prefix, REDIS_TEST_URL, "", 30.0)
    worker_side, web_side = open_queue(settings, config=config), open_queue(settings, config=config)
    started = []

    @worker_side.task(name="mark")
    def mark(at):
        started.append(time.time() - at)

    remote_mark = web_side.task(name="mark")(lambda at: None)

    _enqueue_once_idle(worker_side, lambda: remote_mark(time.time()), started)
    assert started and started[0] < 0.5, started
    # a delivery (queued by the Lua script, as the web process does) rings the same doorbell
    storage = web_side.storage
    storage.conn.delete(storage.bell_key)
    web_side.enqueue_delivery(uuid.uuid4().hex, "ping", b"{}")
    assert worker_side.storage.wait_for_work(1.0) is True
    assert worker_side.storage.wait_for_work(0.05) is False  # one job, one token
    worker_side.storage.flush_queue()


# -- the lot: a job over its installation's share waits in this process, claimed ----------------------
def _shared_queue(make_queue, lot_threads: int):
    from huey.exceptions import RetryTask

    from bot.worker.fairness import Shares

    queue = make_queue()
    shares = Shares(limit=1)
    queue.parked_ready = shares.has_room
    queue.set_lot_size(lot_threads)
    started, done, gate = [], [], threading.Event()
    lock = threading.Lock()

    @queue.task(name="job")
    def job(installation, name):
        with shares.slot(installation) as free:
            if not free:
                if queue.park(installation):
                    return
                raise RetryTask(delay=30)  # through the schedule: far later than any wait below
            with lock:
                started.append(name)
            if name == "a1":
                gate.wait(30)
            with lock:
                done.append(name)

    return queue, job, started, done, gate, shares


def test_a_job_over_its_share_waits_in_the_lot_while_another_installation_goes_first(make_queue):
    queue, job, started, done, gate, shares = _shared_queue(make_queue, lot_threads=2)
    job(1, "a1")
    consumer = queue.create_consumer(workers=2, worker_type="thread", periodic=False, initial_delay=0.01,
                                     max_delay=0.1)
    consumer.start()
    try:
        assert wait_for(lambda: started == ["a1"])  # a long job of installation 1 (share: 1 thread)
        job(1, "a2")
        job(2, "b1")
        assert wait_for(lambda: "b1" in done)
        # a1 holds installation 1's share: a2 waits in the lot, claimed, and b1 went past it.
        assert started == ["a1", "b1"] and queue.parked() == 1
        assert queue.inflight() == 2 and queue.depth() == 0 and queue.storage.schedule_size() == 0
        gate.set()
        assert wait_for(lambda: "a2" in done)  # from the lot as a1 ended, not 30 s later from the schedule
        assert started == ["a1", "b1", "a2"]
        assert wait_for(lambda: queue.inflight() == 0)
        assert queue.depth() == 0 and queue.storage.schedule_size() == 0 and queue.parked() == 0
    finally:
        gate.set()
        consumer.stop(graceful=True)


def test_a_full_lot_steps_back_through_the_schedule(make_queue):
    queue, job, started, done, gate, shares = _shared_queue(make_queue, lot_threads=0)  # no lot
    job(1, "a1")
    consumer = queue.create_consumer(workers=2, worker_type="thread", periodic=False, initial_delay=0.01,
                                     max_delay=0.1)
    consumer.start()
    try:
        assert wait_for(lambda: started == ["a1"])
        job(1, "a2")
        assert wait_for(lambda: queue.storage.schedule_size() == 1)
        assert started == ["a1"] and queue.parked() == 0
    finally:
        gate.set()
        consumer.stop(graceful=True)


def test_a_stopping_process_hands_its_parked_jobs_back_to_the_queue(make_queue):
    queue, job, started, done, gate, shares = _shared_queue(make_queue, lot_threads=1)
    job(1, "a2")
    consumer = queue.create_consumer(workers=1, worker_type="thread", periodic=False)  # never started
    with shares.slot(1):  # installation 1's share is held (a long job elsewhere)
        queue.execute(queue.dequeue())
    assert queue.parked() == 1 and queue.inflight() == 1 and queue.depth() == 0 and started == []
    consumer.stop()
    # Back at the queue's head now, not when its lease runs out.
    assert queue.parked() == 0 and queue.inflight() == 0 and queue.depth() == 1
    queue.execute(queue.dequeue())
    assert done == ["a2"] and queue.depth() == 0 and queue.inflight() == 0
