"""Consumers read, never typed (issue 10, item 3): what the workflows run and how (`--suite`,
`--hw`, `--nightly`/`--cadence`, matrices, reusable workflows' `with:` inputs, shards, timeouts),
external consumers read from their own workflow file (engine, CLI `--consumers-from`, the App
through the contents API with ETags), and the rules built on them: REG013 with `--hw`, REG015,
REG016, REG017.

Workflow fixtures are sglang's own files (tests/fixtures/targets/sglang/workflows-382343f/,
Apache-2.0) or a few lines written here.
"""

from __future__ import annotations

import json

import pytest

from checks.config.schema import Config, Consumer, load_config
from checks.engine import check_tree
from checks.limits import Budget, Limits
from checks.model import Severity
from checks.scanning.tree import MemoryTree
from checks.workflows.runs import read_consumers, read_workflow
from tests import FIXTURES
from tests.fixtures import miles
from tests.fixtures.miles import miles_tree, test_file
from tests.simulator.fixtures import github_sim  # noqa: F401  (the simulated GitHub, validated against its REST description)

test_file.__test__ = False

SGLANG_WORKFLOWS = FIXTURES / "targets" / "sglang" / "workflows-382343f"
WF = ".github/workflows"
CFG = ".github/ci-registrar.yml"
NIGHTLY_LABEL = miles.SGLANG_NIGHTLY_LABEL
P = "tests/e2e/test_x.py"


def sglang_workflow(name: str) -> str:
    return (SGLANG_WORKFLOWS / name).read_text()


def uses_of(files: dict[str, str], config: Config | None = None, consumers_from=None, budget: Budget | None = None):
    config = config or Config(consumers=[])
    budget = budget or Budget()
    tree = MemoryTree(files)
    uses, findings = read_consumers(tree, config, sorted(p for p in files if p.startswith(WF)), budget, consumers_from=consumers_from)
    return uses, findings, budget


def by_suite(uses) -> dict:
    out: dict = {}
    for u in uses:
        out.setdefault(u.suite, []).append(u)
    return out


def check(consumers_from=miles.CONSUMERS, **extra):
    return check_tree(MemoryTree(miles_tree(**extra)), consumers_from=consumers_from)


def rules_of(findings) -> set[str]:
    return {f.rule for f in findings}


def only(findings, rule: str):
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, [(f.rule, f.file, f.message) for f in findings]
    return hits[0]


def span(f):
    return (f.span.line, f.span.column, f.span.end_line, f.span.end_column)


# -- reading: flags, matrices, reusable workflows -------------------------------------------------


def test_the_sglang_miles_nightly_matrix_with_hw_and_cadence():
    uses, findings, _ = uses_of({f"{WF}/nightly.yml": sglang_workflow("nightly-test-amd-miles-rocm720.yml")})
    assert findings == []
    got = {(u.suite, u.hw, u.nightly, u.timeout_minutes, u.shards, u.job) for u in uses}
    assert got == {(f"nightly-stage-c-{n}-gpu-mi350", "rocm", True, 180, 1, "test-miles-mi35x") for n in (2, 4, 8)}
    assert {span(u) for u in uses if u.suite == "nightly-stage-c-4-gpu-mi350"} == {(34, 20, 34, 47)}  # its matrix entry


def test_a_bare_nightly_flag_and_the_step_timeout():
    uses, _, _ = uses_of({f"{WF}/nightly-test-amd.yml": sglang_workflow("nightly-test-amd.yml")})
    [u] = uses
    assert (u.suite, u.hw, u.nightly, u.timeout_minutes, u.shards) == ("nightly-amd-1-gpu", "amd", True, 90, 1)


