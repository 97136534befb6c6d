"""The calibration policy's pure parts, one behaviour a test (bench/mutation.py measures them):
checks/calibration/policy.py and the verdict maths of checks/calibration/estimates.py."""

from __future__ import annotations

import functools
import math
from datetime import date, datetime, timedelta, timezone

import pytest
from msgspec.structs import replace

from checks.calibration import policy as cal
from checks.calibration import estimates as dur
from checks.config.schema import Calibration
from checks.model import Backend, Registration
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import miles_tree, test_file

P = Calibration()
NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)
F = "tests/e2e/megatron/test_qwen3_4B_ppo.py"


@functools.lru_cache(maxsize=None, typed=True)  # one scan per distinct registration: the mutation bench runs this file often
def reg(est_time=800, suite="nightly-stage-c-8-gpu-mi350", extra="", backend="rocm") -> Registration:
    from checks.engine import check_tree

    tree = miles_tree(**{F: test_file(f'register_{backend}_ci(est_time={est_time}, suite="{suite}", labels=["megatron"]{extra})')})
    (r,) = [r for r in check_tree(MemoryTree(tree), fixes=False).registrations if r.file == F and r.backend.value == backend]
    return r


def rec(elapsed, *, days=1.0, outcome="PASS", hardware="MI355X", **extra):
    out = {"repository": "radixark/miles", "file": F, "backend": "rocm", "hardware": hardware, "elapsed_s": elapsed,
           "outcome": outcome, "measured_at": (NOW - timedelta(days=days)).isoformat()}
    out.update(extra)
    return out


def win(records, params=P, **kw):
    return cal.build_windows(records, params, now=NOW, **kw).get((F, Backend.ROCM))


# -- checks/calibration/estimates.py: bounds, statistics, rounding, the verdict ------------------------------


def test_elapsed_bounds_are_zero_open_and_seven_days_closed():
    assert dur.MAX_ELAPSED_S == 604800
    assert dur.elapsed_problem(604800) is None and dur.elapsed_problem(0.001) is None
    assert "outside" in dur.elapsed_problem(604800.5) and "outside" in dur.elapsed_problem(0)
    assert "outside" in dur.elapsed_problem(-1)
    assert "finite" in dur.elapsed_problem(math.inf) and "finite" in dur.elapsed_problem(math.nan)
    assert "not a number" in dur.elapsed_problem("ten") and "not a number" in dur.elapsed_problem(None)
    assert dur.elapsed_problem("12") is None
    assert dur.elapsed_problem(0, "timeout_after").startswith("timeout_after=0s")


def test_percentiles_interpolate_like_numpy():
    assert dur.percentile([1, 2, 3, 4], 0.5) == 2.5
    assert dur.percentile([10, 20], 0.9) == 19
    assert dur.percentile([7], 0.9) == 7
    with pytest.raises(ValueError):
        dur.percentile([], 0.5)
    assert dur.duration_stats([3, 1, 2]) == (3, 2, 2.8, 3)
    assert dur.duration_stats([]) == (0, None, None, None)


def test_rounding_up_and_the_suggestion():
    assert dur._round_up(1000 * 1.15, 10) == 1150  # not 1160: binary noise ignored
    assert dur._round_up(1151, 10) == 1160 and dur._round_up(1150, 10) == 1150
    assert dur._round_up(7.2, 0) == 8  # a step below 1 is 1
    assert dur.suggest_est_time(100, 1.15, 10) == 120  # 115 -> 120
    assert dur.suggest_est_time(100, 1.15, 10, slowest=300, max_margin=1.05) == 320
    assert dur.suggest_est_time(100, 1.15, 10, slowest=50, max_margin=1.05) == 120
    assert dur.suggest_est_time(100) == 120 and dur.suggest_est_time(100, slowest=200) == 200  # the defaults: 1.15, 10 s, 1.0


def test_the_runner_timeout_of_each_model():
    from checks.target.timeout_model import SGLANG

    assert dur.runner_timeout(1000) == 1800 and dur.runner_timeout(2000) == 2500
    assert dur.runner_timeout(2000, 3000) == 3000
    assert dur.runner_timeout(2000, 1800, SGLANG) == 3800 and dur.runner_timeout(4000, 1800, SGLANG) == 6000


