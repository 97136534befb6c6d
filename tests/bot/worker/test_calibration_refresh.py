"""Refresh after ingest (issue 25, item 6): a durations ingest that changes a REG020 verdict asks
for a refresh of the calibration pull request, at most once per
`calibration.ingest_refresh_every_hours` per repository; the worker's next pass does it. Real
PostgreSQL, the GitHub simulator, the App's webhook path."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from bot.worker.calibration_pr import after_ingest, changed_verdicts, sweep
from bot.durations.export import export_records
from bot.durations.ingest import ingest_json
from bot.github.client import GitHub
from bot.github.retry import RetryPolicy
from bot.store import calibration as runs
from bot.store import service as store
from checks.config.schema import load_config
from tests.patience import PATIENCE
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.bot.worker.test_calibration_pr import BRANCH, CONFIG, REPO, _world

BCG = "test/registered/amd/test_kimi_k25_mxfp4_bcg_mi35x.py"
DEEPSEEK = "test/registered/amd/test_deepseek_r1_mxfp4_8gpu.py"
SUITE = "stage-c-test-large-8-gpu-amd-mi35x"


def _runs(file: str, seconds: float, at: datetime, count: int = 1, run_id: int = 1) -> str:
    return json.dumps([{"repository": REPO, "file": file, "backend": "rocm", "suite": SUITE, "hardware": "MI355X",
                        "elapsed_s": seconds, "outcome": "PASS", "attempt": 1, "run_id": run_id + i, "job_id": run_id + i,
                        "workflow": ".github/workflows/pr-test-amd.yml", "measured_at": (at + timedelta(minutes=i)).isoformat(),
                        "source": "workflow_run:" + REPO} for i in range(count)])


def _opened(sim, tmp_path):
    world = _world(sim, tmp_path)
    url = world.settings.database_url
    store.record_installation(url, installation_id=world.installation.id, account="sgl-project", target_type="Organization",
                              repository_selection="selected", repositories=[REPO])
    github = GitHub(sim.url, str(world.app.id), world.app.private_key_pem, policy=RetryPolicy(base_s=0.01, read_timeout_s=PATIENCE))
    t0 = datetime.now(timezone.utc)
    (first,) = sweep(github, url, now=t0)
    assert first[1].action == "opened"
    return world, url, github, t0, first[1].number


def test_an_ingest_that_changes_a_verdict_asks_once_per_interval(github_sim, tmp_path):
    sim = github_sim
    world, url, github, t0, number = _opened(sim, tmp_path)
    params = load_config(CONFIG)[0].calibration
    assert params.ingest_refresh_every_hours == 24  # the default
    # an ingest that changes no verdict (another run like the others) asks for nothing
    ingest_json(url, _runs(DEEPSEEK, 1100, t0 + timedelta(minutes=30), run_id=100))
    assert after_ingest(url, REPO, params, now=t0 + timedelta(hours=1)) == []
    assert runs.due(url, [REPO], t0 + timedelta(hours=1)) == []

    # one 5,000 s pass of a file that fitted: now under-estimated, a verdict changed
    ingest_json(url, _runs(BCG, 5000, t0 + timedelta(minutes=40), run_id=200))
    assert after_ingest(url, REPO, params, now=t0 + timedelta(hours=1)) == [BCG]
    assert runs.due(url, [REPO], t0 + timedelta(hours=1)) == [REPO]  # the next pass, not the next week
    assert after_ingest(url, REPO, params, now=t0 + timedelta(hours=1, minutes=5)) == []  # asked already
    (again,) = sweep(github, url, now=t0 + timedelta(hours=2))
    assert (again[1].action, again[1].number) == ("updated", number)
    assert b"est_time=5250," in world.repo.files(world.repo.head(BRANCH))[BCG]
    assert runs.due(url, [REPO], t0 + timedelta(hours=2)) == []  # done: nothing pending

    # ten runs of 3,100 s: DeepSeek's lowering no longer holds, a verdict changed, but within
    # 24 hours of the last ask: not asked now...
    ingest_json(url, _runs(DEEPSEEK, 3100, t0 + timedelta(hours=3), count=10, run_id=300))
    later = t0 + timedelta(hours=4)
    assert changed_verdicts(runs.last_verdicts(url, REPO)[0], export_records(url, repository=REPO), params,
                            now=later, repository=REPO) == [DEEPSEEK]
    assert after_ingest(url, REPO, params, now=later) == []
    assert runs.due(url, [REPO], later) == []
    # ... and asked once the interval has passed
    assert after_ingest(url, REPO, params, now=t0 + timedelta(hours=25)) == [DEEPSEEK]
    assert runs.due(url, [REPO], t0 + timedelta(hours=25)) == [REPO]


def test_an_ingest_asks_nothing_when_turned_off_or_before_the_first_refresh(github_sim, tmp_path):
    sim = github_sim
    world = _world(sim, tmp_path)
    url = world.settings.database_url
    params = load_config(CONFIG)[0].calibration
    now = datetime.now(timezone.utc)
    ingest_json(url, _runs(BCG, 5000, now, run_id=200))
    assert after_ingest(url, REPO, params, now=now) == []  # no refresh yet: the schedule does the first
    assert runs.last_verdicts(url, REPO) == (None, None)
    off = load_config(CONFIG + "  ingest_refresh_every_hours: 0\n")[0].calibration
    disabled = load_config(CONFIG.replace("pull_requests: true", "pull_requests: false"))[0].calibration
    runs.record(url, REPO, "opened", 1, now - timedelta(days=1), 7, json.dumps({"minimum": 0, "files": [[BCG, "rocm", 3600, SUITE, False]]}))
    assert after_ingest(url, REPO, off, now=now) == [] and after_ingest(url, REPO, disabled, now=now) == []
    assert runs.due(url, [REPO], now) == []
    assert after_ingest(url, REPO, params, now=now) == [BCG]
    _config, errors = load_config(CONFIG + "  ingest_refresh_every_hours: -1\n")
    assert [e.message for e in errors] == ["invalid configuration: calibration.ingest_refresh_every_hours must not be "
                                          "negative (0: an ingest never refreshes)"]


def test_a_stale_judgement_does_not_ask(github_sim, tmp_path):
    """The ask is a compare-and-set on the verdicts judged against: a refresh that recorded new ones
    in between wins, and the ask is not made on stale grounds."""
    sim = github_sim
    world = _world(sim, tmp_path)
    url = world.settings.database_url
    now = datetime.now(timezone.utc)
    old = json.dumps({"minimum": 0, "files": [[BCG, "rocm", 3600, SUITE, False]]})
    runs.record(url, REPO, "opened", 1, now - timedelta(days=1), 7, old)
    runs.record(url, REPO, "updated", 1, now, 7, json.dumps({"minimum": 0, "files": [[BCG, "rocm", 5250, SUITE, False]]}))
    assert runs.request(url, REPO, old, now, timedelta(hours=24)) is False
    assert runs.due(url, [REPO], now) == []
    runs.record(url, REPO, "updated", 1, now, 7, None)  # a refresh that decided nothing keeps the verdicts
    assert runs.last_verdicts(url, REPO)[0] != old and runs.last_verdicts(url, REPO)[0] is not None


def test_a_workflow_run_that_changes_a_verdict_asks_for_a_refresh(github_sim, tmp_path):
    """Through the App: workflow_run completed -> the job's log ingested -> the verdict changed ->
    the repository due at the worker's next pass."""
    sim = github_sim
    world, url, github, t0, number = _opened(sim, tmp_path)
    log = "\n".join([
        f"2026-08-22T01:00:00.0000000Z ##[group]Run python3 test/run_suite.py --hw amd --suite {SUITE}",
        f"{t0:%Y-%m-%dT%H:%M:%S}.0000001Z [1/1] {BCG}  PASS  elapsed=5000s",
        "2026-08-22T01:00:00.0000002Z ##[endgroup]",
    ]) + "\n"
    run = sim.add_workflow_run(world.repo, "pr-test-amd.yml", event="schedule", status="completed", conclusion="success",
                               jobs=[{"name": "stage-c (8-gpu)", "labels": ["linux-mi35x-gpu-8"], "conclusion": "success", "log": log}])
    assert world.deliver(sim.webhook("workflow_run", "completed", app=world.app, repo=world.repo, run=run["id"])).status_code == 202
    world.drain()
    assert any(r["file"] == BCG and r["elapsed_s"] == 5000 for r in export_records(url, repository=REPO))
    now = datetime.now(timezone.utc)
    assert runs.due(url, [REPO], now) == [REPO]
    (again,) = sweep(github, url, now=now)
    assert (again[1].action, again[1].number) == ("updated", number)
