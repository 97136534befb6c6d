"""checks/target/run_cost.py's own fast tests (with bot/ondemand/cost.py's cost_selection): what a /run-rocm selection is charged (the most the
dispatched job lets each file run), from its run plan's limits. The flow's tests (tests/
test_ondemand_flow.py, tests/bot/ondemand/test_ondemand_security.py) charge real selections end to end."""

from __future__ import annotations

from types import SimpleNamespace

import pytest


# -- the cost function itself (bot/ondemand/cost.py) ---------------------------------------------------
# miles' runner: each file may run max(1800, 1.25 x est_time); the GPU job's limit is 360 minutes.
@pytest.mark.parametrize("ests, seconds, basis", [
    ([300], 1800, "per-file timeout"),  # a short file still holds its GPUs for the whole per-file timeout
    ([2000], 2500, "per-file timeout"),  # 1.25 x est_time
    ([300, 200], 3600, "per-file timeout"),  # two registrations of one file in the suite: each its timeout
    ([1e-9], 1800, "per-file timeout"),  # the attack of issue 23: a tiny est_time is no cheaper
    ([0.001], 1800, "per-file timeout"),
    ([1], 1800, "per-file timeout"),
    ([-100000], 1800, "per-file timeout"),
    ([0], 1800, "per-file timeout"),
    ([None], 21600, "job timeout"),  # not a number: the job's limit
    ([float("nan")], 21600, "job timeout"),
    ([float("inf")], 21600, "job timeout"),
    ([float("-inf")], 21600, "job timeout"),
    ([10**400], 21600, "job timeout"),
    (["1e-9"], 1800, "per-file timeout"),  # a number as text counts as that number
    (["fast"], 21600, "job timeout"),
    ([True], 21600, "job timeout"),  # a bool is not an est_time
    ([30000], 21600, "job timeout"),  # 37,500 s: the job ends first
    ([17280], 21600, "job timeout"),  # exactly the job's limit
    ([17279], 21598, "per-file timeout"),  # int(1.25 x 17279) = 21598: one below
    ([300, -5], 3600, "per-file timeout"),  # one bad registration does not hide behind a good one
    ([8640, 8640], 21600, "job timeout"),  # two registrations of 10,800 s each: exactly the job's limit
    ([17000, 17000], 21600, "job timeout"),  # 21,250 s each: together past the job's limit
])
def test_a_file_is_charged_the_most_the_job_lets_it_run(ests, seconds, basis):
    from checks.target.run_cost import Limits, cost_files, gpu_hours

    costing = cost_files({"tests/e2e/test_x.py": ests}, 4, est_time_positive=False, limits=Limits(1800, 21600))
    [f] = costing.files
    assert (f.seconds, f.basis) == (seconds, basis)
    assert costing.seconds == seconds and costing.gpu_hours == gpu_hours(seconds, 4) > 0
    assert costing.as_details() == [["tests/e2e/test_x.py", seconds, basis]]  # what the request keeps
    [note] = costing.notes()  # the reply shows every file's basis
    assert note.startswith("`tests/e2e/test_x.py`: ") and f"charged {seconds:g} s" in note
    assert ("the runner's per-file timeout" if basis == "per-file timeout" else "the GPU job's timeout") in note
    if basis == "per-file timeout":
        assert "max(1800 s, 1.25 \u00d7 est_time)" in note and "attempts" not in note


@pytest.mark.parametrize("est", [1e-9, 0.001, 1, 89, 90, 1439, 1440, 1441, 5000, 17279, 17280, 10**6, -1, 0,
                                 float("nan"), float("inf"), None])
def test_no_est_time_makes_a_file_cheaper_than_what_it_may_run(est):
    from checks.target.run_cost import Limits, cost_files

    limits = Limits(1800, 21600)
    [f] = cost_files({"t.py": [est]}, 4, est_time_positive=False, limits=limits).files
    may_run = 21600 if est is None or est != est or est in (float("inf"),) else min(21600, max(1800, int(1.25 * est)))
    assert f.seconds >= may_run >= 1800