def v(est, values_or_stats, params=P, **kw):
    st = dur.duration_stats(values_or_stats) if isinstance(values_or_stats, list) else values_or_stats
    return dur.calibrate(est, st, params, **kw)


def test_too_few_runs_is_reg021_with_what_is_known():
    c = v(800, [])
    assert (c.kind, c.rule, c.severity, c.suggested) == (dur.INSUFFICIENT, "REG021", "notice", None)
    assert c.message == "no stored passing durations on MI355X for est_time 800 s"
    c = v(800, [900], since="2026-11-02")
    assert "rests on a single run on MI355X since 2026-11-02 (900 s); 3 passing runs are needed" in c.message
    c = v(800, [900, 950])
    assert c.message.startswith("only 2 passing runs on MI355X (p90 945 s, max 950 s); 3 are needed to calibrate est_time 800 s")
    c = v(1000, [2000, 2100])
    assert "already exceeds the runner's timeout 1800 s" in c.message
    assert "exceeds" not in v(1000, [1700, 1800]).message
    est = dur.OtherBackendEstimate(640, 0.8, 4)
    c = v(800, [], other_estimate=est)
    assert c.suggested == 640 and "x 0.80 (median over 4 files with both) it would be about 640" in c.message
    assert v(800, [1, 2], replace(P, min_samples=2)).kind == dur.OVER  # 2 runs are enough when configured


def test_the_verdicts_with_enough_runs():
    ok = v(800, [650, 700, 690, 720, 710])
    assert (ok.kind, ok.rule, ok.suggested) == (dur.OK, None, None) and ok.message.endswith("est_time 800 s fits")
    under = v(600, [650, 700, 690, 720, 710], since=date(2026, 11, 2))
    assert (under.kind, under.severity, under.suggested) == (dur.UNDER, "warning", 830)
    assert under.message == ("p90 716 s over 5 passing runs on MI355X since 2026-11-02; est_time 600 s is "
                             "under-estimated; suggest 830")
    over = v(2000, [650, 700, 690, 720, 710])
    assert (over.kind, over.suggested) == (dur.OVER, 830) and "= 1074 s" in over.message
    assert v(1074, [650, 700, 690, 720, 710]).kind == dur.OK  # the ceiling itself is not over
    assert v(1075, [650, 700, 690, 720, 710]).kind == dur.OVER
    kept = v(2000, [650, 700, 690, 720, 710], timeouts=1)
    assert (kept.kind, kept.rule, kept.suggested) == (dur.NOT_LOWERED, None, None) and "1 run timed out" in kept.message
    # the ceiling is max(1.5 x p90, p90 + 120): for a short file the slack decides
    assert v(250, [100, 100, 100]).kind == dur.OVER and v(220, [100, 100, 100]).kind == dur.OK
    assert v(950, [100, 100, 100], slowest=900).kind == dur.OK  # the slowest run's bound (945 -> 950) is not over
    assert v(960, [100, 100, 100], slowest=900).kind == dur.OVER


def test_a_pass_past_the_runners_limit_fails_and_a_kill_at_the_limit_raises():
    c = v(2400, [2500, 2600, 2700, 3300])
    assert (c.kind, c.severity) == (dur.EXCEEDS_TIMEOUT, "failure") and c.suggested * 1.25 >= 3300
    assert "exceeds the runner's timeout of 3000 s for est_time 2400 s (max(1800, 1.25 x est_time))" in c.message
    assert c.suggested == 3590  # p90 3120 x 1.15 = 3588 -> 3590 (above 3300 x 1.05 and the max / 1.25 bound 2640)
    assert v(0.1, [0.2, 0.2, 0.2], replace(P, round_to_s=1)).suggested == 1  # no slowest given: the window's max
    # est_time 1500 (limit 1875 s), a 2001.2 s pass: 1601 gives int(2001.25) = 2001 < 2001.2, so 1602
    c = v(1500, [100] * 9 + [2001.2], replace(P, margin=1.0, max_margin=0.5, round_to_s=1))
    assert c.suggested == 1602
    # sglang's model: est_time 1000 (limit 2800 s), a 6000 s pass needs 4000 (max(6000, 5800)), not 4200
    c = v(1000, [100] * 9 + [6000], replace(P, margin=1.0, max_margin=0.1, timeout_factor=1.5, timeout_slack_s=1800))
    assert (c.kind, c.suggested) == (dur.EXCEEDS_TIMEOUT, 4000) and "(max(1.5 x est_time, est_time + 1800 s))" in c.message
    c = v(1000, [100] * 9 + [3000], replace(P, margin=1.0, max_margin=0.1, timeout_factor=1.5, timeout_slack_s=1800))
    assert c.suggested == 1200  # 3000 - 1800
    c = v(2000, [2000] * 9 + [3300], replace(P, margin=1.0, max_margin=0.5))
    assert c.suggested == 2640 and int(1.25 * c.suggested) >= 3300  # the max / 1.25 bound alone
    k = v(2000, [1700, 1710, 1720], timed_out_at=2500)
    assert (k.kind, k.severity, k.suggested) == (dur.EXCEEDS_TIMEOUT, "warning", 2630)  # 2500 x 1.05
    assert v(1000, [100, 110, 120], timed_out_at=1800).kind == dur.OVER  # the floor killed it, not est_time
    assert v(2000, [1700, 1710, 1720], timed_out_at=2499).kind == dur.OK  # below the limit: not the limit it hit
    assert v(1440, [1000, 1000, 1000], timed_out_at=1800).kind == dur.EXCEEDS_TIMEOUT  # 1.25 x 1440 = 1800
    c = v(1000, [1000, 1000, 2000], replace(P, round_to_s=1))
    assert c.suggested == 2100 and dur.runner_timeout(c.suggested) >= 2000


