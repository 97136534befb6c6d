"""checks/target/dispatch_plan.py and the `dispatch:` keys behind it: where an on-demand run runs (the pool
of the job that runs it, else the fleet's runner that fits), with which of the runner's options
(read from its code), and its cost. tests/checks/target/test_fleet_plans.py has the plans of both real targets."""

from __future__ import annotations

import ast

import pytest

from checks.config.schema import Dispatch, load_config
from checks.workflows.jobs import read_suite_jobs
from checks.target.dispatch_plan import NoRunner, gpus_of_labels, partition, plan
from checks.target.runner import RunnerOption, read_runner

from tests import FIXTURES

TARGETS = FIXTURES / "targets"
MILES_RUNNER = TARGETS / "miles" / "ci-runner-778227d" / "run_suite.py"
D = Dispatch(workflow="rocm-on-demand.yml")
EIGHT = Dispatch(workflow="rocm-on-demand.yml", runs_on=["linux-mi35x-gpu-8"])


def _options(source: str):
    return read_runner("tests/ci/run_suite.py", ast.parse(source), "tests/ci/ci_register.py", None, set()).options


# The options of sglang's test/run_suite.py at 382343f (2026-08-22), as its argparse declares them.
SGLANG_RUNNER = '''
import argparse
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hw", type=str, choices=["cpu", "cuda", "amd", "npu"], required=True)
    parser.add_argument("--suite", type=str, required=True)
    parser.add_argument("--nightly", action="store_true", default=False)
    parser.add_argument("--timeout-per-file", type=int, default=1800)
    parser.add_argument("--timeout-from-est-time", action="store_true")
    parser.add_argument("--continue-on-error", action="store_true", default=False)
    parser.add_argument("--auto-partition-id", type=int)
    parser.add_argument("--auto-partition-size", type=int)
    parser.add_argument("--enable-retry", action="store_true", default=False)
    parser.add_argument("--max-attempts", type=int, default=2)
    parser.add_argument("--retry-wait-seconds", type=int, default=60)
    parser.add_argument("--retry-timeout-increase", type=int, default=600)
    parser.add_argument("--partition-model-file", type=str)
'''


# -- the runner's options, read statically ------------------------------------------------------------
def test_miles_runner_options_are_read():
    options = _options(MILES_RUNNER.read_text())
    assert {"--cadence", "--nightly", "--auto-partition-id", "--auto-partition-size", "--match-all-labels",
            "--enable-retry", "--max-attempts", "--continue-on-error", "--list-only", "--labels"} <= set(options)
    assert options["--cadence"].takes_value and not options["--nightly"].takes_value
    assert options["--cadence"].choices is None  # sorted(CI_CADENCES) is imported: not read, not guessed
    assert not options["--match-all-labels"].takes_value and options["--labels"].takes_value
    assert options["--timeout-per-file"].default == 1800  # what a file gets when the job passes none


def test_literal_choices_are_read_and_respected():
    runner = '''
import argparse
CADENCES = ("regular", "weekly")
def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cadence", choices=sorted(CADENCES))
    p.add_argument("--nightly", action="store_true")
    p.add_argument("--hw", choices=["rocm", "cuda"])
'''
    options = _options(runner)
    assert options["--cadence"].choices == ("regular", "weekly") and options["--hw"].choices == ("rocm", "cuda")
    # a value outside the runner's choices is never passed
    run = plan("nightly-x-8-gpu-mi350", Dispatch(workflow="x.yml", runs_on=["box"], runner_flags=["--cadence", "nightly"]),
               options, [])
    assert run.runner_flags == () and any("--cadence nightly" in n for n in run.notes)
    assert _options("x = 1\n") is None


def test_sglang_runner_has_no_list_only_and_gets_its_jobs_flags():
    options = _options(SGLANG_RUNNER)
    assert "--cadence" not in options and "--nightly" in options and "--list-only" not in options
    jobs = read_suite_jobs({".github/workflows/n.yml": NIGHTLY}, runner="run_suite", options=options)
    run = plan("nightly-amd-8-gpu-mi35x", D, options, [], jobs=jobs, fleet=[("linux-mi35x-gpu-8",)],
               suites_module="test/run_suite.py")
    assert run.runner_flags == ("--nightly", "--continue-on-error")
    assert run.command() == ("python3 run_suite.py --hw amd --suite nightly-amd-8-gpu-mi35x --nightly --continue-on-error "
                             "--timeout-per-file 7200")


def test_no_options_read_means_no_flags_and_one_shard():
    run = plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml", shards=4, runs_on=["box"]), None, [])
    assert run.runner_flags == () and run.shards == 1


