"""Edges of the calibration pull request's ownership and verdict record that the mutation check
(bench/mutation.py, docs/mutation.md) found unpinned: another App's pull request, a closed pull
request of someone else, exactly five foreign commits, the verdicts a refresh records, and the
refresh-after-ingest interval's boundary."""

from __future__ import annotations

import json
from datetime import timedelta

from bot.worker.calibration_pr import BRANCH, after_ingest, refresh
from bot.store import calibration as runs
from checks.config.schema import load_config
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.bot.worker.test_calibration_pr import CONFIG, KIMI, NOW, QWEN, REPO, _calls, _setup, records
from tests.bot.worker.test_calibration_refresh import BCG, SUITE, _opened, _runs


def test_another_apps_pull_request_from_the_branch_is_not_adopted(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    repo.set_branch(BRANCH, repo.head("main"))
    other = sim.open_pull_request(repo, BRANCH, "main", author="renovate[bot]", title="Update", body="")
    assert sim.user_json(other.author)["type"] == "Bot"
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "branch-taken" and f"pull request #{other.number}" in out.message
    assert repo.head(BRANCH) == repo.head("main") and other.title == "Update"


def test_someone_elses_closed_pull_request_does_not_hold_the_branch(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    repo.set_branch(BRANCH, repo.head("main"))
    closed = sim.open_pull_request(repo, BRANCH, "main", author="writer", title="abandoned")
    sim.close_pull_request(closed)
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "opened" and out.number != closed.number
    assert closed.title == "abandoned" and sim.pull(REPO, out.number).author == "ci-registrar[bot]"


def test_five_foreign_commits_are_all_named(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    refresh(client, REPO, records(), now=NOW)
    pushed = [sim.push(repo, BRANCH, {f"n{i}.md": "x\n"}, author=f"dev{i}") for i in range(5)]
    out = refresh(client, REPO, records(), now=NOW)
    assert out.message == f"someone else pushed to {BRANCH}: " + ", ".join(f"`{s[:7]}` by dev{i}" for i, s in enumerate(pushed))


def test_a_refresh_records_each_calibrated_files_verdict(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    main = repo.files(repo.head("main"))
    repo.commit({KIMI: main[KIMI].replace(b'register_amd_ci(est_time=3600, suite=',
                                          b'register_amd_ci(est_time=3600, disabled="flaky", suite='),
                 QWEN: main[QWEN].replace(b"register_amd_ci(est_time=3600,", b"register_amd_ci(est_time=EST,")
                 .replace(b"from sglang.test.ci.ci_register import register_amd_ci",
                          b"from sglang.test.ci.ci_register import register_amd_ci\nEST = 3600")},
                branch="main", message="one disabled, one not a literal")
    out = refresh(client, REPO, records(), now=NOW)
    seen = json.loads(out.verdicts)
    rows = {row[0]: row for row in seen["files"]}
    assert KIMI not in rows and QWEN not in rows  # nothing to re-decide: disabled, not a literal
    assert rows[BCG] == [BCG, "rocm", 3600, SUITE, False]
    assert rows["test/registered/amd/test_deepseek_r1_mxfp4_8gpu.py"][2:] == [3600, SUITE, True]
    assert [r[0] for r in seen["files"]] == sorted(rows) and seen["minimum"] in (0, 1)


def test_an_ingest_may_ask_again_exactly_one_interval_later(github_sim, tmp_path):
    sim = github_sim
    world, url, github, t0, _number = _opened(sim, tmp_path)
    params = load_config(CONFIG)[0].calibration
    asked = t0 + timedelta(hours=1)
    runs.record(url, REPO, "opened", 1, t0, 7, json.dumps({"minimum": 0, "files": [[BCG, "rocm", 3600, SUITE, False]]}))
    from bot.durations.ingest import ingest_json

    ingest_json(url, _runs(BCG, 5000, t0 + timedelta(minutes=30), run_id=900))
    assert after_ingest(url, REPO, params, now=asked) == [BCG]
    runs.record(url, REPO, "updated", 1, asked, 7, None)  # refreshed, nothing decided: same verdicts
    assert after_ingest(url, REPO, params, now=asked + timedelta(hours=24) - timedelta(seconds=1)) == []
    assert after_ingest(url, REPO, params, now=asked + timedelta(hours=24)) == [BCG]


def test_an_invalid_configuration_writes_nothing_and_says_why(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    invalid = CONFIG + "  margin: 0.5\n  window_runs: 0\n"
    repo.commit({".github/ci-registrar.yml": invalid}, branch="main")
    mark = len(sim.requests_log)
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "nothing" and out.verdicts is None
    errors = [e.message for e in load_config(invalid)[1]]
    assert len(errors) == 2 and out.message == f".github/ci-registrar.yml is invalid: {errors[0]}"  # the first one
    assert [c for c in _calls(sim, mark) if not c.startswith("GET ")] == [] and BRANCH not in repo.branches


def test_a_commit_linked_to_no_account_is_named_by_its_git_name(github_sim, tmp_path):
    sim = github_sim
    repo, client = _setup(sim, tmp_path)
    refresh(client, REPO, records(), now=NOW)
    theirs = sim.push(repo, BRANCH, {"n.md": "x\n"}, author="Jane Doe", email="jane@example.com")
    out = refresh(client, REPO, records(), now=NOW)
    assert out.action == "held" and out.message.endswith(f"`{theirs[:7]}` by Jane Doe")