def test_the_limits_come_from_the_run_plan():
    from checks.target.run_cost import MAX_FILE_S, Limits
    from checks.target.dispatch_plan import RunPlan

    def run(**kw):
        base = dict(suite="s", runs_on=("x",), runner_gpus=4, shards=1, image="", image_days=0,
                    timeout_per_file_s=900, job_timeout_min=120, runner_flags=())
        return RunPlan(**{**base, **kw})

    assert Limits.of(run()) == Limits(900, 7200, 1, 0)
    assert Limits.of(run(job_timeout_min=0)).job_timeout_s == MAX_FILE_S
    assert Limits.of(run(job_timeout_min=-5)).job_timeout_s == MAX_FILE_S
    assert Limits.of(run(job_timeout_min=361)).job_timeout_s == MAX_FILE_S  # GitHub's own limit
    assert Limits.of(run(job_timeout_min=360)).job_timeout_s == MAX_FILE_S
    assert Limits.of(run(job_timeout_min=359)).job_timeout_s == 359 * 60
    retry = Limits.of(run(runner_flags=("--enable-retry",)))
    assert (retry.attempts, retry.retry_increase_s) == (2, 600)  # the runner's defaults
    retry = Limits.of(run(runner_flags=("--enable-retry", "--max-attempts", "3", "--retry-timeout-increase=60")))
    assert (retry.attempts, retry.retry_increase_s) == (3, 60)
    retry = Limits.of(run(runner_flags=("--enable-retry", "--max-attempts", "x", "--retry-timeout-increase")))
    assert (retry.attempts, retry.retry_increase_s) == (2, 600)  # unreadable: the defaults
    retry = Limits.of(run(runner_flags=("--enable-retry", "--max-attempts=0", "--retry-timeout-increase", "-9")))
    assert (retry.attempts, retry.retry_increase_s) == (1, 0)
    assert Limits.of(run(runner_flags=("--max-attempts", "3"))).attempts == 1  # no retry without --enable-retry


@pytest.mark.parametrize("ests, shown", [([300], "est_time=300"), ([300, 200], "est_time=500"),
                                         ([None], "not a number"), ([300, None], "not a number")])
def test_the_note_shows_the_est_time_as_registered(ests, shown):
    from checks.target.run_cost import Limits, cost_files

    [note] = cost_files({"t.py": ests}, 4, est_time_positive=False, limits=Limits()).notes()
    assert note.startswith(f"`t.py`: {shown}, charged ")