def test_params_come_from_a_mapping_or_defaults():
    assert dur._param(None, "margin") == 1.15 and dur._param({"margin": 2}, "margin") == 2
    assert dur._param({}, "margin") == 1.15 and dur._param(object(), "margin") == 1.15
    assert dur._stats_of({"n": 3, "median": 1, "p90": 2, "max": 3}) == (3, 1, 2, 3)
    assert dur._stats_of(None) == (0, None, None, None)
    assert dur._stats_of({"n": 0}).n == 0 and dur._stats_of({}).n == 0
    assert dur._s(None) == "?" and dur._s(12.6) == "13"
    assert dur._since_date("2026-11-02T10:00:00Z") == date(2026, 11, 2) and dur._since_date("") is None
    assert dur._since_date(datetime(2026, 1, 2, 3)) == date(2026, 1, 2)


def test_the_other_backend_estimate():
    assert dur.estimate_from_other_backend(100, [(50, 100), (60, 100)]) is None
    e = dur.estimate_from_other_backend(100, [(50, 100), (60, 100), (80, 100), (0, 100), (10, 0)])
    assert e == (60, 0.6, 3)  # zero durations and zero est_times are not ratios
    assert dur.estimate_from_other_backend(100, [(50, 100), (60, 100)], min_pairs=2).est_time == 60
    assert dur.estimate_from_other_backend(100, [(50, 0.5), (0.5, 1)], min_pairs=2).pairs == 2  # under 1 s is a ratio


# -- checks/calibration/policy.py: whose runs, the window, the decision ---------------------------------


def test_whose_code_a_run_ran():
    o = cal.origin_of
    assert o({"source": "on-demand:7"}) == cal.ON_DEMAND
    assert o({"event": "pull_request"}) == cal.PR_HEAD and o({"event": "pull_request_target"}) == cal.PR_HEAD
    assert o({}) == cal.MERGED  # no provenance: an older export
    assert o({"event": "push", "head_branch": "main"}, branch="main") == cal.MERGED
    assert o({"event": "push", "head_branch": "feature/x"}, branch="main") == cal.OTHER_BRANCH
    assert o({"event": "push"}, branch="main") == cal.OTHER_BRANCH
    assert o({"event": "schedule"}, branch="main") == cal.MERGED  # GitHub schedules on the default branch only
    assert o({"event": "workflow_dispatch", "head_branch": "main"}, branch="main") == cal.OTHER_EVENT
    assert o({"event": "workflow_dispatch", "head_branch": "main"}, ["workflow_dispatch"], "main") == cal.MERGED
    assert o({"event": "push", "head_branch": "x"}) == cal.MERGED  # no default branch known: any branch
    assert o({"event": "push", "head_branch": "main", "repository": "a/b", "head_repository": "evil/b"}, branch="main") == cal.FORK
    assert o({"event": "push", "head_branch": "main", "repository": "a/b", "head_repository": "A/B"}, branch="main") == cal.MERGED


