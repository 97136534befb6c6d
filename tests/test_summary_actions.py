"""The summary's "Run ROCm suite N" buttons, end to end on the simulator: the App posts them on the
CI registrations check run (GitHub's limits: at most 3, label <= 20, description <= 40, identifier
<= 20), and a click is the clicker's `/run-rocm SUITE`, through the usual permission and approval."""

from __future__ import annotations

import pytest

from bot.worker.handlers.pull_requests import CHECK_NAME
from tests.ondemand_support import SUITE, build_ondemand
from tests.simulator.fixtures import github_sim  # noqa: F401


@pytest.fixture()
def od(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    return build_ondemand(github_sim, tmp_path)


def _checked(od) -> dict:
    """The PR opened: the CI registrations check run as the App completed it."""
    d = od.sim.webhook("pull_request", "opened", app=od.world.app, repo=od.repo, pull=od.pr, sender="bob")
    assert od.world.deliver(d).status_code == 202
    od.world.drain()
    [run] = od.sim.check_runs(od.repo, sha=od.pr.head_sha, name=CHECK_NAME)
    return run


def _click(od, run: dict, identifier: str, sender: str):
    d = od.sim.webhook("check_run", "requested_action", app=od.world.app, repo=od.repo, check_run=run["id"],
                       identifier=identifier, sender=sender)
    assert od.world.deliver(d).status_code == 202
    od.world.drain()


def test_the_summary_offers_the_suggested_run_as_a_button(od):
    run = _checked(od)
    summary = run["output"]["summary"]
    assert "**Registration-only: no.**" in summary  # the PR adds a test file
    assert f"1. `/run-rocm {SUITE}`" in summary and "**Run ROCm suite 1**" in summary
    stored = od.sim._check_runs[run["id"]]  # what GitHub keeps: the buttons it shows
    assert stored["actions"] == [{"label": "Run ROCm suite 1", "description": f"/run-rocm {SUITE}",
                                  "identifier": "run-rocm-1"}]


def test_a_maintainers_click_dispatches_through_the_usual_flow(od):
    run = _checked(od)
    _click(od, run, "run-rocm-1", sender="reader")  # not a maintainer: refused, nothing runs
    assert od.dispatches() == []
    assert any("reader" in r and "summary" in r for r in od.replies())
    _click(od, run, "run-rocm-1", sender="maint")
    [d] = od.dispatches()
    assert (d["inputs"]["suite"], d["inputs"]["head_sha"]) == (SUITE, od.pr.head_sha)
    assert any("Dispatched" in r for r in od.replies())


def test_a_button_of_an_older_head_runs_nothing(od):
    run = _checked(od)
    od.push({"README.md": "moved on\n"})
    _click(od, run, "run-rocm-1", sender="maint")
    # GitHub lists no pull request on a check run whose commit is no PR's head any more; and one
    # that still did would be told its summary was for another commit: either way nothing runs
    assert od.dispatches() == []
    assert not any("Dispatched" in r for r in od.replies())


def test_a_forged_identifier_runs_nothing(od):
    run = _checked(od)
    _click(od, run, "run-rocm-7", sender="maint")
    assert od.dispatches() == []


@pytest.mark.parametrize("actions, ok", [
    ([{"label": "a" * 20, "description": "d" * 40, "identifier": "i" * 20}] * 3, True),
    ([{"label": "a", "description": "d", "identifier": "i"}] * 4, False),
    ([{"label": "a" * 21, "description": "d", "identifier": "i"}], False),
    ([{"label": "a", "description": "d" * 41, "identifier": "i"}], False),
    ([{"label": "a", "description": "d", "identifier": "i" * 21}], False),
    ([{"label": "a", "identifier": "i"}], False),
])
def test_the_simulator_holds_githubs_limits_on_actions(github_sim, actions, ok):
    from tests.simulator.model import ApiError
    from tests.simulator.operations import _validate_actions

    if ok:
        _validate_actions(actions)
    else:
        with pytest.raises(ApiError) as err:
            _validate_actions(actions)
        assert err.value.status == 422