def test_the_limits_defaults_and_edges():
    from checks.target.run_cost import JOB, MAX_FILE_S, TIMEOUT, Limits
    from checks.target.dispatch_plan import RunPlan

    assert MAX_FILE_S == 21600  # GitHub's 360 minutes
    assert Limits() == Limits(1800, 21600, 1, 0)  # miles' runner default, GitHub's job limit
    base = dict(suite="s", runs_on=("x",), runner_gpus=4, shards=1, image="", image_days=0, timeout_per_file_s=900,
                runner_flags=())
    assert Limits.of(RunPlan(**base, job_timeout_min=1)).job_timeout_s == 60
    assert Limits.of(RunPlan(**{**base, "runner_flags": ("--enable-retry", "--max-attempts=3=4")},
                             job_timeout_min=60)).attempts == 2  # unreadable: the default
    short = Limits(1800, 3600)
    assert short.per_file(2879) == (3598.0, TIMEOUT)
    assert short.per_file(2880) == (3600.0, JOB)  # exactly the job's limit
    assert short.per_file(3000) == (3600.0, JOB)
    assert short.per_file(None) == (3600.0, JOB)
    # sglang's --timeout-from-est-time: each file may run max(1.5 x est, est + 1800), past the flat floor
    derived = Limits.of(RunPlan(**{**base, "runner_flags": ("--timeout-from-est-time",)}, job_timeout_min=360))
    assert derived.from_est_time and not Limits.of(RunPlan(**base, job_timeout_min=360)).from_est_time
    assert derived.per_file(3600) == (5400.0, TIMEOUT)  # 1.5 x 3600; miles' formula would say 4500
    assert derived.per_file(600) == (2400.0, TIMEOUT)  # 600 + 1800
    assert derived.per_file(1) == (1801.0, TIMEOUT)
    from checks.target.run_cost import FileCost as _FileCost

    assert _FileCost("t.py", 3600, 5400.0, TIMEOUT).note(derived).endswith(
        "max(900 s, 1.25 \u00d7 est_time, 1.5 \u00d7 est_time, est_time + 1800 s)")
    from checks.target.run_cost import FileCost

    job = FileCost("t.py", None, 21600.0, JOB)
    assert job.note(Limits()) == ("`t.py`: not a number, charged 21600 s, the GPU job's timeout "
                                  "(360 min, the most any file can run)")
    assert job.note() == "`t.py`: not a number, charged 21600 s, the GPU job's timeout (the most any file can run)"
    timeout = FileCost("t.py", 90, 1800.0, TIMEOUT)
    assert timeout.note() == "`t.py`: est_time=90, charged 1800 s, the runner's per-file timeout for it"
    assert timeout.note(Limits(900, 3600, 2, 60)) == ("`t.py`: est_time=90, charged 1800 s, the runner's per-file "
                                                      "timeout for it, max(960 s, 1.25 \u00d7 est_time) \u00d7 2 attempts")


def test_retries_multiply_and_the_job_caps_the_charge():
    from checks.target.run_cost import Limits, cost_files

    retry = Limits(1800, 21600, attempts=3, retry_increase_s=600)
    [f] = cost_files({"t.py": [300]}, 4, est_time_positive=False, limits=retry).files
    assert (f.seconds, f.basis) == (3 * 2400, "per-file timeout")  # each attempt max(1800 + 600, 375)
    assert "\u00d7 3 attempts" in f.note(retry) and "max(2400 s" in f.note(retry)
    short = Limits(1800, 3600)
    costing = cost_files({"a.py": [1], "b.py": [1], "c.py": [1]}, 4, est_time_positive=False, limits=short)
    assert [f.seconds for f in costing.files] == [1800, 1800, 1800]
    assert costing.seconds == 3600  # one runner holds its GPUs for the job's hour at most
    sharded = cost_files({"a.py": [1], "b.py": [1], "c.py": [1]}, 4, est_time_positive=False, limits=short, shards=2)
    assert sharded.seconds == 2 * 3600  # the longest shard (two files) is capped, x 2 runners
    wide = cost_files({"a.py": [1], "b.py": [1], "c.py": [1]}, 4, est_time_positive=False,
                      limits=Limits(1800, 21600), shards=2)
    assert wide.seconds == 2 * 3600 and wide.gpu_hours == 8.0
    assert cost_files({}, 4, est_time_positive=False, limits=short).seconds == 0


@pytest.mark.parametrize("ests", [[-1], [0], [None], [300, 0], [float("nan")], ["fast"]])
def test_an_est_time_the_runner_rejects_refuses_the_command(ests):
    from checks.target.run_cost import Limits, cost_files

    costing = cost_files({"tests/e2e/test_x.py": ests}, 4, est_time_positive=True, limits=Limits())
    assert costing.refusal and "which the runner rejects" in costing.refusal and costing.files == []


# -- issue 37: the entry point, pinned here rather than only by the slow flow files ---------------------
def _plan(**kw):
    from checks.target.dispatch_plan import RunPlan

    base = dict(suite="s", runs_on=("x",), runner_gpus=4, shards=1, image="", image_days=0, timeout_per_file_s=1800,
                job_timeout_min=360, runner_flags=())
    return RunPlan(**{**base, **kw})


