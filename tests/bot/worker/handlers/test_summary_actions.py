"""The summary's "Run ROCm suite N" buttons, end to end on the simulator: the App posts them on the
CI registrations check run (GitHub's limits: at most 3, label <= 20, description <= 40, identifier
<= 20), and a click is the clicker's `/run-rocm SUITE`, through the usual permission and approval."""

from __future__ import annotations

import pytest

from bot.store import ondemand as store
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
    [refusal] = [e for e in store.audit_entries(od.world.settings.database_url, repository="radixark/miles")
                 if e.action == "refusal" and e.actor == "reader"]
    assert refusal.detail == "summary button run-rocm-1 by role read: not a maintainer"
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


# -- what GitHub never sends is refused at the intake (issue 37 item 2) ----------------------------
def _signed(od, d, payload: dict):
    import json

    from tests.simulator import sign

    d.body = json.dumps(payload).encode()
    d.headers["X-Hub-Signature-256"] = sign(d.body, od.world.app.webhook_secret)
    return d


def _forge(field: str):
    """Set or delete (value DELETE) one field of the check run in the payload."""
    def apply(run, value):
        if value is DELETE:
            del run[field]
        else:
            run[field] = value
    return apply


DELETE = object()
_OTHER_SUITE = "nightly-stage-c-8-gpu-mi350"  # a suite of this repository the summary never suggested
REFUSED_CLICKS = {
    # GitHub always sends `app` (its description requires it): a click without it is not GitHub's
    "no_app": ("app", DELETE),
    "app_null": ("app", None),
    "app_without_id": ("app", {"slug": "ci-registrar"}),
    # check_run.pull_requests entries without a positive integer number
    "pull_requests_[{}]": ("pull_requests", [{}]),
    "pull_requests_[{number: 'x'}]": ("pull_requests", [{"number": "x"}]),
    "pull_requests_'x'": ("pull_requests", "x"),
    "pull_requests_31_digits": ("pull_requests", [{"number": 10**30}]),
    "pull_requests_number_0": ("pull_requests", [{"number": 0}]),
    "pull_requests_number_-1": ("pull_requests", [{"number": -1}]),
    "pull_requests_number_true": ("pull_requests", [{"number": True}]),
    "pull_requests_number_1.0": ("pull_requests", [{"number": 1.0}]),
    "pull_requests_[null]": ("pull_requests", [None]),
    "pull_requests_missing": ("pull_requests", DELETE),
    # other shapes GitHub's description (the simulator's schema) rejects, in fields the handlers read
    "id_a_string": ("id", "12"),
    "name_a_list": ("name", ["CI registrations"]),
    "head_sha_not_a_sha": ("head_sha", "main"),
    "output_a_string": ("output", "1. `/run-rocm x`"),
    "summary_a_number": ("output", {"summary": 5}),
    "completed_at_an_object": ("completed_at", {"at": 1}),
}


@pytest.mark.parametrize("case", sorted(REFUSED_CLICKS))
def test_a_click_github_would_never_send_is_refused_at_the_intake(od, case):
    """400 with the reason, recorded `invalid`, nothing queued, nothing dispatched. Each forged
    click also carries a summary that names a suite the App never suggested: what the intake did
    not check never reaches the handler."""
    import json

    from bot.store import service as store

    run = _checked(od)
    d = od.sim.webhook("check_run", "requested_action", app=od.world.app, repo=od.repo, check_run=run["id"],
                       identifier="run-rocm-1", sender="maint")
    payload = json.loads(d.body)
    payload["check_run"]["output"]["summary"] = run["output"]["summary"].replace(f"`/run-rocm {SUITE}`", f"`/run-rocm {_OTHER_SUITE}`")
    field, value = REFUSED_CLICKS[case]
    _forge(field)(payload["check_run"], value)
    d = _signed(od, d, payload)
    resp = od.world.deliver(d)
    assert resp.status_code == 400 and resp.json["error"].startswith("invalid payload:"), resp.data
    assert od.world.queue.depth() <= 1  # the refusal's record only, no delivery job
    od.world.drain()
    row = {r.delivery_id: r for r in store.recent_deliveries(od.world.settings.database_url)}[d.delivery_id]
    assert row.status == "invalid" and row.outcome.startswith("invalid payload:")
    assert od.dispatches() == [] and not any("Dispatched" in r for r in od.replies())


def test_a_click_with_every_field_github_sends_is_accepted(od):
    """The control for the cases above: the same click, untouched, is GitHub's and dispatches."""
    run = _checked(od)
    _click(od, run, "run-rocm-1", sender="maint")
    [d] = od.dispatches()
    assert d["inputs"]["suite"] == SUITE


REFUSED_RERUNS = {
    "check_run_no_app": ("check_run", "rerequested", lambda p: p["check_run"].pop("app")),
    "check_run_pull_requests_[{}]": ("check_run", "rerequested", lambda p: p["check_run"].__setitem__("pull_requests", [{}])),
    "check_run_pull_requests_'x'": ("check_run", "rerequested", lambda p: p["check_run"].__setitem__("pull_requests", "x")),
    "check_run_pull_requests_31_digits": ("check_run", "rerequested",
                                          lambda p: p["check_run"]["pull_requests"][0].__setitem__("number", 10**30)),
    "check_suite_pull_requests_[{number: 'x'}]": ("check_suite", "rerequested",
                                                  lambda p: p["check_suite"].__setitem__("pull_requests", [{"number": "x"}])),
    "check_suite_pull_requests_missing": ("check_suite", "rerequested", lambda p: p["check_suite"].pop("pull_requests")),
}


@pytest.mark.parametrize("case", sorted(REFUSED_RERUNS))
def test_a_rerun_request_github_would_never_send_is_refused_at_the_intake(od, case):
    import json

    run = _checked(od)
    event, action, forge = REFUSED_RERUNS[case]
    kw = {"check_run": run["id"]} if event == "check_run" else {"head_sha": od.pr.head_sha}
    d = od.sim.webhook(event, action, app=od.world.app, repo=od.repo, sender="bob", **kw)
    payload = json.loads(d.body)
    assert (payload.get("check_run") or payload.get("check_suite"))["pull_requests"]  # the PR is listed
    forge(payload)
    d = _signed(od, d, payload)
    resp = od.world.deliver(d)
    assert resp.status_code == 400 and resp.json["error"].startswith("invalid payload:"), resp.data
    od.world.drain()
    assert len(od.sim.check_runs(od.repo, sha=od.pr.head_sha, name=CHECK_NAME)) == 1  # nothing re-run
