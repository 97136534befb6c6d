"""Files parsed on several processes (checks/scanning/parallel.py): the report is the one a single process
makes, finding for finding, with caps hit, did-you-mean budgets spent, syntax errors and a scan
cache; a worker that fails costs only time."""

from __future__ import annotations

import os

import pytest

from checks.scanning import parallel
from checks.engine import check_tree
from checks.limits import Limits
from checks.reporting.render import to_json
from checks.scanning.scan_cache import DiskScanCache
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import CONSUMERS, test_file
from tests.fixtures.miles_shape import miles_shaped

pytestmark = pytest.mark.skipif(not parallel.can_fork(), reason="forked workers are used on Linux only")


def awkward_tree() -> dict[str, str]:
    """miles-shaped, with a file of every kind whose scan has effects outside its own result."""
    files = miles_shaped(700, 300)
    e2e = sorted(p for p in files if p.startswith("tests/e2e/"))
    for i, path in enumerate(e2e[::7]):  # label typos: did-you-mean lookups against a shared budget
        files[path] = test_file(f'register_cuda_ci(est_time=60, suite="stage-c-4-gpu-h200", labels=["megatorn{i}"])')
    for at in (3, len(e2e) // 2 + 3, -4):  # in the first worker's part, a middle one's and the last's
        files[e2e[at]] = test_file('register_cuda_ci(est_time=60, suite="stage-c-4-gpu-h200", labels=["long"])') + "def broken(:\n"
        files[e2e[at + 1]] = "import os\n\ndef broken(:\n    pass\n"  # no registration, does not parse
        files[e2e[at + 2]] = "from tests.ci.ci_register import register_cuda_ci as reg\n\nreg(est_time=1, suite='stage-c-4-gpu-h200', labels=['long'])\n"
        files[e2e[at - 1]] = test_file('register_cuda_ci(est_time=60, suite="stage-c-4-gpu-h200", labels=["long"])') + "x = 1\n" * 3000  # over the ast_nodes cap
    return files


LIMITS = Limits(ast_nodes=5000)


def report(files, workers: int, limits: Limits = LIMITS, **kw) -> str:
    return to_json(check_tree(MemoryTree(files), fixes=False, consumers_from=CONSUMERS, limits=limits, workers=workers, **kw))


def test_the_report_does_not_depend_on_the_number_of_workers():
    files = awkward_tree()
    one = report(files, 1)
    assert '"REG902"' in one and '"REG001"' in one and '"REG003"' in one and "did you mean" in one
    for workers in (2, 3, 8):
        assert report(files, workers) == one, workers


def test_the_did_you_mean_budget_is_spent_in_file_order():
    """With a budget that runs out midway, the same files get their hints as in one process."""
    from checks.target.suites import NearNames

    files = awkward_tree()
    unbounded = report(files, 1).count("did you mean")
    defaults = NearNames.__init__.__defaults__
    try:
        NearNames.__init__.__defaults__ = (60,)  # a few label lookups, then none
        one = report(files, 1)
        assert 0 < one.count("did you mean") < unbounded
        assert report(files, 4) == one
    finally:
        NearNames.__init__.__defaults__ = defaults


def test_the_scan_cache_gets_the_same_entries(tmp_path):
    files = awkward_tree()
    serial, forked = DiskScanCache(tmp_path / "one"), DiskScanCache(tmp_path / "many")
    one = report(files, 1, scan_cache=serial)
    many = report(files, 3, scan_cache=forked)
    assert many == one
    entries = lambda d: DiskScanCache(d)._load()  # noqa: E731  (what a new process reads back)
    assert entries(tmp_path / "many") == entries(tmp_path / "one") != {}
    assert report(files, 3, scan_cache=DiskScanCache(tmp_path / "many")) == one  # and warm


def test_map_forked_keeps_the_order_and_runs_in_other_processes():
    items = list(range(200))
    out = parallel.map_forked(lambda i: (i, os.getpid()), items, 4)
    assert [i for i, _pid in out] == items
    assert len({pid for _i, pid in out}) == 4 and os.getpid() in {pid for _i, pid in out}


def test_a_failing_worker_costs_only_time():
    parent = os.getpid()

    def fn(i):
        if os.getpid() != parent and i % 2:
            raise RuntimeError("a worker fails")
        return i * i

    assert parallel.map_forked(fn, list(range(120)), 3) == [i * i for i in range(120)]


def test_a_worker_whose_result_cannot_be_pickled_costs_only_time():
    parent = os.getpid()
    out = parallel.map_forked(lambda i: (lambda: i) if os.getpid() != parent else i, list(range(100)), 2)
    assert out == list(range(100))


def test_few_items_stay_in_this_process():
    assert {pid for pid in parallel.map_forked(lambda i: os.getpid(), list(range(parallel.MIN_PER_WORKER)), 8)} == {os.getpid()}


def test_no_worker_on_a_busy_machine(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(parallel, "runnable_now", lambda: None)  # where /proc/loadavg is not there
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 1.0, 1.0))
    assert parallel.available_workers() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 1.0, 1.0))
    assert parallel.available_workers() == 4
    monkeypatch.setattr(os, "getloadavg", lambda: (40.0, 1.0, 1.0))
    assert parallel.available_workers() == 1


def test_a_core_is_busy_only_if_the_average_and_the_instant_both_say_so(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    # one process after another (a CI job, a benchmark): the average says one core, nothing runs now
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 1.0, 1.0))
    monkeypatch.setattr(parallel, "runnable_now", lambda: 0)
    assert parallel.available_workers() == 2
    monkeypatch.setattr(parallel, "runnable_now", lambda: 1)  # the other core is taken now
    assert parallel.available_workers() == 1
    # a burst that the average has not seen yet still leaves the idle core counted idle
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 1.0, 1.0))
    monkeypatch.setattr(parallel, "runnable_now", lambda: 5)
    assert parallel.available_workers() == 2


def test_the_instant_reading_leaves_this_process_out(monkeypatch, tmp_path):
    import builtins

    real_open = builtins.open
    fake = tmp_path / "loadavg"
    fake.write_text("0.52 0.58 0.59 1/467 28110\n")
    monkeypatch.setattr(builtins, "open", lambda path, *a, **k: real_open(fake if path == "/proc/loadavg" else path, *a, **k))
    assert parallel.runnable_now() == 0
    fake.write_text("3.10 2.00 1.00 4/467 28110\n")
    assert parallel.runnable_now() == 3
    fake.write_text("garbage\n")
    assert parallel.runnable_now() is None


def test_the_command_line_reports_the_same_with_any_number_of_jobs(tmp_path):
    import subprocess

    from tests.conftest import CLI
    from tests.bot.commands.test_seed_pr import write

    write(tmp_path / "miles", awkward_tree())
    runs = [subprocess.run([CLI, "check", "--repo", str(tmp_path / "miles"), "--format", "json", "--no-cache", "-j", jobs],
                           capture_output=True, text=True) for jobs in ("1", "3")]
    assert runs[0].returncode == runs[1].returncode == 1
    assert runs[0].stdout == runs[1].stdout and '"REG001"' in runs[0].stdout
    bad = subprocess.run([CLI, "check", "--repo", str(tmp_path / "miles"), "-j", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