def _selection(ests: dict[str, list], plan, gpus: int = 4):
    regs = [SimpleNamespace(file=f, est_time=e) for f, es in ests.items() for e in es]
    return SimpleNamespace(registrations=regs, gpus=gpus, plan=plan)


def test_a_selection_is_costed_under_its_plans_limits_and_shards():
    from checks.target.run_cost import Limits
    from bot.ondemand.cost import cost_selection

    costing = cost_selection(_selection({"a.py": [300, 200], "b.py": [2000]}, _plan(shards=2, job_timeout_min=120)),
                             SimpleNamespace(est_time_positive=False))
    assert [(f.file, f.est_time, f.seconds) for f in costing.files] == [("a.py", 500, 3600.0), ("b.py", 2000, 2500.0)]
    assert costing.shards == 2 and costing.limits == Limits(1800, 7200) and costing.gpus == 4
    assert costing.seconds == 2 * 3600 and costing.gpu_hours == 8.0


@pytest.mark.parametrize("contract", [SimpleNamespace(est_time_positive=True), SimpleNamespace()])
def test_a_selection_follows_the_runners_est_time_rule(contract):
    from bot.ondemand.cost import cost_selection

    costing = cost_selection(_selection({"a.py": [0]}, _plan()), contract)
    positive = getattr(contract, "est_time_positive", False)
    assert bool(costing.refusal) == positive and (costing.files == []) == positive
    if positive:
        assert costing.refusal == ("`a.py`'s est_time is 0, which the runner rejects (est_time must be a positive number): "
                                   "fix the registration first")


def test_gpu_hours_round_up_to_the_hundredth():
    from checks.target.run_cost import gpu_hours

    assert gpu_hours(3600, 4) == 4.0 and gpu_hours(1, 1) == 0.01 and gpu_hours(0, 8) == 0.0
    assert gpu_hours(3601, 1) == 1.01  # never under-counted


def test_one_runners_charge_is_the_sum_capped_by_its_job():
    from checks.target.run_cost import Costing, FileCost, Limits, TIMEOUT

    files = [FileCost("a.py", 1, 1800.0, TIMEOUT), FileCost("b.py", 1, 1800.0, TIMEOUT)]
    assert Costing(files, 4, limits=Limits(1800, 7200)).seconds == 3600
    assert Costing(files, 4, limits=Limits(1800, 3000)).seconds == 3000
    assert Costing(files, 4, shards=0, limits=Limits(1800, 7200)).seconds == 3600  # no shard count: one runner
    assert Costing(files + [FileCost("c.py", 1, 600.0, TIMEOUT)], 4, shards=2, limits=Limits(1800, 7200)).seconds == 2 * 2400


# -- what a run plan runs: runner_selects and planned_selection (issue 37, seed 41) -------------------
def _reg(file="a.py", suite="s", backend="rocm", disabled=None, implicit=False, labels=(), nightly=False):
    from checks.model import Backend

    return SimpleNamespace(file=file, suite=suite, backend=Backend(backend), disabled=disabled, implicit=implicit,
                           labels=tuple(labels), nightly=nightly, est_time=60)


class _Policy:
    """A runner's label policy: per (cadence, match_all) the labels it selects, or None when unread."""

    where = "tests/ci/run_suite.py:10"

    def __init__(self, by_cadence):
        self.by_cadence, self.asked = by_cadence, []

    def selection(self, cadence, match_all):
        self.asked.append((cadence, match_all))
        wanted = self.by_cadence.get(cadence)
        if wanted is None:
            return None
        return SimpleNamespace(selects=lambda labels, nightly: bool(set(labels) & wanted) and not nightly)


def _target(policy=None, labels=None, options=()):
    return SimpleNamespace(label_policy=policy, contract=SimpleNamespace(labels=labels), options=options)