# -- where it runs ----------------------------------------------------------------------------------------
NIGHTLY = '''\
name: nightly
on:
  schedule: [{cron: "0 1 * * *"}]
  workflow_dispatch:
jobs:
  n8:
    runs-on: linux-mi35x-gpu-8
    steps:
      - name: Run
        timeout-minutes: 120
        run: bash exec.sh -w /x/test python3 run_suite.py --hw amd --suite nightly-amd-8-gpu-mi35x --nightly --timeout-per-file 7200 ${{ (github.event_name == 'schedule' || inputs.x) && '--continue-on-error' || '' }}
'''
FLEET = [("linux-mi35x-gpu-8",), ("self-hosted", "amd", "mi350", "4gpu"), ("linux-mi35x-gpu-2",)]


@pytest.mark.parametrize(("suite", "needed", "larger", "labels"), [
    ("nightly-stage-c-4-gpu-mi350", 4, False, ("self-hosted", "amd", "mi350", "4gpu")),
    ("nightly-stage-c-2-gpu-mi350", 2, False, ("linux-mi35x-gpu-2",)),
    ("nightly-stage-c-3-gpu-mi350", 3, True, ("self-hosted", "amd", "mi350", "4gpu")),  # the smallest that fits
])
def test_a_job_off_the_fleet_takes_the_fleets_runner_with_the_gpus_it_needs(suite, needed, larger, labels):
    consumer = f"""\
on: {{schedule: [{{cron: "0 1 * * *"}}]}}
jobs:
  j:
    runs-on: elsewhere-gpu-{needed}
    steps:
      - run: python3 tests/ci/run_suite.py --hw rocm --suite {suite} --cadence nightly
"""
    jobs = read_suite_jobs({}, {"o/r:.github/workflows/c.yml": consumer}, runner="run_suite")
    run = plan(suite, Dispatch(workflow="x.yml", larger_runner=larger), None, [], jobs=jobs, fleet=FLEET)
    assert run.runs_on == labels


def test_a_suite_no_runner_fits_is_refused_naming_the_largest_and_runs_on_overrides():
    jobs = read_suite_jobs({}, {"o/r:w.yml": "on: {schedule: [{cron: '1 1 * * *'}]}\njobs:\n  j:\n    runs-on: big-gpu-16\n"
                                               "    steps:\n      - run: python3 run_suite.py --hw rocm --suite nightly-s-16-gpu-mi350\n"},
                           runner="run_suite")
    with pytest.raises(NoRunner, match=r"largest runner the fleet has is \[linux-mi35x-gpu-8\] \(8 GPUs\)"):
        plan("nightly-s-16-gpu-mi350", D, None, [], jobs=jobs, fleet=FLEET)
    run = plan("nightly-s-16-gpu-mi350", Dispatch(workflow="x.yml", runs_on=["big-box"]), None, [], jobs=jobs, fleet=FLEET)
    assert run.runs_on == ("big-box",)


@pytest.mark.parametrize(("labels", "gpus"), [
    (["self-hosted", "amd", "mi350", "4gpu"], 4), (["linux-mi35x-gpu-8"], 8), (["linux-mi35x-gpu-2"], 2),
    (["self-hosted", "mi350"], None), (["h200-8gpus"], 8),
])
def test_gpus_of_labels(labels, gpus):
    assert gpus_of_labels(labels) == gpus


def test_the_sglang_pool_for_a_4_gpu_suite_costs_the_whole_8_gpu_runner():
    options = _options(MILES_RUNNER.read_text())
    run = plan("nightly-stage-c-4-gpu-mi350", Dispatch(workflow="x.yml", runs_on=["linux-mi35x-gpu-8"]), options, [])
    assert run.runner_gpus == 8  # sglang's nightly maps the 4-GPU suite to this pool: all 8 GPUs are held
    assert plan("nightly-stage-c-4-gpu-mi350", Dispatch(workflow="x.yml", runs_on=["linux-mi35x-gpu-8"], gpus=4),
                options, []).runner_gpus == 4


def test_listed_files_without_the_runners_own_selection_are_one_job():
    options = _options(MILES_RUNNER.read_text())
    d = Dispatch(workflow="x.yml", shards=3, runs_on=["linux-mi35x-gpu-8"])
    assert plan("nightly-stage-c-8-gpu-mi350", d, options, []).shards == 3
    assert plan("nightly-stage-c-8-gpu-mi350", d, options, ["tests/e2e/test_a.py", "tests/e2e/test_b.py"]).shards == 1
    with_files = {**options, "--files": RunnerOption("--files", True)}
    run = plan("nightly-stage-c-8-gpu-mi350", d, with_files, ["tests/e2e/test_a.py", "tests/e2e/test_b.py"])
    assert run.shards == 2 and run.file_option == "--files"


