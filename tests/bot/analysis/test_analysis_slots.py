"""Analysis slots shared fairly between installations (bot/analysis/slots.py), across processes.

The policy is replayed with an injected clock: who holds, who waits, who must yield, in which
order, never how long anything takes. Then the same through the shared states a deployment uses
(a file under an flock, a Redis key), each seen by two schedulers as two processes would, and one
real analysis child paused and resumed while another installation's analysis runs.
"""

from __future__ import annotations

import threading

import pytest

from bot.analysis import slots as analysis_slots
from bot.analysis.slots import FileState, MemoryState, RedisState, Scheduler


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _scheduler(slots=1, quantum=1.0, state=None, clock=None, lease=30.0):
    return Scheduler(state or MemoryState(), slots, quantum_s=quantum, lease_s=lease, clock=clock or Clock())


def test_with_one_slot_another_installation_gets_it_after_the_holders_quantum():
    clock = Clock()
    s = _scheduler(slots=1, quantum=1.0, clock=clock)
    assert s.request("a-long", installation=1)
    assert not s.request("b-check", installation=2)  # B arrives while A holds the only slot
    clock.now += 0.5
    assert not s.must_yield("a-long")  # within its quantum
    assert s.snapshot() == {"holders": {"a-long": "1"}, "waiters": ["b-check"]}
    clock.now += 0.5
    assert s.must_yield("a-long")  # its quantum is over and B holds nothing
    s.yield_slot("a-long", 1)
    assert s.snapshot() == {"holders": {"b-check": "2"}, "waiters": ["a-long"]}
    assert s.request("b-check", 2) and not s.request("a-long", 1)
    s.release("b-check")  # B's check is done: A takes its slot back
    assert s.snapshot() == {"holders": {"a-long": "1"}, "waiters": []}
    clock.now += 5
    assert not s.must_yield("a-long")  # nobody waits: it runs on


def test_jobs_of_one_installation_never_preempt_each_other():
    clock = Clock()
    s = _scheduler(slots=1, quantum=1.0, clock=clock)
    assert s.request("a1", 1)
    assert not s.request("a2", 1)
    clock.now += 10
    assert not s.must_yield("a1")
    s.release("a1")
    assert s.snapshot()["holders"] == {"a2": "1"}


def test_a_free_slot_goes_to_the_installation_holding_fewest_then_served_longest_ago():
    clock = Clock()
    s = _scheduler(slots=2, clock=clock)
    assert s.request("a1", 1) and s.request("a2", 1)
    for job in ("a3", "a4"):
        assert not s.request(job, 1)
    clock.now += 0.1
    assert not s.request("b1", 2)  # later than a3 and a4, but B holds nothing
    assert not s.request("c1", 3)
    assert s.snapshot()["waiters"] == ["b1", "c1", "a3", "a4"]
    s.release("a1")
    assert s.snapshot()["holders"] == {"a2": "1", "b1": "2"}
    s.release("a2")  # A and C hold none now: C, never served, before A's older waiter
    assert s.snapshot()["holders"] == {"b1": "2", "c1": "3"}
    assert s.snapshot()["waiters"] == ["a3", "a4"]


def test_two_slots_settle_at_one_each_and_stop_switching():
    clock = Clock()
    s = _scheduler(slots=2, quantum=1.0, clock=clock)
    assert s.request("a1", 1) and s.request("a2", 1)
    assert not s.request("a3", 1) and not s.request("b1", 2)
    clock.now += 1
    # Both of A's holders are past their quantum; the first to ask yields to B.
    assert s.must_yield("a1")
    s.yield_slot("a1", 1)
    assert s.snapshot()["holders"] == {"a2": "1", "b1": "2"}
    clock.now += 5
    # One each now: A's waiters do not take B's slot, and A's holder keeps its own.
    assert not s.must_yield("b1") and not s.must_yield("a2")


def test_an_installation_two_slots_ahead_yields_one_at_once_and_the_switch_does_not_swing_back():
    clock = Clock()
    s = _scheduler(slots=3, quantum=1.0, clock=clock)
    assert s.request("a1", 1) and s.request("a2", 1) and s.request("a3", 1)
    clock.now += 0.1  # well within every holder's quantum
    assert not s.must_yield("a1")  # nobody else waits
    assert not s.request("b1", 2) and not s.request("c1", 3)
    assert s.must_yield("a1")  # A holds 3, B none: no quantum to wait out
    s.yield_slot("a1", 1)
    assert s.snapshot()["holders"] == {"a2": "1", "a3": "1", "b1": "2"}
    assert s.must_yield("a2")  # A holds 2, C none
    s.yield_slot("a2", 1)
    assert s.snapshot()["holders"] == {"a3": "1", "b1": "2", "c1": "3"}
    # One each: one apart at most from here on, so the quantum decides, and nobody is poorer.
    assert not any(s.must_yield(job) for job in ("a3", "b1", "c1"))
    clock.now += 5
    assert not any(s.must_yield(job) for job in ("a3", "b1", "c1"))


def test_one_slot_apart_still_waits_the_quantum():
    clock = Clock()
    s = _scheduler(slots=2, quantum=1.0, clock=clock)
    assert s.request("a1", 1) and s.request("b1", 2)
    assert not s.request("c1", 3)
    clock.now += 0.5
    assert not s.must_yield("a1") and not s.must_yield("b1")  # one each, C none: within the quantum
    clock.now += 0.5
    assert s.must_yield("a1")


def test_a_crashed_processs_entries_expire_and_free_the_slot():
    clock = Clock()
    s = _scheduler(slots=1, clock=clock, lease=30.0)
    assert s.request("dead-holder", 1)
    assert not s.request("b", 2)
    clock.now += 20
    assert not s.request("b", 2)  # B renews its place; the holder does not
    clock.now += 11
    assert s.request("b", 2)  # the holder's lease ran out
    assert s.must_yield("dead-holder")  # were it alive after all, it would queue again


