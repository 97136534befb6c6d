"""The App's PR check judges est_time against the repository's stored durations (REG020/REG021/REG030),
as `ci-registrar check --durations` does on the same store: simulator, real store, real queue."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from datetime import datetime, timedelta, timezone

import sqlalchemy as sa

from bot.durations.query import check_rows
from bot.durations.ingest import ingest_json
from bot.worker.handlers.pull_requests import CHECK_NAME, render
from bot.worker.queue import QueueConfig, open_queue
from bot.infra.settings import load_settings
from bot.store.db import get_engine, upgrade
from checks.config.schema import load_config
from checks.engine import check_tree
from checks.scanning.tree import MemoryTree
from tests.conftest import CLI
from tests.fixtures.miles import miles_tree
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.service_support import World, env_for

PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"  # ROCm est_time 800 in tests/fixtures/miles.py
PASSING = [720, 590, 700, 650, 640]  # 4 of the 5 took longer than 600 s


def _world(sim, tmp_path) -> World:
    gh_app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    repo.commit(miles_tree(), branch="main")
    sim.install(gh_app, "radixark/miles")
    settings = load_settings(env_for(sim, gh_app, tmp_path))
    upgrade(settings.database_url)
    queue = open_queue(settings, config=QueueConfig(f"t-{uuid.uuid4().hex[:8]}", None, str(tmp_path / "queue.db"), 30))
    from app import create_app

    return World(sim, gh_app, repo, None, settings, queue, create_app(settings, queue=queue), None)


def _store(url, repository="radixark/miles", file=PPO, values=PASSING):
    start = datetime.now(timezone.utc) - timedelta(days=2)
    records = [{"repository": repository, "file": file, "backend": "rocm", "hardware": "MI355X", "elapsed_s": v,
                "outcome": "PASS", "run_id": 100 + i, "job_id": 1, "measured_at": (start + timedelta(hours=i)).isoformat(),
                "source": f"workflow_run:{repository}", "event": "schedule"} for i, v in enumerate(values)]
    assert ingest_json(url, json.dumps(records)).inserted == len(values)


def _lowering_pr(world, est_time=600):
    head = dict(miles_tree())
    head[PPO] = head[PPO].replace("est_time=800", f"est_time={est_time}")
    world.repo.commit({PPO: head[PPO]}, branch="lower")
    world.pr = world.sim.open_pull_request(world.repo, "lower", "main", author="bob")
    world.deliver(world.sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob"))
    world.drain()
    [run] = world.sim.check_runs(world.repo, sha=world.pr.head_sha, name=CHECK_NAME)
    return run, head


def _engine_verdict(head, rows):
    """The same PR through check_tree in this process with the same rows: the App's check-run output."""
    report = check_tree(MemoryTree(head), base=MemoryTree(miles_tree()), changed={PPO: PPO}, durations=rows)
    return render(report)


def _local(annotations):
    """Without the unread external consumer's warning: the App and a local run word it differently."""
    kept = [a for a in annotations if "external consumer" not in a["message"]]
    assert len(kept) == len(annotations) - 1
    return kept


def test_a_pr_lowering_est_time_below_stored_passing_runs_fails_at_the_argument(github_sim, tmp_path):
    world = _world(github_sim, tmp_path)
    _store(world.settings.database_url)
    _store(world.settings.database_url, repository="acme/other", values=[5000] * 5)  # another tenant's: not read
    run, head = _lowering_pr(world)
    assert run["conclusion"] == "failure"
    line = next(i for i, text in enumerate(head[PPO].splitlines(), 1) if "register_rocm_ci(est_time=600" in text)
    [note] = [a for a in run["annotations"] if a["title"].startswith("REG020")]
    assert (note["path"], note["start_line"], note["annotation_level"]) == (PPO, line, "failure")
    assert "lowers est_time from 800 to 600 s, below 4 of the 5 passing runs on MI355X" in note["message"]
    column = head[PPO].splitlines()[line - 1].index("600") + 1
    assert note.get("start_column") in (None, column)  # on the est_time argument when GitHub keeps columns

    # Differential: check_tree with this repository's rows from the store gives the App's verdict.
    rows = check_rows(world.settings.database_url, repository="radixark/miles", params=load_config(None)[0].calibration)
    assert [r["n"] for r in rows] == [5] and "acme/other" not in json.dumps(rows)
    conclusion, output, annotations = _engine_verdict(head, rows)
    assert (run["conclusion"], run["output"]["title"]) == (conclusion, output["title"])
    assert _local(run["annotations"]) == _local(annotations)


def test_no_stored_durations_leave_the_verdict_as_it_was(github_sim, tmp_path):
    world = _world(github_sim, tmp_path)
    _store(world.settings.database_url, repository="acme/other")  # only another repository has durations
    run, head = _lowering_pr(world)
    conclusion, output, annotations = _engine_verdict(head, None)
    assert (run["conclusion"], run["output"]["title"]) == (conclusion, output["title"])
    assert _local(run["annotations"]) == _local(annotations)
    assert not [a for a in run["annotations"] if a["title"].startswith(("REG020", "REG021"))]


def test_a_store_that_cannot_answer_is_logged_and_the_check_goes_on(github_sim, tmp_path, capsys):
    world = _world(github_sim, tmp_path)
    _store(world.settings.database_url)
    with get_engine(world.settings.database_url).begin() as conn:
        conn.execute(sa.text("DROP TABLE measurements"))  # every statistics query now fails in the store
    run, head = _lowering_pr(world)
    assert run["status"] == "completed" and run["output"]["title"] != "CI Registrar could not finish this check"
    conclusion, output, annotations = _engine_verdict(head, None)
    assert run["conclusion"] == conclusion and _local(run["annotations"]) == _local(annotations)
    # structlog prints to stdout until a test in this process has called bot.infra.logging.configure(),
    # which sends every log line to stderr (as the App's processes do): read both
    captured = capsys.readouterr()
    assert "stored durations unavailable, checked without them" in captured.out + captured.err


def test_the_app_finds_what_check_durations_finds_on_the_same_store(github_sim, tmp_path):
    world = _world(github_sim, tmp_path)
    _store(world.settings.database_url)
    run, head = _lowering_pr(world)
    checkout = tmp_path / "miles"
    env = {**os.environ, "DATABASE_URL": world.settings.database_url, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}

    def git(*args):
        subprocess.run(["git", "-C", str(checkout), *args], check=True, capture_output=True, env=env)

    def write(files):
        for path, text in files.items():
            (checkout / path).parent.mkdir(parents=True, exist_ok=True)
            (checkout / path).write_text(text)

    checkout.mkdir()
    git("init", "-q", "-b", "main")
    write(miles_tree())
    git("add", "-A")
    git("commit", "-qm", "base")
    write(head)
    git("commit", "-qam", "lower")
    out = subprocess.run([CLI, "check", "--repo", str(checkout), "--base", "main~1", "--durations",
                          "--repository", "radixark/miles", "--format", "json", "--no-cache"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 1, out.stderr
    cli = {(f["rule"], f["file"], f["line"], f["severity"]) for f in json.loads(out.stdout)["findings"]}
    app = {(a["title"].split()[0], a["path"], a["start_line"], a["annotation_level"]) for a in run["annotations"]}
    assert ("REG020", PPO) in {(r, f) for r, f, _, _ in cli}
    assert app == cli