# -- cost -------------------------------------------------------------------------------------------------
def test_partition_is_the_runners_longest_first_greedy_split():
    est = {"a": 100, "b": 300, "c": 200, "d": 200, "e": 50}
    # b(300) -> 0; c(200) -> 1; d(200) -> 1 (200 < 300: 400); a(100) -> 0 (400); e(50) -> 0 (a tie: the first)
    assert partition(est, 2) == [["b", "a", "e"], ["c", "d"]]
    assert partition(est, 1) == [["b", "c", "d", "a", "e"]]


def _cost(per_file: dict[str, float], run) -> float:
    from checks.target.run_cost import Limits, cost_files

    return cost_files({f: [e] for f, e in per_file.items()}, run.runner_gpus, est_time_positive=True,
                      limits=Limits.of(run), shards=run.shards).gpu_hours


def test_cost_is_runner_gpus_times_shards_times_the_longest_shard():
    # checks/target/run_cost.py prices the run; the plan says how many runners of how many GPUs it holds
    regs = {"tests/e2e/a.py": 1800, "tests/e2e/b.py": 1800, "tests/e2e/c.py": 3600}
    options = _options(MILES_RUNNER.read_text())
    one = plan("nightly-stage-c-8-gpu-mi350", EIGHT, options, [])
    two = plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml", shards=2, runs_on=["linux-mi35x-gpu-8"]), options, [])
    # each file at the most the runner lets it run: max(1800, 1.25 x est_time) = 2250, 2250, 4500 s
    assert _cost(regs, one) == 20.0  # 8 GPUs x 9000 s
    assert _cost(regs, two) == 20.0  # 8 GPUs x 2 shards x 4500 s: balanced, the same GPU time
    three = plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml", shards=3, runs_on=["linux-mi35x-gpu-8"]), options, [])
    assert _cost(regs, three) == 30.0  # a third runner held for the longest shard's 4500 s
    assert _cost({"tests/e2e/a.py": 1}, one) == 4.0  # est_time=1 may still run the whole 1800 s


# -- the `dispatch:` keys ---------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", [
    "shards: 2", "shards: 8", "runs_on: [linux-mi35x-gpu-8]", "runs_on: [self-hosted, amd, mi350, 4gpu]",
    "image: miles-rocm720-mi35x-20260811", "image: rocm/sgl-dev:miles-rocm720-mi35x",
    "image: rocm/sgl-dev@sha256:" + "a" * 64, "runner_flags: [--cadence, nightly]", "runner_flags: []",
    "image: rocm/sgl-dev:miles-rocm720-mi35x-{date}", "source: nightly-test-amd.yml#nightly-test-1-gpu-mi35x",
    "larger_runner: true", "timeout_per_file_s: 900", "job_timeout_min: 60", "cache: scratch", "cache: shared",
    "install: [pip install -e . --no-deps]",
])
def test_dispatch_keys_accepted(entry):
    config, findings = load_config(f"dispatch:\n  s:\n    workflow: rocm-on-demand.yml\n    {entry}\n")
    assert findings == [], findings


@pytest.mark.parametrize(("entry", "message"), [
    ("shards: 0", "shards must be from 1 to 8"),
    ("shards: 9", "shards must be from 1 to 8"),
    ("runs_on: []", "runs_on must be 1 to 10 runner labels"),
    ("runs_on: ['a b']", "runs_on must be 1 to 10 runner labels"),
    ("runs_on: ['${{ x }}']", "runs_on must be 1 to 10 runner labels"),
    ("image: 'rocm/sgl-dev:tag; id'", "image must be an image tag"),
    ("image: 'Rocm/X:tag'", "image must be an image tag"),
    ("runner_flags: ['--labels run-ci-all']", "runner_flags: at most 20 plain words"),
    ("runner_flags: ['$(id)']", "runner_flags: at most 20 plain words"),
    ("timeout_per_file_s: 10", "timeout_per_file_s must be from 60"),
    ("job_timeout_min: 721", "job_timeout_min must be from 1 to 720"),
    ("source: 'x.yml#a b'", "source must be a workflow file name"),
    ("install: ['pip install x; id']", "install: at most 10 commands of plain words"),
    ("install: ['pip install $(id)']", "install: at most 10 commands of plain words"),
    ("cache: rw", "cache"),
])
def test_dispatch_keys_rejected_at_their_line(entry, message):
    config, findings = load_config(f"dispatch:\n  s:\n    workflow: rocm-on-demand.yml\n    {entry}\n")
    assert len(findings) == 1 and message in findings[0].message, findings
    assert findings[0].span.line == 4


def test_a_star_entry_dispatches_every_suite_and_a_suites_own_entry_wins():
    config, findings = load_config('dispatch:\n  "*":\n    workflow: a.yml\n  s:\n    workflow: b.yml\n')
    assert not findings
    assert config.dispatch_for("s").workflow == "b.yml" and config.dispatch_for("other").workflow == "a.yml"
    assert load_config(None)[0].dispatch_for("s") is None