def test_reusable_workflow_inputs_from_each_caller():
    files = {f"{WF}/pr-test.yml": sglang_workflow("pr-test.yml"), f"{WF}/_pr-test-stage.yml": sglang_workflow("_pr-test-stage.yml")}
    uses, findings, _ = uses_of(files)
    assert findings == []
    got = {(u.suite, u.consumer, u.hw, u.nightly, u.timeout_minutes, u.shards, u.job) for u in uses}
    assert got == {
        # run_timeout_minutes from the caller's with:; the shard count is fromJson(...) at run time: unknown (0)
        ("base-a-test-1-gpu-small", f"{WF}/pr-test.yml", "cuda", False, 10, 0, "base-a-test-1-gpu-small"),
        ("base-b-test-1-gpu-large", f"{WF}/pr-test.yml", "cuda", False, 30, 0, "base-b-test-1-gpu-large"),
        ("base-c-test-8-gpu-h200", f"{WF}/pr-test.yml", "cuda", False, 30, 0, "base-c-test-8-gpu-h200"),
    }
    assert all(u.file == f"{WF}/pr-test.yml" for u in uses)
    # the reusable workflow alone runs nothing: self_name has no default
    alone, _, _ = uses_of({f"{WF}/_pr-test-stage.yml": sglang_workflow("_pr-test-stage.yml")})
    assert alone == []


STAGE = """\
on:
  workflow_call:
    inputs:
      suite: {type: string, required: true}
      hw: {type: string, default: cuda}
      cadence: {type: string, default: regular}
      shards: {type: string, default: '1'}
      timeout: {type: string, default: '45'}
jobs:
  run:
    strategy:
      matrix:
        part: [0, 1, 2]
    steps:
      - timeout-minutes: ${{ fromJson(inputs.timeout) }}
        run: |
          python3 run_suite.py --hw ${{ inputs.hw }} --suite ${{ inputs.suite }} \\
            --cadence ${{ inputs.cadence }} --auto-partition-id ${{ matrix.part }} --auto-partition-size ${{ inputs.shards }}
"""

CALLER = """\
on: [schedule]
jobs:
  nightly:
    strategy:
      matrix:
        include:
          - suite: stage-a
            hw: rocm
          - suite: stage-b
            hw: cpu
    uses: ./.github/workflows/_stage.yml
    with:
      suite: ${{ matrix.suite }}
      hw: ${{ matrix.hw }}
      cadence: nightly
      shards: '3'
  plain:
    uses: ./.github/workflows/_stage.yml
    with:
      suite: stage-c
"""


def test_a_caller_matrix_feeds_the_inputs_row_by_row_and_defaults_fill_the_rest():
    uses, findings, _ = uses_of({f"{WF}/_stage.yml": STAGE, f"{WF}/caller.yml": CALLER})
    assert findings == []
    got = {(u.suite, u.hw, u.nightly, u.shards, u.timeout_minutes, u.job) for u in uses}
    assert got == {
        ("stage-a", "rocm", True, 3, 45, "nightly"),  # suite and hw paired as the matrix rows pair them
        ("stage-b", "cpu", True, 3, 45, "nightly"),
        ("stage-c", "cuda", False, 1, 45, "plain"),  # hw, cadence, shards: the inputs' defaults
    }
    assert {u.span.line for u in uses if u.suite == "stage-a"} == {7}  # the caller's matrix entry


@pytest.mark.parametrize("flags, nightly", [
    ("", False), ("--nightly", True), ("--cadence nightly", True), ("--cadence=weekly", True),
    ("--cadence release", True), ("--cadence regular", False),
    ("${{ inputs.scheduled && '--nightly' || '' }}", None),  # decided at run time
    ("--cadence ${{ github.event.inputs.cadence }}", None),
])
def test_which_invocations_select_nightly_registrations(flags, nightly):
    wf = f"on: push\njobs:\n  j:\n    steps:\n      - run: python3 run_suite.py --hw rocm --suite s1 {flags}\n"
    [u] = read_workflow(f"{WF}/w.yml", wf)[0]
    assert u.nightly is nightly and u.hw == "rocm"