def test_a_runs_link():
    assert cal.run_url({"run_id": 5, "repository": "a/b"}) == "https://github.com/a/b/actions/runs/5"
    assert cal.run_url({"run_id": 5, "repository": "a/b", "source": "workflow_run:c/d"}) == "https://github.com/c/d/actions/runs/5"
    assert cal.run_url({"run_id": 0, "repository": "a/b"}) is None and cal.run_url({"run_id": 5}) is None


def test_the_window_is_the_newest_runs_not_the_slowest():
    newest_fast = [rec(100 + i, days=1 + i / 24) for i in range(10)]
    older_slow = [rec(900 + i, days=5 + i / 24) for i in range(5)]
    w = win(newest_fast + older_slow)
    assert w.passing == tuple(100 + i for i in range(10))  # newest first
    assert w.slowest == 904 and w.since == (NOW - timedelta(days=1 + 9 / 24)).date()
    assert win(newest_fast, replace(P, window_runs=3)).passing == (100, 101, 102)


def test_the_window_bounds_in_days():
    w = win([rec(100, days=29.9), rec(200, days=30.1), rec(300, days=89.9), rec(400, days=90.1), rec(50, days=-1)])
    assert w.passing == (100,) and w.slowest == 300
    assert win([rec(100, days=1), rec(700, days=90)]).slowest == 700  # exactly floor_days old: still in
    assert win([rec(100, days=30)]).passing == (100,)  # exactly window_days old: still in
    w = win([rec(100, days=29.9), rec(300, days=40)], replace(P, floor_days=10))  # floor_days at least window_days
    assert w.slowest == 100
    t = win([rec(100, days=1), rec(1800, days=40, outcome="TIMEOUT", timeout_after_s=1700),
             rec(1900, days=95, outcome="TIMEOUT"), rec(600, days=2, outcome="FAIL")])
    assert (t.timeouts, t.timed_out_at) == (1, 1700)  # remembered 90 days, its limit, not its elapsed
    assert win([rec(1800, days=3, outcome="TIMEOUT")]).timed_out_at == 1800


def test_what_the_window_leaves_out():
    assert win([rec(100, hardware="MI300X")]) is None
    assert win([rec(100, hardware="mi355x ")]).passing == (100,)  # names compare case-insensitively
    assert win([rec(100, backend="nonsense")]) is None
    assert win([rec(100, repository="other/repo")], repository="radixark/miles") is None
    assert win([rec(100)], repository="radixark/miles").passing == (100,)
    assert win([rec(0), rec(math.inf), rec("nan"), rec(604801), rec(5)]).passing == (5,)  # a 0 s p90 makes nothing free
    w = win([rec(100), rec(900, event="push", head_branch="feature"), rec(900, days=40, event="pull_request")],
            default_branch="main")
    assert (w.passing, w.excluded, w.slowest) == ((100,), 1, 100)
    assert win([rec(900, event="push", head_branch="feature")], replace(P, include_unmerged=True),
               default_branch="main").passing == (900,)
    assert win([rec(900, event="push", head_branch="rel")], replace(P, branch="rel"), default_branch="main").passing == (900,)
    assert win([rec(100, measured_at=None)]).passing == (100,)  # undated: now
    assert win([rec(100, measured_at="2026-11-29T00:00:00.1234567Z")]).since == date(2026, 11, 29)
    # the newest run by the microsecond (Actions' stamps carry 7 digits; the 6th counts)
    close = [rec(100, measured_at="2026-11-29T00:00:00.0000011Z"), rec(200, measured_at="2026-11-29T00:00:00.0000091Z")]
    assert win(close, replace(P, window_runs=1)).passing == (200,)
    assert cal.build_windows([rec(7, backend="amd")], P, now=NOW)[(F, Backend.ROCM)].passing == (7,)  # sglang's amd
    assert win([rec(7, backend=None)]).passing == (7,)