# -- issue 37: pins for what a mutation sample found open ---------------------------------------------
def _job(workflow: str, job: str, line: int = 10, **kw):
    from checks.workflows.jobs import SuiteJob

    fields = dict(suite="nightly-stage-c-8-gpu-mi350", workflow=workflow, job=job, line=line, external=False,
                  pool=("linux-mi35x-gpu-8",), hw="rocm", cadence="nightly", pull_request=False, scheduled=True,
                  shards=1, timeout_per_file_s=None, job_timeout_min=360, image=None)
    fields.update(kw)
    return SuiteJob(**fields)


def test_a_configured_source_names_its_workflow_and_its_job_both():
    """`source: a.yml#nightly` is that job of that workflow: never a job of that id in another
    workflow (its plan and price would be copied from the wrong job), nor another job of a.yml."""
    from checks.target.dispatch_plan import choose_job

    fleet = [("linux-mi35x-gpu-8",)]
    other_workflow_same_id = _job(".github/workflows/b.yml", "nightly", timeout_per_file_s=9000)
    same_workflow_other_id = _job(".github/workflows/a.yml", "weekly", timeout_per_file_s=8000)
    wanted = _job(".github/workflows/a.yml", "nightly", line=30, timeout_per_file_s=100)
    jobs = [other_workflow_same_id, same_workflow_other_id, wanted]
    assert choose_job("nightly-stage-c-8-gpu-mi350", jobs, fleet, source="a.yml#nightly") is wanted
    assert choose_job("nightly-stage-c-8-gpu-mi350", [other_workflow_same_id, same_workflow_other_id], fleet,
                      source="a.yml#nightly") is None
    # a workflow without a job id: any job of it, the longest timeouts first
    assert choose_job("nightly-stage-c-8-gpu-mi350", jobs, fleet, source="a.yml") is same_workflow_other_id
    assert choose_job("nightly-stage-c-8-gpu-mi350", jobs, fleet, source="c.yml") is None


def test_the_run_plan_text_says_its_gpu_hours():
    from checks.target.dispatch_plan import plan_lines

    view = {"source": {"workflow": ".github/workflows/a.yml", "line": 3, "job": "nightly"}, "runs_on": ["box"],
            "gpus": 8, "shards": 2, "timeout_per_file_s": 1800, "job_timeout_min": 360, "command": "python3 r.py"}
    assert "about 1.50 GPU-hours" in plan_lines({**view, "gpu_hours": 1.5})
    assert "about 0.00 GPU-hours" in plan_lines({**view, "gpu_hours": 0.0})  # a price of zero is still said
    assert not [line for line in plan_lines(view) if "GPU-hours" in line]  # no price known: no line
    assert plan_lines({**view, "gpu_hours": 1.5})[-1] == "about 1.50 GPU-hours"  # before the notes, after the rest


@pytest.mark.parametrize("flags, kept, note", [
    (["--max-attempts"], [], "`--max-attempts` left out: it takes a value"),
    (["--enable-retry", "--max-attempts"], ["--enable-retry"], "`--max-attempts` left out: it takes a value"),
    (["--cadence"], [], "`--cadence` left out: it takes a value"),
    (["--max-attempts", "3"], ["--max-attempts", "3"], None),
    (["--nightly", "--unknown"], ["--nightly"], "`--unknown` left out: the runner on the default branch has no such option"),
    (["--unknown", "x"], [], "`--unknown` left out: the runner on the default branch has no such option"),
])
def test_a_value_taking_flag_at_the_end_of_the_list_is_left_out_not_an_index_error(flags, kept, note):
    from checks.target.dispatch_plan import _accepted, _cadence

    options = {"--max-attempts": RunnerOption("--max-attempts", True), "--cadence": RunnerOption("--cadence", True),
               "--enable-retry": RunnerOption("--enable-retry", False), "--nightly": RunnerOption("--nightly", False)}
    notes: list[str] = []
    assert _accepted(list(flags), options, notes) == kept
    assert notes == ([note] if note else [])
    assert _cadence(list(flags)) == ("nightly" if "--nightly" in flags else None)
    assert _cadence(["--cadence", "weekly"]) == "weekly"


@pytest.mark.parametrize("tail", ["--cadence", "--max-attempts", "--cadence regular --max-attempts",
                                  "--max-attempts --continue-on-error"])