def test_flags_on_continuation_lines_belong_to_the_command():
    wf = ("on: push\njobs:\n  j:\n    steps:\n      - run: |\n          python3 run_suite.py \\\n"
          "            --suite s1 \\\n            --cadence nightly\n          python3 run_suite.py --suite s2\n")
    got = {(u.suite, u.nightly, u.hw) for u in read_workflow(f"{WF}/w.yml", wf)[0]}
    assert got == {("s1", True, None), ("s2", False, None)}


def test_a_matrix_axis_computed_at_run_time_gives_an_unknown_shard_count():
    wf = ("on: push\njobs:\n  j:\n    strategy:\n      matrix:\n        part: ${{ fromJson(needs.a.outputs.parts) }}\n"
          "    steps:\n      - run: run_suite.py --suite s1 --auto-partition-id ${{ matrix.part }}\n")
    [u] = read_workflow(f"{WF}/w.yml", wf)[0]
    assert u.shards == 0


def test_caller_expansions_count_against_the_matrix_cap():
    include = "\n".join(f"          - suite: s{i}" for i in range(40))
    caller = ("on: push\njobs:\n  wide:\n    strategy:\n      matrix:\n        include:\n" + include +
              "\n    uses: ./.github/workflows/_stage.yml\n    with:\n      suite: ${{ matrix.suite }}\n")
    budget = Budget(Limits(matrix_combinations=50))
    uses, _, budget = uses_of({f"{WF}/_stage.yml": STAGE, f"{WF}/caller.yml": caller}, budget=budget)
    assert len(uses) == 40  # under the cap: every row read
    budget = Budget(Limits(matrix_combinations=30))
    uses, _, budget = uses_of({f"{WF}/_stage.yml": STAGE, f"{WF}/caller.yml": caller}, budget=budget)
    assert uses == [] and budget.consumers_partial
    [f] = budget.findings
    assert f.rule == "REG902" and "matrix_combinations = 30" in f.message and "`wide`" in f.message


# -- external consumers ---------------------------------------------------------------------------


def test_the_built_in_consumer_is_read_from_its_file():
    [c] = Config().consumers
    assert (c.repository, c.workflow, c.suites, c.timeout_minutes, c.shards) == (
        "sgl-project/sglang", ".github/workflows/nightly-test-amd-miles-rocm720.yml", None, None, None)
    uses, findings, budget = uses_of({}, Config(), consumers_from=miles.CONSUMERS)
    assert findings == [] and not budget.consumers_partial
    assert {(u.suite, u.consumer, u.file, u.external, u.timeout_minutes, u.hw, u.nightly) for u in uses} == {
        (f"nightly-stage-c-{n}-gpu-mi350", NIGHTLY_LABEL, None, True, 180, "rocm", True) for n in (2, 4, 8)}


def test_a_local_copy_is_matched_by_file_name():
    uses, findings, _ = uses_of({}, Config(), consumers_from={"/tmp/x/nightly-test-amd-miles-rocm720.yml": miles.SGLANG_NIGHTLY.encode()})
    assert findings == [] and {u.consumer for u in uses} == {NIGHTLY_LABEL}


def test_a_copy_matching_no_configured_consumer_is_one_more():
    wf = b"on: push\njobs:\n  j:\n    steps:\n      - run: run_suite.py --hw cpu --suite stage-b-cpu\n"
    uses, findings, _ = uses_of({}, Config(consumers=[]), consumers_from={"other/repo:ci.yml": wf})
    assert findings == [] and [(u.suite, u.consumer, u.external) for u in uses] == [("stage-b-cpu", "other/repo:ci.yml", True)]


