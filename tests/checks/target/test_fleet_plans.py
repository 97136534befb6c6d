"""Run plans on vendored revisions of both targets (tests/fixtures/targets/*/ci-*: their workflows,
CI scripts and runners, Apache-2.0): where and how `/run-rocm <suite>` runs, read from the job of
the target's own CI that runs the suite, never from the pull request.

The sglang plans are checked against a second, independent reading of the same workflow files
(plain YAML and regular expressions, below): every AMD suite its MI35x jobs run is planned on that
job's pool, with its partitions and per-file timeout, and without `--list-only`.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from checks.workflows.images import Shell, start_script_rule
from checks.workflows.jobs import gpus_of_labels, read_suite_jobs
from checks.config.schema import Config, Dispatch, load_config
from checks.target.dispatch_plan import NoRunner, choose_job, plan
from checks.workflows.expressions import UNKNOWN, Scope, evaluate, substitute
from checks.target.runner_policy import read_label_policy
from checks.target.target_ci import read_target_ci
from checks.scanning.tree import DirectoryTree

from tests import FIXTURES, REPO

TARGETS = FIXTURES / "targets"
SGLANG = TARGETS / "sglang" / "ci-382343f"
MILES = TARGETS / "miles" / "ci-31f1ca9"
CONSUMER_PATH = ".github/workflows/nightly-test-amd-miles-rocm720.yml"
CONSUMER = {f"sgl-project/sglang:{CONSUMER_PATH}": (SGLANG / CONSUMER_PATH).read_bytes()}
DOCS_CONFIGS = REPO / "docs" / "configs"
ANY = 'dispatch:\n  "*":\n    workflow: rocm-on-demand.yml\n'


def sglang_config(extra: str = "") -> Config:
    config, findings = load_config((DOCS_CONFIGS / "sglang.yml").read_text() + ANY + extra)
    assert not findings, findings
    return config


def miles_config(extra: str = "") -> Config:
    config, findings = load_config(ANY + extra)
    assert not findings, findings
    return config


@pytest.fixture(scope="module")
def sglang_ci():
    return read_target_ci(DirectoryTree(SGLANG), sglang_config())


@pytest.fixture(scope="module")
def miles_ci():
    return read_target_ci(DirectoryTree(MILES), miles_config(), consumers_from=CONSUMER)


def _plan(ci, suite: str, config: Config, files=()):
    dispatch = config.dispatch_for(suite)
    return plan(suite, dispatch, ci.options, list(files), jobs=ci.jobs, fleet=ci.fleet,
                suites_module=config.paths.suites_module, default_timeout_per_file_s=config.calibration.timeout_per_file_s)


# -- an independent reading of sglang's MI35x jobs ---------------------------------------------------
def _mi35x_jobs() -> dict[str, list[dict]]:
    """suite -> every MI35x job line that runs it: workflow, job, pool, partitions, per-file timeout."""
    out: dict[str, list[dict]] = {}
    for path in sorted((SGLANG / ".github" / "workflows").glob("*.yml")):
        doc = yaml.safe_load(path.read_text())
        for job_id, job in doc["jobs"].items():
            matrix = (job.get("strategy") or {}).get("matrix") or {}
            runner = matrix.get("runner") if isinstance(matrix, dict) else None
            pools = re.findall(r"linux-mi35x-gpu-[0-9]+(?:\.fabric)?", f"{job.get('runs-on')} {runner}")
            if not pools or "${{ matrix.suite }}" in yaml.safe_dump(job):
                continue  # not an MI35x job, or the nightly that runs miles' suites
            for step in job.get("steps") or []:
                text = str(step.get("run") or "").replace("\\\n", " ")
                for line in text.split("\n"):
                    m = re.search(r"--suite\s+([A-Za-z0-9._-]+)", line)
                    if not m or "--hw amd" not in line:
                        continue
                    size = re.search(r"--auto-partition-size\s+(\d+)", line)
                    tpf = re.search(r"--timeout-per-file\s+(\d+)", line)
                    out.setdefault(m.group(1), []).append({
                        "workflow": f".github/workflows/{path.name}", "job": job_id, "pool": (pools[0],),
                        "shards": int(size.group(1)) if size else 1, "tpf": int(tpf.group(1)) if tpf else None,
                        "step_timeout": step.get("timeout-minutes")})
    return out


def test_sglangs_mi35x_jobs_run_37_amd_suites_on_four_pools():
    jobs = _mi35x_jobs()
    assert len(jobs) == 37
    assert {e["pool"][0] for entries in jobs.values() for e in entries} == {
        "linux-mi35x-gpu-1", "linux-mi35x-gpu-2", "linux-mi35x-gpu-8", "linux-mi35x-gpu-8.fabric"}
    assert max(e["shards"] for entries in jobs.values() for e in entries) == 3
    timeouts = {e["tpf"] for entries in jobs.values() for e in entries if e["tpf"]}
    assert min(timeouts) == 900 and max(timeouts) == 14400


def test_every_sglang_mi35x_suite_is_planned_on_its_jobs_pool_with_its_partitions_and_timeout(sglang_ci):
    """The differential: the plan's source is one of the MI35x jobs the independent reading found,
    and the plan has that job's pool, partition count and per-file timeout (the runner's default,
    1200 s read from its argparse, where the job passes none)."""
    config = sglang_config()
    independent = _mi35x_jobs()
    planned = 0
    for suite, entries in sorted(independent.items()):
        if suite in REFUSED:
            with pytest.raises(NoRunner, match=REFUSED[suite]):
                _plan(sglang_ci, suite, config)
            continue
        run = _plan(sglang_ci, suite, config)
        source = run.source
        match = [e for e in entries if e["workflow"] == source["workflow"] and e["job"] == source["job"]]
        assert match, (suite, source)
        e = match[0]
        assert run.runs_on == e["pool"], suite
        assert run.shards == e["shards"], suite
        assert run.timeout_per_file_s == (e["tpf"] or 1200), suite
        assert f"--timeout-per-file {run.timeout_per_file_s}" in run.command()
        assert "--list-only" not in run.command() and "--list-only" not in run.runner_flags
        assert run.runner == "run_suite.py" and run.workdir == "test" and run.hw == "amd"
        planned += 1
    assert (planned, len(REFUSED)) == (33, 4) and len(independent) == 37


# sglang's MI35x suites an on-demand run cannot be: refused with the reason, never run half
REFUSED = {
    # the nightly job runs each twice in one job, once per attention backend (SGLANG_HACK_FLASHMLA_BACKEND)
    "nightly-amd-8-gpu-mi35x-deepseek-v4-flash": r"runs it 2 times in one job, each with its own environment",
    "nightly-amd-8-gpu-mi35x-deepseek-v4-pro": r"runs it 2 times in one job, each with its own environment",
    "nightly-amd-8-gpu-mi35x-deepseek-v4-pro-mtp": r"runs it 2 times in one job, each with its own environment",
    # its job starts its own container (InfiniBand devices, RDMA environment set at run time)
    "stage-b-test-large-8-gpu-mi35x-disaggregation-amd": r"starts its own container \(`scripts/ci/amd/amd_ci_start_container_disagg.sh`.*SGLANG_TEST_RDMA_DEVICE",
}


def test_the_refusals_are_what_the_workflows_say():
    """Independently of the job reader: the refused suites' jobs run the suite twice (two `--suite X`
    command lines with different SGLANG_HACK_FLASHMLA_BACKEND) or start the disaggregation container."""
    text = (SGLANG / ".github/workflows/nightly-test-amd-rocm720.yml").read_text()
    for suite in [s for s in REFUSED if "deepseek-v4" in s]:
        lines = [i for i, line in enumerate(text.split("\n")) if re.search(rf"--suite {re.escape(suite)}(\s|$)", line)]
        assert len(lines) >= 2, suite
    disagg = (SGLANG / ".github/workflows/pr-test-amd-rocm720.yml").read_text()
    assert "amd_ci_start_container_disagg.sh" in disagg and "-e SGLANG_TEST_RDMA_DEVICE=" in disagg


def test_a_partitioned_sglang_suite_is_one_command_per_partition(sglang_ci):
    run = _plan(sglang_ci, "stage-c-test-large-8-gpu-amd-mi35x", sglang_config())
    assert run.source == {"workflow": ".github/workflows/pr-test-amd-rocm720.yml",
                          "job": "stage-c-test-large-8-gpu-amd-mi35x-rocm720", "line": 1147}
    assert run.commands() == [
        f"python3 run_suite.py --hw amd --suite stage-c-test-large-8-gpu-amd-mi35x --continue-on-error "
        f"--timeout-per-file 3600 --auto-partition-id {i} --auto-partition-size 3" for i in range(3)]
    assert (run.runs_on, run.runner_gpus, run.job_timeout_min) == (("linux-mi35x-gpu-8",), 8, 60)
    # sglang's AMD job installs the PR's package with its own script (the trusted copy runs it)
    assert run.install == ("bash scripts/ci/amd/amd_ci_install_dependency.sh",)


def test_a_nightly_suite_copies_the_nightly_job_not_the_pr_job_that_also_runs_it(sglang_ci):
    suite = "nightly-amd-8-gpu-mi35x-deepseek-v4-flash"
    kinds = {j.kind for j in sglang_ci.jobs if j.suite == suite and j.pool and "linux-mi35x-gpu-8" in j.pool}
    assert kinds == {"pr", "nightly"}  # pr-test-amd-rocm720.yml's stage-c-dsv4 job runs it too
    # the nightly job is the one copied, and it runs the suite twice: refused, naming that job
    with pytest.raises(NoRunner, match=r"\(\.github/workflows/nightly-test-amd-rocm720\.yml\) runs it 2 times"):
        _plan(sglang_ci, suite, sglang_config())
    # one invocation chosen by configuration is planned on the nightly job
    run = _plan(sglang_ci, suite, sglang_config(f"  {suite}:\n    workflow: rocm-on-demand.yml\n    runner_flags: [--nightly]\n"))
    assert run.source["workflow"] == ".github/workflows/nightly-test-amd-rocm720.yml"
    assert (run.timeout_per_file_s, run.job_timeout_min) == (7200, 300)  # the PR job's would be 3600, 60
    assert "--nightly" in run.runner_flags and run.admit_nightly


def test_the_configuration_picks_another_job_or_overrides_any_value(sglang_ci):
    suite = "nightly-amd-8-gpu-mi35x-deepseek-v4-flash"
    config = sglang_config(f"  {suite}:\n    workflow: rocm-on-demand.yml\n"
                           f"    source: pr-test-amd-rocm720.yml#stage-c-dsv4-flash-fp4-fp8-amd-mi35x-rocm720\n")
    run = _plan(sglang_ci, suite, config)
    assert (run.source["job"], run.timeout_per_file_s, run.job_timeout_min) == (
        "stage-c-dsv4-flash-fp4-fp8-amd-mi35x-rocm720", 3600, 60)
    assert dict(run.env)["SGLANG_DSV4_ACCURACY_ONLY"] == "1"  # that job's exec environment
    config = sglang_config(f"  {suite}:\n    workflow: rocm-on-demand.yml\n    shards: 2\n    timeout_per_file_s: 600\n"
                           f"    job_timeout_min: 45\n    image: rocm/sgl-dev:v1-rocm724-mi35x-20260801\n"
                           f"    runner_flags: [--nightly]\n    install: []\n    cache: scratch\n")
    run = _plan(sglang_ci, suite, config)
    assert (run.shards, run.timeout_per_file_s, run.job_timeout_min, run.image, run.runner_flags, run.install,
            run.cache) == (2, 600, 45, "rocm/sgl-dev:v1-rocm724-mi35x-20260801", ("--nightly", "--continue-on-error"),
                           (), "scratch")


def test_sglangs_image_is_its_start_scripts_dated_lookup(sglang_ci):
    run = _plan(sglang_ci, "stage-b-test-1-gpu-small-amd-mi35x", sglang_config())
    # pr-test-amd-rocm720.yml passes --rocm-version "$ROCM_VERSION" (its env: inputs.rocm_version || 'rocm724');
    # the script looks for rocm/sgl-dev:<version>-<rocm>-mi35x-<date> over 7 days
    assert (run.image, run.image_days) == ("rocm/sgl-dev:{version}-rocm724-mi35x-{date}", 7)
    script = (SGLANG / "scripts/ci/amd/amd_ci_start_container.sh").read_text()
    assert start_script_rule(script, "s", {}, "mi35x", Scope()).tag == "{version}-rocm700-mi35x-{date}"  # its default
    assert start_script_rule(script, "s", {"--rocm-version": "rocm720"}, "mi30x", Scope()).tag == "{version}-rocm720-mi30x-{date}"


def test_the_fleets_are_the_pools_the_repositories_own_jobs_use(sglang_ci, miles_ci):
    assert sglang_ci.fleet == [("linux-mi35x-gpu-8",), ("linux-mi35x-gpu-8.fabric",), ("linux-mi35x-gpu-2",),
                               ("linux-mi35x-gpu-1",)]
    assert miles_ci.fleet == [("self-hosted", "amd", "mi350", "4gpu")]


# -- miles ----------------------------------------------------------------------------------------
def test_miles_pr_suite_copies_its_pr_job_through_the_reusable_job(miles_ci):
    run = _plan(miles_ci, "stage-c-4-gpu-mi350", miles_config())
    assert run.source == {"workflow": ".github/workflows/pr-test-rocm.yml", "job": "stage-c-4-gpu-mi350", "line": 158}
    assert (run.runs_on, run.shards, run.image) == (("self-hosted", "amd", "mi350", "4gpu"), 2,
                                                     "rocm/sgl-dev:miles-rocm720-mi35x")  # resolve-ci-image's default
    # a manual dispatch of pr-test-rocm.yml passes --match-all-labels; --cadence/--labels are computed by
    # another job at run time and left out (said in the plan's notes)
    assert run.runner_flags == ("--match-all-labels", "--enable-retry", "--max-attempts", "2", "--continue-on-error")
    assert any("--labels" in n for n in run.notes)
    assert run.install == ("pip install -e . --no-deps --break-system-packages",
                           "pip install polars zstandard xxhash blake3 numba==0.65.1 --break-system-packages")
    assert run.timeout_per_file_s == 1800  # the runner's argparse default: its job passes none


def test_miles_8_gpu_nightly_is_refused_naming_the_largest_runner_of_its_fleet(miles_ci):
    with pytest.raises(NoRunner) as refused:
        _plan(miles_ci, "nightly-stage-c-8-gpu-mi350", miles_config())
    message = str(refused.value)
    assert "\n" not in message and "needs 8 GPUs" in message
    assert "the largest runner the fleet has is [self-hosted, amd, mi350, 4gpu] (4 GPUs)" in message
    # an 8-GPU runner only if configured, and then on those labels
    config = miles_config("  nightly-stage-c-8-gpu-mi350:\n    workflow: rocm-on-demand.yml\n    runs_on: [big-box-8gpu]\n")
    assert _plan(miles_ci, "nightly-stage-c-8-gpu-mi350", config).runs_on == ("big-box-8gpu",)


def test_miles_2_gpu_nightly_takes_a_larger_runner_only_when_the_configuration_allows(miles_ci):
    with pytest.raises(NoRunner, match="larger_runner: true"):
        _plan(miles_ci, "nightly-stage-c-2-gpu-mi350", miles_config())
    config = miles_config("  nightly-stage-c-2-gpu-mi350:\n    workflow: rocm-on-demand.yml\n    larger_runner: true\n")
    run = _plan(miles_ci, "nightly-stage-c-2-gpu-mi350", config)
    assert run.runs_on == ("self-hosted", "amd", "mi350", "4gpu") and run.runner_gpus == 4


def test_miles_nightly_suite_copies_the_consumers_flags_image_and_timeout(miles_ci):
    run = _plan(miles_ci, "nightly-stage-c-4-gpu-mi350", miles_config())
    assert run.source["workflow"] == f"sgl-project/sglang:{CONSUMER_PATH}"
    assert run.runs_on == ("self-hosted", "amd", "mi350", "4gpu")  # the consumer's 8-GPU pool is sglang's, not miles'
    assert run.runner_flags == ("--cadence", "nightly", "--continue-on-error")  # no --match-all-labels
    assert (run.image, run.image_days, run.job_timeout_min, run.shards) == ("rocm/sgl-dev:miles-rocm720-mi35x-{date}", 7, 180, 1)
    # the consumer runs the image's copy of miles: an on-demand run installs the PR's, as miles' own job does
    assert run.install and run.install[0] == "pip install -e . --no-deps --break-system-packages"
    assert run.env == ()  # not the consumer's PYTHONPATH=/root/miles (the image's copy)


def test_the_runner_flags_are_the_default_branchs_never_one_it_rejects(miles_ci):
    """A flag the default branch's runner does not accept (or a value outside its choices) is left
    out and said; the runner's options come from the default branch, whatever the PR's copy says."""
    config = miles_config("  stage-c-4-gpu-mi350:\n    workflow: rocm-on-demand.yml\n"
                          "    runner_flags: [--list-only-not-here, --max-attempts, '2', --nightly]\n")
    run = _plan(miles_ci, "stage-c-4-gpu-mi350", config)
    assert "--list-only-not-here" not in run.runner_flags and "--max-attempts" in run.runner_flags
    assert any("--list-only-not-here" in n for n in run.notes)


def test_miles_label_policy_is_read_and_the_nightly_leaves_out_long_tests():
    policy = read_label_policy(DirectoryTree(MILES).read, "tests/ci/run_suite.py")
    nightly = policy.selection("nightly")
    assert nightly.admit_nightly and nightly.exclude == {"long", "ft-long"}
    assert not nightly.selects(["long"], False) and nightly.selects(["long", "fsdp"], False) and nightly.selects([], False)
    regular = policy.selection("regular")
    assert not regular.admit_nightly and not regular.selects(["fsdp"], False)
    assert policy.selection("regular", match_all=True).selects(["long"], False)


# -- building blocks ---------------------------------------------------------------------------------
@pytest.mark.parametrize("labels, gpus", [
    (["self-hosted", "amd", "mi350", "4gpu"], 4), (["linux-mi35x-gpu-8"], 8), (["linux-mi35x-gpu-8.fabric"], 8),
    (["linux-mi300-1gpu-sglang"], 1), (["ubuntu-latest"], None)])
def test_gpus_of_labels(labels, gpus):
    assert gpus_of_labels(labels) == gpus


@pytest.mark.parametrize("expr, value", [
    ("format('linux-{0}-1gpu-sglang', inputs.runner_arch || 'mi300')", "linux-mi300-1gpu-sglang"),
    ("(inputs.runner_arch || 'mi300') == 'mi300' && 75 || 60", 75),
    ("github.event_name == 'workflow_dispatch' && '--match-all-labels' || ''", "--match-all-labels"),
    ("(github.event_name == 'schedule' || inputs.continue_on_error) && '--continue-on-error' || ''", "--continue-on-error"),
    ("fromJson(inputs.rocm_version && inputs.rocm_version != 'all' && format('[\"{0}\"]', inputs.rocm_version) "
     "|| '[\"rocm724\", \"rocm720\"]')", ["rocm724", "rocm720"]),
    ("needs.check-changes.outputs.continue_on_error == 'true' && '--continue-on-error' || ''", UNKNOWN),
    ("false && needs.x.outputs.y", False),
])
def test_expressions_are_evaluated_as_a_manual_dispatch(expr, value):
    scope = Scope(inputs={"runner_arch": "mi300", "continue_on_error": True, "rocm_version": "all"})
    assert evaluate(expr, scope) == value if value is not UNKNOWN else evaluate(expr, scope) is UNKNOWN
    assert substitute("a ${{ inputs.x }} b", Scope(inputs={"x": 3})) == "a 3 b"


def test_a_dated_tag_is_read_from_the_script_that_resolves_it():
    doc = yaml.safe_load((SGLANG / CONSUMER_PATH).read_text())
    step = next(s for s in doc["jobs"]["test-miles-mi35x"]["steps"] if "Resolve" in s.get("name", ""))
    shell = Shell(step["run"], Scope(inputs={"image_tag": ""}))
    assert (shell.written("MILES_IMAGE"), shell.days) == ("rocm/sgl-dev:miles-rocm720-mi35x-{date}", 7)
    # an image_tag input given by hand wins, as in the script
    assert Shell(step["run"], Scope(inputs={"image_tag": "miles-rocm720-mi35x-20260621"})).written("MILES_IMAGE") \
        == "rocm/sgl-dev:miles-rocm720-mi35x-20260621"


def test_choose_job_prefers_the_fleet_then_the_kind(sglang_ci):
    job = choose_job("stage-b-test-large-8-gpu-mi35x-disaggregation-amd", sglang_ci.jobs, sglang_ci.fleet)
    # pr-test-amd-rocm720.yml runs on pull requests; pr-test-amd.yml (the ROCm 7.0 shadow) only on a schedule
    assert job.workflow.endswith("pr-test-amd-rocm720.yml") and job.kind == "pr"
    assert job.pool == ("linux-mi35x-gpu-8.fabric",)


def test_without_a_job_or_a_fleet_the_plan_is_refused_with_the_reason():
    with pytest.raises(NoRunner, match="no workflow of the default branch runs it"):
        plan("nightly-stage-c-8-gpu-mi350", Dispatch(workflow="x.yml"), None, [], jobs=[], fleet=[])
    jobs = read_suite_jobs({}, {"o/r:w.yml": (SGLANG / CONSUMER_PATH).read_text()}, runner="run_suite")
    with pytest.raises(NoRunner, match="no fleet"):
        plan("nightly-stage-c-4-gpu-mi350", Dispatch(workflow="x.yml"), None, [], jobs=jobs, fleet=[])


def test_the_vendor_script_regenerates_the_fixtures(tmp_path):
    """The fixtures are what tests/fixtures/targets/vendor_ci.py writes from mirrors of the
    targets (CI_REGISTRAR_TARGET_MIRRORS names their directory; skipped without it)."""
    import importlib.util
    import os

    mirrors = Path(os.environ.get("CI_REGISTRAR_TARGET_MIRRORS", "/nonexistent"))
    if not (mirrors / "radixark+miles" / "repo").exists() or shutil.which("git") is None:
        pytest.skip("CI_REGISTRAR_TARGET_MIRRORS does not name mirrors of the targets")
    spec = importlib.util.spec_from_file_location("vendor_ci", TARGETS / "vendor_ci.py")
    vendor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vendor)
    vendor.HERE = tmp_path
    vendor.main(mirrors)
    for target, spec_ in vendor.TARGETS.items():
        for path in spec_["whole"] + spec_["cut"]:
            assert (tmp_path / target / spec_["dir"] / path).read_bytes() == (TARGETS / target / spec_["dir"] / path).read_bytes()


def test_the_plan_shows_the_environment_and_invocations_it_carries(sglang_ci):
    from checks.target.dispatch_plan import plan_lines

    run = _plan(sglang_ci, "nightly-amd-accuracy-8-gpu-mi35x-grok2", sglang_config())
    view = run.as_json()
    assert view["env"] == [f"{k}={v}" for k, v in run.env] and "RCCL_MSCCL_ENABLE=0" in view["env"]
    lines = plan_lines(view)
    assert "environment: `RCCL_MSCCL_ENABLE=0`" in lines
    assert "invocations: 1 (the job runs the suite once)" in lines
    # what the dispatch carries is what is shown: the plan input's env
    assert json.loads(run.inputs()["plan"])["env"] == view["env"]