def test_a_jobs_value_taking_flag_without_its_value_is_not_copied(tail):
    """The job's command line ends with (or runs into another option after) an option that takes a
    value: the runner would refuse it; the plan neither copies it (a None in the command, or the next
    option read as its value) nor fails, whether or not the runner's options were read."""
    wf = ("name: n\non: [push]\njobs:\n  j:\n    runs-on: [self-hosted, amd, mi350, 8gpu]\n    steps:\n"
          f"      - run: python3 tests/ci/run_suite.py --hw rocm --suite nightly-stage-c-8-gpu-mi350 {tail}\n")
    options = _options(MILES_RUNNER.read_text())
    for opts in (options, None):
        jobs = read_suite_jobs({".github/workflows/n.yml": wf}, runner="run_suite", options=opts)
        run = plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="n.yml"), opts, [], jobs=jobs,
                   fleet=[j.pool for j in jobs])
        assert "--max-attempts" not in run.runner_flags and None not in run.runner_flags
        command = run.command()
        assert "--max-attempts" not in command and ("--cadence regular" in command) == ("regular" in tail)


def test_a_sharded_plans_commands_and_inputs():
    options = _options(MILES_RUNNER.read_text())
    run = plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml", runs_on=["box"], shards=2, runner_flags=[]), options, [])
    assert run.shards == 2
    assert [c.split("--auto-partition-id ")[1] for c in run.commands()] == ["0 --auto-partition-size 2", "1 --auto-partition-size 2"]
    one = plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml", runs_on=["box"], shards=1, runner_flags=[]), options, [])
    assert "--auto-partition" not in one.command()
    import json

    keys = list(json.loads(run.inputs()["plan"]))
    assert keys == sorted(keys) and run.inputs()["shards"] == "2"  # the same plan, the same input text


def test_a_job_of_another_suite_is_never_copied():
    from checks.target.dispatch_plan import choose_job

    other = _job(".github/workflows/a.yml", "nightly", suite="nightly-stage-c-4-gpu-mi350")
    assert choose_job("nightly-stage-c-8-gpu-mi350", [other], [("linux-mi35x-gpu-8",)]) is None
    cuda = _job(".github/workflows/a.yml", "nightly", hw="cuda")
    assert choose_job("nightly-stage-c-8-gpu-mi350", [cuda], [("linux-mi35x-gpu-8",)]) is None


def test_an_unknown_option_takes_the_plain_word_after_it():
    from checks.target.dispatch_plan import _accepted

    notes: list[str] = []
    options = {"--nightly": RunnerOption("--nightly", False)}
    assert _accepted(["--nightly", "--unknown", "x"], options, notes) == ["--nightly"]
    assert notes == ["`--unknown` left out: the runner on the default branch has no such option"]  # not `x` as well


def test_what_the_plan_says_it_left_out_or_moved():
    options = _options(MILES_RUNNER.read_text())
    unresolved = _job(".github/workflows/a.yml", "nightly", pool=("linux-mi35x-gpu-4",), unresolved=("--labels ${{ needs.x }}",),
                      suite="nightly-stage-c-4-gpu-mi350")
    run = plan("nightly-stage-c-4-gpu-mi350", D, options, [], jobs=[unresolved], fleet=[("linux-mi35x-gpu-4",)])
    assert "left out, computed at run time by its job: `--labels ${{ needs.x }}`" in run.notes
    assert "no image read from its job: the workflow's default image" in run.notes
    # its pool is not the fleet's: the fleet's runner that fits, said
    away = _job(".github/workflows/a.yml", "nightly", pool=("elsewhere-4",), suite="nightly-stage-c-4-gpu-mi350")
    run = plan("nightly-stage-c-4-gpu-mi350", Dispatch(workflow="x.yml", larger_runner=True), options, [], jobs=[away],
               fleet=[("linux-mi35x-gpu-4",)])
    assert run.runs_on == ("linux-mi35x-gpu-4",)
    assert ("runs on [linux-mi35x-gpu-4] of this repository's fleet: its job runs on [elsewhere-4] in "
            ".github/workflows/a.yml") in run.notes
    nameless = _job(".github/workflows/a.yml", "nightly", pool=None, suite="nightly-stage-x-mi350")
    with pytest.raises(NoRunner, match="neither its name nor its job's runner"):
        plan("nightly-stage-x-mi350", D, options, [], jobs=[nameless], fleet=[("linux-mi35x-gpu-4",)])


def test_only_an_own_jobs_environment_is_copied_and_match_all_labels_is_read():
    options = _options(MILES_RUNNER.read_text())
    fleet = [("linux-mi35x-gpu-8",)]
    mine = _job(".github/workflows/a.yml", "nightly", env=(("HF_HOME", "/data"),), flags=("--match-all-labels",))
    run = plan("nightly-stage-c-8-gpu-mi350", D, options, [], jobs=[mine], fleet=fleet)
    assert run.env == (("HF_HOME", "/data"),) and run.match_all_labels
    theirs = _job("sgl-project/sglang:.github/workflows/a.yml", "nightly", env=(("HF_HOME", "/data"),), external=True)
    run = plan("nightly-stage-c-8-gpu-mi350", D, options, [], jobs=[theirs], fleet=fleet)
    assert run.env == () and not run.match_all_labels