def test_windows_from_rows_and_back():
    w = win([rec(100 + i, days=1 + i, run_id=10 + i) for i in range(4)])
    rows = cal.stats_rows({(F, Backend.ROCM): w}, "MI355X")
    (row,) = rows
    assert (row["n"], row["values"], row["hardware"], row["slowest_run"]) == (4, [100, 101, 102, 103], "MI355X",
                                                                             "https://github.com/radixark/miles/actions/runs/13")
    back = cal.windows_from_stats(rows, "mi355x")[(F, Backend.ROCM)]
    assert back.passing == w.passing and back.since == w.since and back.slowest_run == w.slowest_run
    assert cal.windows_from_stats(rows, "MI300X") == {}
    timed = cal.windows_from_stats([{**row, "since": "2026-11-02T10:00:00Z"}], "MI355X")[(F, Backend.ROCM)]
    assert timed.since == date(2026, 11, 2)
    two = cal.stats_rows({(F, Backend.ROCM): w, ("z/last.py", Backend.CPU): w, ("a/first.py", Backend.ROCM): w}, "MI355X")
    assert [r["file"] for r in two] == ["a/first.py", F, "z/last.py"]  # by file first, whatever the backend
    assert cal.windows_from_stats([{**row, "values": None}], "MI355X") == {}
    assert cal.stats_rows({(F, Backend.ROCM, "MI300X"): w})[0]["hardware"] == "MI300X"
    given = cal.Window((), given=dur.DurationStats(5, 1, 2, 3))
    assert given.stats.n == 5 and cal.Window((4.0,), given=dur.DurationStats(5, 1, 2, 3)).stats.n == 1


def test_the_hardware_of_a_suite():
    assert cal.calibration_hardware(P) == ["MI355X", "MI300X"]
    assert cal.calibration_hardware(replace(P, hardware="mi300x")) == ["mi300x", "MI355X"]
    assert cal.hardware_for_suite("stage-b-test-1-gpu-small-amd-MI35X", P) == "MI355X"
    assert cal.hardware_for_suite("nightly-stage-c-8-gpu-mi350", P) == "MI355X"
    assert cal.hardware_for_suite("x-mi30x", P) == "MI300X" and cal.hardware_for_suite(None, P) == "MI355X"
    assert cal.hardware_for_suite("plain", replace(P, hardware="H100")) == "H100"
    records = [rec(100, days=1 + i) for i in range(3)] + [rec(900, days=1 + i, hardware="MI300X") for i in range(3)]
    every = cal.build_suite_windows(records, P, now=NOW)
    assert set(every) == {(F, Backend.ROCM, "MI355X"), (F, Backend.ROCM, "MI300X")}
    assert cal.window_for(every, reg(suite="x-mi30x"), P).passing == (900,) * 3
    assert cal.window_for(every, reg(), P).passing == (100,) * 3
    assert cal.window_for({(F, Backend.ROCM): "w"}, reg(), P) == "w"
    (d,) = cal.decide_all([reg(suite="x-mi30x")], every, P)
    assert d.n == 3 and d.max == 900 and d.hardware == "MI300X"


def test_the_runners_bounds():
    from types import SimpleNamespace

    assert cal.Bounds.of(SimpleNamespace(est_time_positive=True)).minimum == 1
    assert cal.Bounds.of(SimpleNamespace(est_time_positive=False)).minimum == 0
    assert cal.Bounds.of(None).minimum == 0 and cal.Bounds().minimum == 0