def test_the_plan_runs_the_suites_enabled_explicit_rocm_family_registrations():
    from checks.target.run_cost import planned_selection

    regs = [_reg("a.py"), _reg("amd.py", backend="amd"), _reg("other.py", suite="t"), _reg("cuda.py", backend="cuda"),
            _reg("off.py", disabled="flaky"), _reg("implicit.py", implicit=True), _reg("nightly.py", nightly=True)]
    chosen = planned_selection(regs, "s", _plan(), _target())
    assert [r.file for r in chosen] == ["a.py", "amd.py"]
    chosen = planned_selection(regs, "s", _plan(admit_nightly=True), _target())
    assert [r.file for r in chosen] == ["a.py", "amd.py", "nightly.py"]


def test_the_runners_label_policy_selects_for_the_plans_cadence():
    from checks.target.run_cost import planned_selection

    policy = _Policy({"regular": {"amd"}, "nightly": {"long"}})
    regs = [_reg("a.py", labels=["amd"]), _reg("long.py", labels=["long"]), _reg("none.py")]
    notes: list[str] = []
    assert [r.file for r in planned_selection(regs, "s", _plan(), _target(policy), notes)] == ["a.py"]
    assert [r.file for r in planned_selection(regs, "s", _plan(cadence="nightly", match_all_labels=True), _target(policy),
                                              notes)] == ["long.py"]
    assert policy.asked == [("regular", False), ("nightly", True)] and notes == []


def test_a_policy_that_cannot_be_read_lists_every_enabled_registration_and_says_so():
    from checks.target.run_cost import planned_selection

    regs = [_reg("a.py", labels=["amd"]), _reg("b.py"), _reg("n.py", nightly=True)]
    notes: list[str] = []
    chosen = planned_selection(regs, "s", _plan(cadence="weekly"), _target(_Policy({"regular": {"amd"}})), notes)
    assert [r.file for r in chosen] == ["a.py", "b.py"]  # the cadence alone: no nightly registration
    assert notes == ["the runner's label policy (tests/ci/run_suite.py:10) could not be read for this cadence: every "
                     "enabled registration is listed and charged; the runner may run fewer"]


def test_a_runner_that_selects_by_labels_without_a_readable_policy_is_noted():
    from checks.target.run_cost import planned_selection

    regs = [_reg("a.py"), _reg("b.py")]
    said = ("the runner selects by labels, and its policy could not be read: every enabled registration is listed and "
            "charged; the runner may run fewer")
    for target, run, expected in [
        (_target(labels={"amd"}, options=("--match-all-labels",)), _plan(), [said]),
        (_target(labels={"amd"}, options=("--match-all-labels",)), _plan(match_all_labels=True), []),  # the plan passes it
        (_target(labels=None, options=("--match-all-labels",)), _plan(), []),  # no labels: nothing to select by
        (_target(labels={"amd"}, options=("--timeout-per-file",)), _plan(), []),  # the runner takes no such option
        (_target(labels={"amd"}, options=()), _plan(), []),
    ]:
        notes: list[str] = []
        assert [r.file for r in planned_selection(regs, "s", run, target, notes)] == ["a.py", "b.py"]
        assert notes == expected, (target, run)
    # without a list for the notes, the selection is the same and nothing is raised
    assert len(planned_selection(regs, "s", _plan(), _target(labels={"amd"}, options=("--match-all-labels",)))) == 2


def test_sglangs_timeout_from_est_time_is_its_own_formula_no_floor():
    from checks.target.run_cost import Limits

    limits = Limits(1800, 21600, from_est_time=True)
    # max(1.25 x est, 1800) for miles, max(1.5 x est, est + 1800) for sglang: the larger one
    assert limits.per_file(0) == (1800.0, "per-file timeout")
    assert limits.per_file(4000) == (6000.0, "per-file timeout")
    assert limits.per_file(2000) == (3800.0, "per-file timeout")