def test_settings_are_checked():
    with pytest.raises(ValueError):
        _scheduler(slots=0)


@pytest.mark.parametrize("name,value", [("CI_REGISTRAR_ANALYSIS_SLOTS", "0"), ("CI_REGISTRAR_ANALYSIS_SLOTS", "1.5"),
                                        ("CI_REGISTRAR_ANALYSIS_QUANTUM_S", "nan"),
                                        ("CI_REGISTRAR_ANALYSIS_QUANTUM_S", "-1"),
                                        ("CI_REGISTRAR_ANALYSIS_SLOT_LEASE_S", "inf")])
def test_bad_settings_stop_the_worker(monkeypatch, tmp_path, name, value):
    from types import SimpleNamespace

    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        analysis_slots.configure(SimpleNamespace(data_dir=tmp_path))
    analysis_slots.disable()


# -- shared between processes ---------------------------------------------------------------------
def _two_processes(state_factory):
    clock = Clock()
    return Scheduler(state_factory(), 1, quantum_s=1.0, clock=clock), Scheduler(state_factory(), 1, quantum_s=1.0,
                                                                               clock=clock), clock


def _replay_across(first, second, clock):
    assert first.request("p1-a", 1)
    assert not second.request("p2-b", 2)  # another process sees the slot taken
    clock.now += 1
    assert first.must_yield("p1-a")  # and the first sees the other's waiter
    first.yield_slot("p1-a", 1)
    assert second.request("p2-b", 2)
    assert second.snapshot() == first.snapshot() == {"holders": {"p2-b": "2"}, "waiters": ["p1-a"]}
    second.release("p2-b")
    assert first.request("p1-a", 1)
    first.release("p1-a")
    assert second.snapshot() == {"holders": {}, "waiters": []}


def test_the_file_state_is_one_state_for_every_process_on_the_machine(tmp_path):
    _replay_across(*_two_processes(lambda: FileState(tmp_path / "analysis-slots.json")))


def test_the_redis_state_is_one_state_for_every_worker_process(redis_prefix):
    import redis

    from tests.conftest import REDIS_TEST_URL

    clients = []

    def state():
        clients.append(redis.Redis.from_url(REDIS_TEST_URL))
        return RedisState(clients[-1], f"ci-registrar.analysis-slots.{redis_prefix}")

    try:
        _replay_across(*_two_processes(state))
    finally:
        for c in clients:
            c.close()


def test_the_file_state_holds_under_threads_taking_turns(tmp_path):
    """Many concurrent request/release cycles through the flock never grant more than the slots."""
    state = FileState(tmp_path / "slots.json")
    s = Scheduler(state, 2, quantum_s=1.0)
    over = []

    def worker(i):
        job = f"j{i}"
        while not s.request(job, i % 3):
            pass
        if len(s.snapshot()["holders"]) > 2:
            over.append(job)
        s.release(job)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert over == [] and s.snapshot() == {"holders": {}, "waiters": []}


# -- a real analysis child, paused for another installation ---------------------------------------
class _GatedTree:
    """A tree whose reads answer b"go" until `stop` is set: the child's progress is the test's to decide."""

    def __init__(self, stop: threading.Event, started: threading.Event | None = None):
        self.stop, self.started = stop, started
        self.listed = True

    def paths(self):
        return ["a.py"]

    def read(self, path):
        if self.started is not None:
            self.started.set()
        return b"stop" if self.stop.is_set() else b"go"


def test_a_long_analysis_is_paused_for_another_installations_and_resumes(tmp_path):
    from bot.analysis.bounded import run_check_bounded
    from bot.infra.current_job import CURRENT_JOB

    scheduler = Scheduler(FileState(tmp_path / "slots.json"), 1, quantum_s=0.0)
    analysis_slots._configured = scheduler
    order, slots_seen = [], []
    a_running, a_stop, b_stop = threading.Event(), threading.Event(), threading.Event()
    b_stop.set()  # B's check is short: its first read says stop

    class Job:  # what run_check_bounded reads of the current job
        def __init__(self, installation_id):
            self.installation_id = installation_id

    def analyse(name, installation, tree):
        token = CURRENT_JOB.set(Job(installation))
        try:
            report = run_check_bounded(tree, None, None, config_text=None, timeout_s=60,
                                       engine="tests.bot.analysis.test_analysis_slots:_spin_engine")
            order.append((name, report))
        finally:
            CURRENT_JOB.reset(token)

    try:
        a = threading.Thread(target=analyse, args=("A", 1, _GatedTree(a_stop, a_running)))
        a.start()
        assert a_running.wait(60)  # A's child holds the only slot and is reading
        slots_seen.append(scheduler.snapshot()["holders"])
        b = threading.Thread(target=analyse, args=("B", 2, _GatedTree(b_stop)))
        b.start()
        b.join(60)  # B finishes while A has not been told to stop: A yielded its slot
        assert order and order[0][0] == "B", order
        a_stop.set()
        a.join(60)
    finally:
        a_stop.set()
        analysis_slots.disable()
    assert [name for name, _ in order] == ["B", "A"]
    assert all(report["reads"] >= 1 for _, report in order), order
    assert list(slots_seen[0].values()) == ["1"]
    assert scheduler.snapshot() == {"holders": {}, "waiters": []}


def _spin_engine(head, base, changed, config_text=None, limits=None, **_):
    """A test engine: reads until its tree says stop; returns how many reads it made."""
    reads = 0
    while True:
        reads += 1
        if head.read("a.py") == b"stop":
            return {"reads": reads}