def test_decisions_and_their_reasons():
    full = win([rec(300 + i, days=1 + i / 24, run_id=1 + i) for i in range(10)])
    assert cal.decide(reg(backend="cuda"), full, P).reason == cal.NOT_CALIBRATED
    assert cal.decide(reg(extra=', disabled="flaky"'), full, P).reason == cal.DISABLED
    few = win([rec(300), rec(310, days=2), rec(900, event="pull_request")])
    d = cal.decide(reg(), few, P)
    assert (d.reason, d.new, d.excluded) == (cal.TOO_FEW, None, 1) and "1 run of unmerged code not counted" in d.detail
    assert "not counted" not in cal.decide(reg(), win([rec(300)]), P).detail
    none = cal.decide(reg(), None, P)
    assert (none.reason, none.timeouts, none.excluded, none.one_run, none.run, none.severity) == (cal.TOO_FEW, 0, 0, False, None, None)
    low = cal.decide(reg(est_time=100), full, P)
    assert (low.reason, low.new, low.severity, low.one_run, low.timeouts) == (cal.UNDER, 360, "warning", False, 0)
    assert cal.decide(reg(est_time=360), full, P).reason == cal.FITS
    down = cal.decide(reg(est_time=5000), full, P)
    assert (down.reason, down.new, down.changed) == (cal.OVER, 360, True)
    assert cal.decide(reg(est_time=5000.0), full, P).new == 360.0 and isinstance(cal.decide(reg(est_time=5000.0), full, P).new, float)
    assert cal.decide(reg(est_time=5000), full, P, cal.Bounds(400)).new == 400
    assert cal.decide(reg(est_time=400), full, P, cal.Bounds(400)).reason == cal.FITS
    assert cal.decide(reg(est_time="EST"), full, P).reason == cal.NOT_LITERAL
    over = cal.decide(reg(est_time=500), full, P, cal.Bounds(500))  # over, but the runner's bound is 500 itself
    assert (over.reason, over.new) == (cal.FITS, None)
    # a kill at the limit raises only as far as timed_out_at x max_margin: below est_time it lowers nothing
    killed_low = cal.Window((1000.0,) * 10, timeouts=1, timed_out_at=2500)
    d = cal.decide(reg(est_time=2000), killed_low, replace(P, margin=1.0, max_margin=0.5))
    assert (d.reason, d.new) == (cal.TIMEOUT_IN_WINDOW, None)
    part = win([rec(300 + i, days=1 + i) for i in range(9)])
    assert cal.decide(reg(est_time=5000), part, P).reason == cal.WINDOW_NOT_FULL
    killed = win([rec(300 + i, days=1 + i / 24) for i in range(10)] + [rec(1800, days=40, outcome="TIMEOUT")])
    assert cal.decide(reg(est_time=5000), killed, P).reason == cal.TIMEOUT_IN_WINDOW
    assert cal.decide(reg(est_time=5000), killed, P, cal.Bounds(1)).reason == cal.TIMEOUT_IN_WINDOW


def test_a_raise_one_run_drives_is_labelled():
    values = [180, 200, 220, 190, 210, 205, 195, 215, 5000, 185]
    w = win([rec(v, days=1 + i / 24, run_id=100 + i, source="workflow_run:radixark/miles") for i, v in enumerate(values)])
    d = cal.decide(reg(est_time=500), w, P)
    assert (d.new, d.one_run, d.run) == (5250, True, "https://github.com/radixark/miles/actions/runs/108")
    plain = win([rec(v, days=1 + i / 24, run_id=100 + i) for i, v in enumerate([300] * 10)])
    d = cal.decide(reg(est_time=100), plain, P)
    assert (d.new, d.one_run, d.run) == (350, False, None)  # 300 x 1.15 = 345: the p90 sets it
    tie = win([rec(v, days=1 + i / 24) for i, v in enumerate([290] * 9 + [320])])
    d = cal.decide(reg(est_time=100), tie, P)  # p90 293 x 1.15 and 320 x 1.05 both round to 340: not one run
    assert (d.new, d.one_run) == (340, False)


def test_the_plan_as_json():
    full = win([rec(300 + i, days=1 + i / 24) for i in range(10)])
    plan = cal.Plan(cal.decide_all([reg(est_time=100)], {(F, Backend.ROCM): full}, P))
    data = plan.as_json()
    (change,) = data["changes"]
    assert change == {"file": F, "line": 3, "backend": "rocm", "suite": "nightly-stage-c-8-gpu-mi350", "hardware": "MI355X",
                      "old": 100, "new": 360, "n": 10, "p90": 308.1, "max": 309, "reason": "under-estimated"}
    plan = cal.Plan(cal.decide_all([reg(est_time=360)], {(F, Backend.ROCM): full}, P))
    assert plan.changes == [] and plan.as_json()["unchanged"][0]["why"].endswith("fits")
    assert cal.decide_all([reg(backend="cuda")], {}, P) == []


def test_the_remembered_timeout_is_the_longest_killed_attempt():
    """issue 37: `max` -> `min` survived. Of several TIMEOUT attempts within floor_days, the window
    remembers the longest one (the run that got furthest before it was killed), in either order."""
    kills = [rec(1800, days=3, outcome="TIMEOUT", timeout_after_s=1700), rec(2400, days=5, outcome="TIMEOUT", timeout_after_s=2300),
             rec(1000, days=8, outcome="TIMEOUT")]
    for order in (kills, list(reversed(kills))):
        t = win([rec(100, days=1), *order])
        assert (t.timed_out_at, t.timeouts) == (2300, 3)