def test_the_run_plan_text_line_by_line():
    from checks.target.dispatch_plan import plan_lines

    view = {"source": {"workflow": ".github/workflows/a.yml", "line": 3, "job": "nightly"}, "runs_on": ["box"],
            "gpus": 8, "shards": 1, "timeout_per_file_s": 1800, "job_timeout_min": 360, "command": "python3 r.py",
            "install": ["pip install x"], "notes": ["a note"]}
    lines = plan_lines(view)
    assert lines[0] == "copied from `.github/workflows/a.yml:3` (job `nightly`)"
    assert lines[1] == "runs on `box` (8 GPUs), 1 shard" and "2 shards" in plan_lines({**view, "shards": 2})[1]
    assert "install: `pip install x`" in lines and lines[-1] == "a note"
    assert plan_lines({**view, "source": None})[0] == "copied from the configuration only"


def test_a_nightly_cadence_admits_nightly_registrations_and_a_regular_one_does_not():
    options = _options(SGLANG_RUNNER)
    nightly = plan("nightly-amd-8-gpu-mi35x", Dispatch(workflow="x.yml", runs_on=["box"], runner_flags=["--nightly"]), options, [])
    assert nightly.cadence == "nightly" and nightly.admit_nightly
    regular = plan("nightly-amd-8-gpu-mi35x", Dispatch(workflow="x.yml", runs_on=["box"], runner_flags=[]), options, [])
    assert regular.cadence is None and not regular.admit_nightly


# -- issue 37, seed 41: the job chosen, what cannot be copied, the install, the runner's path ---------
FLEET8 = [("linux-mi35x-gpu-8",)]


def test_the_job_chosen_is_on_the_fleet_first_then_the_longest_timeouts():
    from checks.target.dispatch_plan import choose_job

    away = _job(".github/workflows/a.yml", "nightly", line=5, pool=("elsewhere-8",), timeout_per_file_s=9000)
    home = _job(".github/workflows/a.yml", "nightly2", line=40, timeout_per_file_s=100)
    assert choose_job("nightly-stage-c-8-gpu-mi350", [away, home], FLEET8) is home  # on the fleet, though shorter
    short = _job(".github/workflows/a.yml", "n1", line=5, timeout_per_file_s=600)
    long = _job(".github/workflows/a.yml", "n2", line=50, timeout_per_file_s=2400)
    assert choose_job("nightly-stage-c-8-gpu-mi350", [short, long], FLEET8) is long  # not the first line
    # a job that states no per-file timeout ranks with one that states none usable (0): the job timeout decides
    unstated = _job(".github/workflows/a.yml", "n1", line=5, timeout_per_file_s=None, job_timeout_min=200)
    zero = _job(".github/workflows/a.yml", "n2", line=50, timeout_per_file_s=0, job_timeout_min=300)
    assert choose_job("nightly-stage-c-8-gpu-mi350", [unstated, zero], FLEET8) is zero


def test_a_job_off_the_fleet_with_no_fleet_at_all_is_refused():
    away = _job(".github/workflows/a.yml", "nightly", pool=("elsewhere-8",))
    with pytest.raises(NoRunner, match="has no fleet to run it on; set `dispatch.nightly-stage-c-8-gpu-mi350.runs_on`"):
        plan("nightly-stage-c-8-gpu-mi350", D, None, [], jobs=[away], fleet=[])