def test_an_external_consumer_not_given_is_a_warning_not_a_failure():
    report = check(consumers_from=None)
    f = only(report.findings, "REG017")
    assert f.severity is Severity.WARNING and not report.failed
    assert f.file == "tests/ci/run_suite.py"  # no configuration file: the inventory
    assert NIGHTLY_LABEL in f.message and "--consumers-from" in f.message
    # its suites may be consumed there: no REG013/REG016 guessed meanwhile
    report = check(consumers_from=None, **{P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-2-gpu-mi350", labels=["long"], nightly=True)')})
    assert not rules_of(report.findings) & {"REG013", "REG016"}


@pytest.mark.parametrize("data, why", [
    ("GitHub answered 403 reading it", "GitHub answered 403"),
    (b"\xff\xfe not utf-8", "not UTF-8"),
    (b"jobs: [unclosed\n", "not valid YAML"),
])
def test_an_unreadable_external_consumer_says_what_and_why(data, why):
    report = check(consumers_from={NIGHTLY_LABEL: data}, **{CFG: "rules: {}\n"})
    f = only(report.findings, "REG017")
    assert f.file == CFG and NIGHTLY_LABEL in f.message and why in f.message
    assert not report.failed


def test_an_oversized_external_consumer_is_not_read():
    report = check_tree(MemoryTree(miles_tree()), consumers_from={NIGHTLY_LABEL: b"#" * 2000}, limits=Limits(file_bytes=1000))
    [f] = [x for x in report.findings if x.rule == "REG902" and NIGHTLY_LABEL in x.message]
    assert f.file == "tests/ci/run_suite.py" and "file_bytes = 1000" in f.message


def test_the_hand_typed_form_still_works_and_the_read_form_refuses_its_fields():
    cfg = "consumers:\n  - repository: o/r\n    workflow: .github/workflows/n.yml\n    suites: [nightly-stage-c-2-gpu-mi350]\n    timeout_minutes: 60\n"
    config, problems = load_config(cfg)
    assert problems == [] and config.consumers == [Consumer("o/r", ".github/workflows/n.yml", ["nightly-stage-c-2-gpu-mi350"], 60)]
    uses, findings, _ = uses_of({}, config)
    assert [(u.suite, u.timeout_minutes, u.shards) for u in uses] == [("nightly-stage-c-2-gpu-mi350", 60, 1)] and findings == []
    _, problems = load_config("consumers:\n  - repository: o/r\n    workflow: .github/workflows/n.yml\n    timeout_minutes: 60\n")
    [p] = problems
    assert p.rule == "REG900" and "hand-typed" in p.message
    _, problems = load_config("consumers:\n  - repository: not a repo\n    workflow: ../x.yml\n")
    assert {p.rule for p in problems} == {"REG900"} and len(problems) == 2


# -- the rules ------------------------------------------------------------------------------------

RUN_SUITE_WITH_Z = miles.RUN_SUITE.replace('"stage-b-cpu",', '"stage-b-cpu",\n        "stage-z-cpu",')


def test_reg015_a_workflow_runs_a_suite_no_registration_names():
    wf = "on: push\njobs:\n  z:\n    steps:\n      - run: python3 tests/ci/run_suite.py --hw cpu --suite stage-z-cpu\n"
    report = check(**{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z, f"{WF}/z.yml": wf})
    [f] = [x for x in report.findings if x.rule == "REG015" and x.file == f"{WF}/z.yml"]
    assert span(f) == (5, 61, 5, 72) and f.severity is Severity.WARNING
    assert "`stage-z-cpu`" in f.message and "`--hw cpu`" in f.message
    registered = check(**{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z, f"{WF}/z.yml": wf,
                          P: test_file('register_cpu_ci(est_time=10, suite="stage-z-cpu")')})
    assert not [x for x in registered.findings if x.rule == "REG015" and x.file == f"{WF}/z.yml"]


def test_reg015_counts_registrations_of_the_backend_the_job_selects():
    wf = "on: push\njobs:\n  z:\n    steps:\n      - run: python3 tests/ci/run_suite.py --hw cuda --suite stage-z-cpu\n"
    report = check(**{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z, f"{WF}/z.yml": wf,
                      P: test_file('register_cpu_ci(est_time=10, suite="stage-z-cpu")')})
    assert [x for x in report.findings if x.rule == "REG015" and x.file == f"{WF}/z.yml"]


def test_reg015_for_the_external_consumer_points_at_the_inventory():
    report = check()
    [f] = [x for x in report.findings if x.rule == "REG015" and NIGHTLY_LABEL in x.message]
    assert f.file == "tests/ci/run_suite.py" and span(f) == (21, 9, 21, 38)  # "nightly-stage-c-2-gpu-mi350"


def test_reg015_in_a_diff_only_for_workflows_the_diff_changed():
    wf = "on: push\njobs:\n  z:\n    steps:\n      - run: python3 tests/ci/run_suite.py --hw cpu --suite stage-z-cpu\n"
    base = miles_tree(**{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z})
    head = miles_tree(**{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z, f"{WF}/z.yml": wf})
    report = check_tree(MemoryTree(head), MemoryTree(base), {f"{WF}/z.yml": None}, consumers_from=miles.CONSUMERS)
    assert {x.file for x in report.findings if x.rule == "REG015"} == {f"{WF}/z.yml"}


def test_reg016_nightly_registration_in_a_suite_only_regular_jobs_run():
    # pr-test-rocm.yml runs stage-c-4-gpu-mi350 without --nightly/--cadence: a nightly=True test never
    # runs, which is REG013's one finding (REG016 reports nothing of its own)
    report = check(**{P: test_file('register_rocm_ci(est_time=10, suite="stage-c-4-gpu-mi350", labels=["long"], nightly=True)')})
    assert "REG016" not in rules_of(report.findings)
    f = only(report.findings, "REG013")
    assert f.file == P and f.severity is Severity.FAILURE and f.message.startswith("this test never runs")
    assert "pr-test-rocm.yml" in f.message and "without `--nightly`" in f.message


def test_reg016_negative_the_nightly_consumer_passes_cadence_nightly():
    report = check(**{P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], nightly=True)')})
    assert not {"REG013", "REG016"} & rules_of(report.findings)


def test_reg016_when_the_external_nightly_drops_its_cadence_flag():
    stale = miles.SGLANG_NIGHTLY.replace(" --cadence nightly", "")
    report = check(consumers_from={NIGHTLY_LABEL: stale.encode()},
                   **{P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], nightly=True)')})
    f = only(report.findings, "REG013")
    assert NIGHTLY_LABEL in f.message and f.severity is Severity.FAILURE


def test_reg016_negative_when_the_flag_is_decided_at_run_time():
    wf = ("on: push\njobs:\n  j:\n    steps:\n      - run: python3 tests/ci/run_suite.py --hw rocm --suite stage-c-4-gpu-mi350 "
          "${{ inputs.nightly && '--nightly' || '' }}\n")
    report = check(**{f"{WF}/pr-test-rocm.yml": wf,
                      P: test_file('register_rocm_ci(est_time=10, suite="stage-c-4-gpu-mi350", labels=["long"], nightly=True)')})
    assert not {"REG013", "REG016"} & rules_of(report.findings)


def test_reg013_a_suite_run_only_for_another_backend():
    rocm_as_cuda = miles.PR_TEST_ROCM.replace("--hw rocm", "--hw cuda")
    report = check(**{f"{WF}/pr-test-rocm.yml": rocm_as_cuda,
                      P: test_file('register_rocm_ci(est_time=10, suite="stage-c-4-gpu-mi350", labels=["long"])')})
    f = only(report.findings, "REG013")
    assert f.file == P and "`--hw cuda`" in f.message and "rocm" in f.message


def test_reg030_reads_the_consumer_timeout_from_a_reusable_workflow_input():
    # 2 x 1000 s over a 30-minute step (run_timeout_minutes '30' passed by the caller), one shard
    stage = STAGE.replace("--auto-partition-id ${{ matrix.part }} --auto-partition-size ${{ inputs.shards }}", "")
    caller = "on: push\njobs:\n  c:\n    uses: ./.github/workflows/_stage.yml\n    with:\n      suite: stage-c-2-gpu-h200\n      timeout: '30'\n"
    files = {f"{WF}/_stage.yml": stage, f"{WF}/caller.yml": caller}
    files.update({f"tests/e2e/test_big{i}.py": test_file('register_cuda_ci(est_time=1000, suite="stage-c-2-gpu-h200", labels=["long"])') for i in range(2)})
    report = check(**files)
    [f] = [x for x in report.findings if x.rule == "REG030" and "caller.yml" in x.message]
    assert "30 min" in f.message and "2000 s" in f.message


# -- the command line -----------------------------------------------------------------------------


def test_the_cli_reads_a_local_copy_with_consumers_from(tmp_path):
    from tests.bot.test_cli import cli
    from tests.bot.commands.test_seed_pr import write

    repo = tmp_path / "miles"
    write(repo, miles_tree())
    done = cli("check", "--repo", str(repo), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "REG017" in {f["rule"] for f in json.loads(done.stdout)["findings"]}
    done = cli("check", "--repo", str(repo), "--format", "json", "--consumers-from", str(miles.SGLANG_NIGHTLY_FILE))
    assert done.returncode == 0, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert "REG017" not in {f["rule"] for f in findings}
    assert any(f["rule"] == "REG015" and NIGHTLY_LABEL in f["message"] for f in findings)  # read: it runs -2-gpu- too
    done = cli("check", "--repo", str(repo), "--consumers-from", str(tmp_path / "missing.yml"))
    assert done.returncode == 2 and "missing.yml" in done.stderr


# -- the App: the external workflow through the contents API, at its default branch, by ETag -----


def _app_world(sim, tmp_path, *, readable: bool, nightly: str):
    from app import create_app
    from bot.worker.queue import QueueConfig, open_queue
    from bot.infra.settings import load_settings
    from bot.store.db import upgrade
    from tests.service_support import World, env_for

    gh_app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    repo.commit(miles_tree(), branch="main")
    sglang = sim.create_repo("sgl-project/sglang", default_branch="main")
    sglang.commit({miles.SGLANG_NIGHTLY_PATH: nightly, "README.md": "sglang\n"}, branch="main")
    sim.install(gh_app, *(["radixark/miles", "sgl-project/sglang"] if readable else ["radixark/miles"]))
    source = test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"], nightly=True)')
    repo.commit({"tests/e2e/test_new.py": source}, branch="nightly")
    pr = sim.open_pull_request(repo, "nightly", "main", author="bob")
    settings = load_settings(env_for(sim, gh_app, tmp_path))
    upgrade(settings.database_url)
    queue = open_queue(settings, config=QueueConfig(f"c-{tmp_path.name[-8:]}", None, str(tmp_path / "queue.db"), 30))
    return World(sim, gh_app, repo, None, settings, queue, create_app(settings, queue=queue), pr), sglang


def _run(world, action="opened"):
    from bot.worker.handlers.pull_requests import CHECK_NAME

    pr = world.sim.pull(world.repo, world.pr.number)
    world.deliver(world.sim.webhook("pull_request", action, app=world.app, repo=world.repo, pull=pr, sender="bob"))
    world.drain()
    return world.sim.check_runs(world.repo, sha=pr.head_sha, name=CHECK_NAME)[-1]


def _contents_statuses(sim) -> list[int]:
    return [r["status"] for r in sim.requests_log
            if r["path"].startswith("/repos/sgl-project/sglang/contents/.github/workflows/nightly-test-amd-miles-rocm720.yml")]


def test_the_app_reads_the_external_consumer_and_follows_its_changes(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_CONSUMER_TTL_S", "0")  # revalidated by ETag at every check
    stale = miles.SGLANG_NIGHTLY.replace(" --cadence nightly", "")
    world, sglang = _app_world(github_sim, tmp_path, readable=True, nightly=stale)
    run = _run(world)
    rules = {a["title"].split()[0] for a in run["annotations"]}
    assert "REG013" in rules and "REG017" not in rules  # read: its jobs leave nightly=True tests out
    assert _contents_statuses(github_sim) == [200]
    # sglang fixes its workflow: the next check reads the new file (no hand-typed copy to update)
    sglang.commit({miles.SGLANG_NIGHTLY_PATH: miles.SGLANG_NIGHTLY}, branch="main")
    github_sim.push(world.repo, "nightly", {"tests/e2e/test_b.py": test_file('register_cpu_ci(est_time=10, suite="stage-a-cpu")')})
    run = _run(world, "synchronize")
    assert "REG013" not in {a["title"].split()[0] for a in run["annotations"]}
    # unchanged since: asked with If-None-Match, answered 304 from the ETag
    github_sim.push(world.repo, "nightly", {"tests/e2e/test_c.py": test_file('register_cpu_ci(est_time=10, suite="stage-a-cpu")')})
    _run(world, "synchronize")
    assert _contents_statuses(github_sim) == [200, 200, 304]


def test_the_app_keeps_an_external_consumer_for_its_ttl(github_sim, tmp_path, monkeypatch):
    """Within CI_REGISTRAR_CONSUMER_TTL_S a check spends no request on the external workflow."""
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    world, _ = _app_world(github_sim, tmp_path, readable=True, nightly=miles.SGLANG_NIGHTLY)
    _run(world)
    github_sim.push(world.repo, "nightly", {"tests/e2e/test_b.py": test_file('register_cpu_ci(est_time=10, suite="stage-a-cpu")')})
    run = _run(world, "synchronize")
    assert "REG017" not in {a["title"].split()[0] for a in run["annotations"]}  # still known
    assert _contents_statuses(github_sim) == [200]  # read once, not again
    monkeypatch.setenv("CI_REGISTRAR_CONSUMER_TTL_S", "0")  # its time is up
    github_sim.push(world.repo, "nightly", {"tests/e2e/test_c.py": test_file('register_cpu_ci(est_time=10, suite="stage-a-cpu")')})
    _run(world, "synchronize")
    assert _contents_statuses(github_sim) == [200, 304]


def test_the_app_warns_when_the_external_consumer_is_not_readable(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    world, _ = _app_world(github_sim, tmp_path, readable=False, nightly=miles.SGLANG_NIGHTLY)
    run = _run(world)
    assert run["status"] == "completed" and run["conclusion"] != "failure"
    [a] = [a for a in run["annotations"] if a["title"].startswith("REG017")]
    assert a["annotation_level"] == "warning" and a["path"] == "tests/ci/run_suite.py"
    assert NIGHTLY_LABEL in a["message"] and "sgl-project/sglang" in a["message"]
    assert _contents_statuses(github_sim) == [404]


def test_reg015_skipped_where_a_registration_suite_is_not_read():
    # a suite that is not a literal (composed, or an expression) may be the one the job runs
    wf = "on: push\njobs:\n  z:\n    steps:\n      - run: python3 tests/ci/run_suite.py --hw cpu --suite stage-z-cpu\n"
    report = check(**{"tests/ci/run_suite.py": RUN_SUITE_WITH_Z, f"{WF}/z.yml": wf,
                      P: test_file('register_cpu_ci(est_time=10, suite=SUITE)')})
    assert not [x for x in report.findings if x.rule == "REG015" and x.file == f"{WF}/z.yml"]


def test_reg016_negative_for_a_hand_typed_consumer_that_cannot_say_its_cadence():
    cfg = ("consumers:\n  - repository: o/r\n    workflow: .github/workflows/n.yml\n"
           "    suites: [nightly-stage-c-2-gpu-mi350]\n")
    report = check(**{CFG: cfg, P: test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-2-gpu-mi350", labels=["long"], nightly=True)')})
    assert not rules_of(report.findings) & {"REG013", "REG016", "REG017"}


STAGE_WITH_SHELL_VARIABLES = """\
on:
  workflow_call:
    inputs:
      test_suite: {type: string}
      is_nightly_pipeline_job: {type: boolean, default: false}
jobs:
  run:
    timeout-minutes: 300
    steps:
      - run: |
          test_suite="${{ inputs.test_suite }}"
          NIGHTLY_FLAG=""
          if [ "${{ inputs.is_nightly_pipeline_job }}" = "true" ]; then
            NIGHTLY_FLAG="--nightly --continue-on-error"
          fi
          PARTITION_ARGS="--auto-partition-id ${PARTITION_ID} --auto-partition-size ${PARTITION_SIZE}"
          ${PYTHON_FOR_SGLANG} -u run_suite.py --hw npu --suite ${test_suite} ${NIGHTLY_FLAG} ${PARTITION_ARGS}
"""
NPU_CALLER = """\
on: {schedule: [{cron: "0 1 * * *"}]}
jobs:
  perf:
    uses: ./.github/workflows/_stage.yml
    with:
      test_suite: nightly-perf-2-npu-a3
      is_nightly_pipeline_job: true
"""


def test_a_runner_line_with_the_scripts_own_shell_variables():
    """sglang's NPU stages: the suite comes through `test_suite="${{ inputs.test_suite }}"`, the
    nightly flag through a variable set under an `if`, the partition flags through another."""
    uses, findings, _ = uses_of({f"{WF}/_stage.yml": STAGE_WITH_SHELL_VARIABLES, f"{WF}/nightly.yml": NPU_CALLER})
    [use] = by_suite(uses)["nightly-perf-2-npu-a3"]
    assert use.hw == "npu" and use.nightly is None  # nightly decided at run time: REG016 stays quiet
    assert use.shards == 0  # the partition size is computed by the script: REG030 skips it
    assert findings == []


def test_a_suite_argument_of_another_program_is_not_a_consumer():
    wf = ("on: push\njobs:\n  gen:\n    steps:\n      - run: python -m pkg.gen_outputs --suite 1-npu --out x\n"
          "      - run: python3 tests/ci/run_suite.py --hw npu --suite real-suite\n")
    uses, _, _ = uses_of({f"{WF}/gen.yml": wf})
    assert set(by_suite(uses)) == {"real-suite"}


def test_another_repositorys_runner_of_the_same_name_is_not_a_consumer():
    """sglang's nightly runs miles' runner (`tests/ci/run_suite.py`, in a miles checkout) for miles'
    suites: checked as sglang (runner `test/run_suite.py`), those are not sglang's consumers; an
    absolute path to the same runner (a checkout elsewhere) and `cd test && python3 run_suite.py` are."""
    from checks.config.schema import load_config

    wf = ("on: push\njobs:\n  j:\n    steps:\n"
          "      - run: python3 tests/ci/run_suite.py --hw rocm --suite miles-suite\n"
          "      - run: python3 sglang/multimodal_gen/test/run_suite.py --suite diffusion-suite\n"
          "      - run: cd test && python3 run_suite.py --hw amd --suite ours-1\n"
          "      - run: python3 /sglang-checkout/test/run_suite.py --hw amd --suite ours-2\n")
    config, _ = load_config("paths:\n  suites_module: test/run_suite.py\n  register_module: python/sglang/test/ci/ci_register.py\n")
    tree = MemoryTree({f"{WF}/j.yml": wf})
    uses, _ = read_consumers(tree, config, [f"{WF}/j.yml"])
    assert {u.suite for u in uses} == {"ours-1", "ours-2"}
    # read for miles (its runner is tests/ci/run_suite.py), the same workflow runs miles' suite
    miles, _ = load_config("consumers: []\n")
    uses, _ = read_consumers(tree, miles, [f"{WF}/j.yml"])
    assert "miles-suite" in {u.suite for u in uses}