def test_rows_of_one_file_on_several_models_are_ordered_by_model():
    w = win([rec(100, days=1)])
    rows = cal.stats_rows({(F, Backend.ROCM, "MI355X"): w, (F, Backend.ROCM, "MI300X"): w})
    assert [r["hardware"] for r in rows] == ["MI300X", "MI355X"]  # the same order whatever the windows' order


def test_windows_are_judged_as_of_now_when_no_time_is_given():
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    recent = {**rec(100), "measured_at": now.isoformat()}
    windows = cal.build_windows([recent], P)  # no `now`: the current time
    assert list(windows.values())[0].passing == (100,)


def test_a_raise_one_run_drives_is_labelled_without_the_windows_slowest():
    """A window read from statistics rows may lack `slowest`: the window's own maximum is the run
    that drives the raise."""
    w = cal.Window((1500.0, 1000.0, 1100.0, 900.0, 1000.0))
    assert w.slowest is None
    d = cal.decide(reg(est_time=800), w, P)
    assert d.changed and d.new == 1580 and d.one_run


def test_windows_on_every_calibration_model_from_one_pass_over_the_records():
    models = cal.calibration_hardware(P)
    assert len(models) >= 2  # MI355X and the models some suites name
    records = [rec(100, hardware=m) for m in models]
    windows = cal.build_suite_windows(iter(records), P, now=NOW)  # a generator, as an export streams them
    assert sorted(k[2] for k in windows) == sorted(models)


# -- issue 37, seed 41 ------------------------------------------------------------------------------------
def test_decisions_come_in_file_and_line_order_whatever_order_the_registrations_came_in():
    from checks.engine import check_tree

    regs = check_tree(MemoryTree(miles_tree()), fixes=False).registrations
    calibrated = [r for r in regs if not r.implicit and r.backend.family in cal.CALIBRATED_FAMILIES]
    assert len({r.file for r in calibrated}) > 1
    ordered = sorted(calibrated, key=lambda r: (r.file, r.span.line, r.span.column))
    for given in (list(reversed(regs)), sorted(regs, key=lambda r: -r.span.line), regs):
        decisions = cal.decide_all(given, {}, P)
        assert [d.registration for d in decisions] == ordered


def test_a_window_cuts_the_runs_longer_than_est_time_and_counts_each_once():
    w = cal.Window((300.0, 100.0, 200.0, 200.0))
    assert [w.cut_by(t) for t in (99, 100, 199, 200, 300)] == [4, 3, 3, 1, 0]


def test_the_runners_timeout_model_is_kept_in_the_scan_cache_by_the_modules_content():
    """checks.target.timeout_model: a scan cache keeps the model read from a ci_utils module's
    content; the next read of the same content parses nothing, other content is read afresh, and an
    entry this reader did not write is read past."""
    from checks.target import timeout_model as tm

    class Cache(dict):
        def get_many(self, keys):
            return {k: self[k] for k in keys if k in self}

        def put_many(self, entries):
            self.update(entries)

    sglang = b"F = 1.5\nS = 1800.0\ndef derive_timeout_per_file(est):\n    return max(est * F, est + S)\n"
    miles = b"def f(timeout_per_file, estimated_time):\n    return max(timeout_per_file, int(estimated_time * 1.25))\n"
    cache = Cache()
    tm.read_timeout_model.cache_clear()
    first = tm.timeout_model(None, {"u/ci_utils.py": sglang}.get, "u/ci_register.py", cache)
    assert (first.factor, first.slack, first.use_floor) == (1.5, 1800.0, False) and len(cache) == 1
    assert tm.timeout_model(None, {"u/ci_utils.py": sglang}.get, "u/ci_register.py", cache) == first
    assert tm.read_timeout_model.cache_info().misses == 1  # parsed once: the second came from the cache
    other = tm.timeout_model(None, {"u/ci_utils.py": miles}.get, "u/ci_register.py", cache)
    assert (other.factor, other.use_floor) == (1.25, True) and len(cache) == 2
    for key in cache:
        cache[key] = {"model": ["not", "a", "model"]}  # not what this reader writes
    assert tm.timeout_model(None, {"u/ci_utils.py": sglang}.get, "u/ci_register.py", cache) == first
    assert tm.timeout_model(None, {"u/ci_utils.py": b"x = 1\n"}.get, "u/ci_register.py", cache) is tm.MILES