def test_a_job_that_runs_the_suite_twice_or_starts_its_own_container_is_refused():
    twice = [_job(".github/workflows/a.yml", "nightly", invocation=1, env=(("ATTN", "a"),)),
             _job(".github/workflows/a.yml", "nightly", line=12, invocation=2, env=(("ATTN", "b"),))]
    with pytest.raises(NoRunner, match="runs it 2 times in one job, each with its own environment \\(ATTN=a; ATTN=b\\)"):
        plan("nightly-stage-c-8-gpu-mi350", D, None, [], jobs=twice, fleet=FLEET8)
    usual = "scripts/ci/amd/amd_ci_start_container.sh"
    own = [_job(".github/workflows/b.yml", f"j{i}", suite=f"stage-b-{i}", setup=usual) for i in range(2)]
    own_elsewhere = [_job(".github/workflows/c.yml", f"k{i}", suite=f"stage-c-{i}", pool=("elsewhere-8",),
                          setup="scripts/ci/amd/disagg_start.sh") for i in range(3)]
    theirs = [_job("o/r:.github/workflows/d.yml", f"e{i}", suite=f"stage-d-{i}", external=True,
                   setup="scripts/ci/amd/disagg_start.sh") for i in range(3)]
    disagg = _job(".github/workflows/a.yml", "nightly", setup="scripts/ci/amd/disagg_start.sh")
    # the fleet's usual container is what the repository's own jobs on the fleet start
    with pytest.raises(NoRunner, match="starts its own container \\(`scripts/ci/amd/disagg_start.sh`, not the fleet's "
                                       "`amd_ci_start_container.sh`\\)"):
        plan("nightly-stage-c-8-gpu-mi350", D, None, [], jobs=[disagg, *own, *own_elsewhere, *theirs], fleet=FLEET8)
    # the same script in another directory is the same container
    moved = _job(".github/workflows/a.yml", "nightly", setup="other/dir/amd_ci_start_container.sh")
    assert plan("nightly-stage-c-8-gpu-mi350", D, None, [], jobs=[moved, *own], fleet=FLEET8).source["job"] == "nightly"
    # flags given by the configuration choose what runs: nothing is refused
    assert plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml", runner_flags=["--nightly"]), None, [], jobs=twice,
                fleet=FLEET8).runner_flags == ("--nightly",)


def test_another_repositorys_job_installs_as_the_own_rocm_job_on_the_fleet_does():
    theirs = _job("o/r:.github/workflows/n.yml", "nightly", external=True, install=("their install",))
    away = _job(".github/workflows/b.yml", "j", suite="stage-b", pool=("elsewhere-8",), install=("pip install away",))
    cuda = _job(".github/workflows/c.yml", "j", suite="stage-c", hw="cuda", install=("pip install cuda",))
    bare = _job(".github/workflows/e.yml", "j", suite="stage-e")
    home = _job(".github/workflows/d.yml", "j", suite="stage-d", install=("pip install -e .",))
    run = plan("nightly-stage-c-8-gpu-mi350", D, None, [], jobs=[theirs, away, cuda, bare, home], fleet=FLEET8)
    assert run.install == ("pip install -e .",)
    assert plan("nightly-stage-c-8-gpu-mi350", D, None, [], jobs=[theirs, away], fleet=FLEET8).install == ()
    mine = _job(".github/workflows/n.yml", "nightly", install=("mine",))
    assert plan("nightly-stage-c-8-gpu-mi350", D, None, [], jobs=[mine, home], fleet=FLEET8).install == ("mine",)


def test_the_runner_runs_from_the_directory_its_job_names():
    from types import SimpleNamespace

    from checks.target.dispatch_plan import _runner_path

    assert _runner_path(None, "tests/ci/run_suite.py") == ("tests/ci/run_suite.py", "")
    assert _runner_path(SimpleNamespace(runner="./tests/ci/run_suite.py"), "tests/ci/run_suite.py") == ("tests/ci/run_suite.py", "")
    assert _runner_path(SimpleNamespace(runner="run_suite.py"), "test/run_suite.py") == ("run_suite.py", "test")
    # a runner the inventory's path does not end with runs from the root, as written
    assert _runner_path(SimpleNamespace(runner="scripts/go.py"), "tests/ci/run_suite.py") == ("scripts/go.py", "")


def test_the_run_plan_text_defaults_and_container():
    from checks.target.dispatch_plan import plan_lines

    view = {"runs_on": ["box"], "timeout_per_file_s": 1800, "job_timeout_min": 360, "command": "python3 r.py"}
    lines = plan_lines(view)
    assert lines[1] == "runs on `box` (0 GPUs), 1 shard"  # neither said: no GPU count, one shard
    assert not [line for line in lines if line.startswith("container:")]
    lines = plan_lines({**view, "container": ["options: --device=/dev/kfd", "env: A=1"]})
    assert "container: `options: --device=/dev/kfd`; `env: A=1`" in lines


def test_a_plan_is_nightly_when_it_admits_nightly_registrations():
    options = _options(SGLANG_RUNNER)
    assert plan("nightly-amd-8-gpu-mi35x", Dispatch(workflow="x.yml", runs_on=["box"], runner_flags=["--nightly"]), options,
                []).nightly is True
    assert plan("nightly-amd-8-gpu-mi35x", Dispatch(workflow="x.yml", runs_on=["box"], runner_flags=[]), options,
                []).nightly is False


# -- issue 37, the outside sample (seed 97) ------------------------------------------------------------
def test_a_nightly_suite_is_named_so_at_its_start_or_in_its_middle():
    from checks.target.dispatch_plan import is_nightly

    assert is_nightly("nightly-stage-c-8-gpu-mi350") and is_nightly("stage-nightly-amd-8-gpu")
    assert not is_nightly("stage-c-8-gpu-mi350") and not is_nightly("stage-c-nightly") and not is_nightly("my-nightlyish-x")


def test_the_smallest_runner_that_fits_is_named_when_a_larger_one_is_not_allowed():
    away = _job(".github/workflows/a.yml", "nightly", pool=("elsewhere-3",), suite="nightly-stage-c-3-gpu-mi350")
    with pytest.raises(NoRunner, match=r"the smallest that fits is \[self-hosted, amd, mi350, 4gpu\] \(4 GPUs, the largest "
                                       r"the fleet has is \[linux-mi35x-gpu-8\]\)"):
        plan("nightly-stage-c-3-gpu-mi350", D, None, [], jobs=[away], fleet=FLEET)


def test_listed_files_go_to_the_runners_file_option_and_only_then():
    options = _options(SGLANG_RUNNER + '    parser.add_argument("--files", nargs="+")\n')
    run = plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml", runs_on=["box"], runner_flags=[]), options, [])
    assert run.file_option == "--files"
    listed = run.with_files(["a.py", "b.py"])
    assert listed.files == ("a.py", "b.py") and run.files == ()
    assert run.command(files=("a.py",)).endswith("--files a.py") and "--files" not in run.command()
    no_option = plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml", runs_on=["box"], runner_flags=[]), None, [])
    assert no_option.file_option is None and "a.py" not in no_option.command(files=("a.py",))


def test_a_job_that_partitions_at_run_time_is_planned_as_one_job_and_says_so():
    options = _options(MILES_RUNNER.read_text())
    assert "--auto-partition-id" in options
    computed = _job(".github/workflows/a.yml", "nightly", shards=0)
    run = plan("nightly-stage-c-8-gpu-mi350", D, options, [], jobs=[computed], fleet=FLEET8)
    assert run.shards == 1
    assert "the job computes its partition count at run time: one job; set `dispatch.<suite>.shards`" in run.notes
    two = plan("nightly-stage-c-8-gpu-mi350", D, options, [], jobs=[_job(".github/workflows/a.yml", "nightly", shards=2)],
               fleet=FLEET8)
    assert two.shards == 2 and not [n for n in two.notes if "partition count" in n]


def test_only_the_suites_own_invocations_in_its_own_job_count_as_running_it_twice():
    once = _job(".github/workflows/a.yml", "nightly", invocation=1)
    other_suite_twice = [_job(".github/workflows/a.yml", "nightly", line=20 + i, suite="nightly-stage-x-8-gpu-mi350",
                              invocation=i) for i in (1, 2)]
    other_job = _job(".github/workflows/a.yml", "weekly", line=40, invocation=2, pool=("elsewhere-8",))
    other_workflow = _job(".github/workflows/b.yml", "nightly", line=50, invocation=2, pool=("elsewhere-8",))
    run = plan("nightly-stage-c-8-gpu-mi350", D, None, [], jobs=[once, *other_suite_twice, other_job, other_workflow],
               fleet=FLEET8)
    assert run.source == {"workflow": ".github/workflows/a.yml", "job": "nightly", "line": 10}


def test_the_plans_json_is_what_its_text_is_made_of():
    from checks.target.dispatch_plan import plan_lines

    run = plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml", runs_on=["box-gpu-8"], shards=1, runner_flags=[]),
               None, [])
    view = run.as_json(2.5)
    assert (view["suite"], view["runs_on"], view["gpus"], view["gpu_hours"], view["invocations"]) == (
        "nightly-stage-c-8-gpu-mi350", ["box-gpu-8"], 8, 2.5, 1)
    assert view["command"] == run.command() and view["source"] is None
    lines = plan_lines(view)
    assert lines[0] == "copied from the configuration only" and lines[-1 - len(run.notes)] == "about 2.50 GPU-hours"


def test_a_runner_nothing_gives_a_gpu_count_is_one_gpu_and_the_text_says_the_environment():
    """(seed 131) GPUs from the configuration, else the labels, else the suite's name, else one."""
    from checks.target.dispatch_plan import plan_lines

    run = plan("nightly-stage-x-mi350", Dispatch(workflow="x.yml", runs_on=["box"], runner_flags=[]), None, [])
    assert run.runner_gpus == 1
    assert plan("nightly-stage-x-mi350", Dispatch(workflow="x.yml", runs_on=["box"], gpus=2, runner_flags=[]), None,
                []).runner_gpus == 2
    view = {"runs_on": ["box"], "timeout_per_file_s": 1800, "job_timeout_min": 360, "command": "python3 r.py"}
    assert "environment: none set by the job" in plan_lines(view)
    assert "environment: `A=1`, `B=2`" in plan_lines({**view, "env": ["A=1", "B=2"]})
