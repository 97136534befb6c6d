"""bot/ondemand/permissions.py against the simulated GitHub: who counts as a maintainer, and why.

The on-demand security table (tests/bot/ondemand/test_ondemand_security.py) pins the same rules end to end;
these tests ask `authority` directly, over real HTTP, so that each rule is pinned on its own
(bench/mutation.py measures how much of the module they pin).
"""

from __future__ import annotations

import pytest

from bot.github.client import GitHub
from bot.github.retry import GitHubError, RetryPolicy, TransientError
from bot.ondemand.permissions import TEAMS_NEED_MEMBERS_READ, Authority, authority, role_of
from checks.config.schema import Approvers
from tests.patience import PATIENCE
from tests.simulator.fixtures import github_sim  # noqa: F401

WITH_MEMBERS = {"checks": "write", "contents": "read", "pull_requests": "write", "issues": "write", "actions": "write",
                "metadata": "read", "members": "read"}


def client_for(sim, permissions=None):
    app = sim.create_app(name="CI Registrar", owner="radixark", permissions=permissions)
    repo = sim.create_repo("radixark/miles")
    repo.commit({"README.md": "miles\n"}, branch="main")
    inst = sim.install(app, "radixark/miles")
    github = GitHub(sim.url, str(app.id), app.private_key_pem, policy=RetryPolicy(base_s=0.01, read_timeout_s=PATIENCE))
    for user, role in (("admin1", "admin"), ("maint", "maintain"), ("writer", "write"), ("triager", "triage"),
                       ("reader", "read"), ("nobody", "none")):
        sim.set_permission(repo, user, role)
    return github.for_installation(inst.id)


@pytest.mark.parametrize("answer, role", [
    ({"role_name": "admin", "permission": "admin"}, "admin"),
    ({"role_name": "maintain", "permission": "write"}, "maintain"),
    ({"role_name": "Triage", "permission": "read"}, "triage"),
    ({"role_name": "security-reviewer", "permission": "write"}, "write"),  # a custom role: its base permission
    ({"role_name": "security-reviewer", "permission": "READ"}, "read"),
    ({"role_name": "security-reviewer", "permission": "owner"}, "none"),  # nothing GitHub defines
    ({"role_name": "", "permission": "admin"}, "admin"),
    ({"role_name": None, "permission": None}, "none"),
    ({}, "none"),
])
def test_the_role_in_githubs_answer(answer, role):
    assert role_of(answer) == role


@pytest.mark.parametrize("login, role, maintainer", [("admin1", "admin", True), ("maint", "maintain", True),
                                                      ("writer", "write", True), ("triager", "triage", False),
                                                      ("reader", "read", False), ("nobody", "none", False),
                                                      ("stranger", "read", False)])
def test_roles_decide_by_default(github_sim, login, role, maintainer):
    client = client_for(github_sim)
    who = authority(client, "radixark/miles", login, Approvers())
    assert who == Authority(login, role, maintainer, f"role {role}" if maintainer else None, None)


def test_the_configured_roles_replace_the_default(github_sim):
    client = client_for(github_sim)
    strict = Approvers(permissions=["admin"])
    assert authority(client, "radixark/miles", "admin1", strict).maintainer
    assert not authority(client, "radixark/miles", "maint", strict).maintainer
    loose = Approvers(permissions=["triage"])
    assert authority(client, "radixark/miles", "triager", loose) == Authority("triager", "triage", True, "role triage")
    assert not authority(client, "radixark/miles", "admin1", loose).maintainer


def test_listed_users_count_whatever_their_role(github_sim):
    client = client_for(github_sim)
    approvers = Approvers(permissions=["admin"], users=["Reader"])  # logins compare without case
    assert authority(client, "radixark/miles", "reader", approvers) == Authority("reader", "read", True, "user list")
    assert authority(client, "radixark/miles", "READER", approvers).via == "user list"
    assert not authority(client, "radixark/miles", "triager", approvers).maintainer
    assert authority(client, "radixark/miles", "admin1", approvers).via == "role admin"  # the role is asked first


def test_an_active_team_membership_counts(github_sim):
    client = client_for(github_sim, WITH_MEMBERS)
    github_sim.add_team_member("radixark", "rocm-maintainers", "reader")
    github_sim.add_team_member("radixark", "rocm-maintainers", "triager", state="pending")
    github_sim.add_team_member("radixark", "other-team", "writer")
    approvers = Approvers(permissions=["admin"], teams=["other", "rocm-maintainers"])
    assert authority(client, "radixark/miles", "reader", approvers) == \
        Authority("reader", "read", True, "team radixark/rocm-maintainers")
    assert authority(client, "radixark/miles", "triager", approvers) == Authority("triager", "triage", False, None, None)
    assert not authority(client, "radixark/miles", "writer", approvers).maintainer  # a team not configured
    named = Approvers(permissions=["admin"], teams=["radixark/other-team"])
    assert authority(client, "radixark/miles", "writer", named).via == "team radixark/other-team"


def test_a_team_of_another_organisation_is_not_visible(github_sim):
    client = client_for(github_sim, WITH_MEMBERS)
    github_sim.add_team_member("elsewhere", "rocm", "reader")
    assert not authority(client, "radixark/miles", "reader", Approvers(permissions=["admin"], teams=["elsewhere/rocm"])).maintainer


def test_without_members_read_team_approval_is_reported_not_guessed(github_sim):
    client = client_for(github_sim)  # the default permissions lack members: read
    github_sim.add_team_member("radixark", "rocm-maintainers", "reader")
    who = authority(client, "radixark/miles", "reader", Approvers(teams=["rocm-maintainers", "second"]))
    assert who == Authority("reader", "read", False, None, TEAMS_NEED_MEMBERS_READ)
    # roles and users still count
    assert authority(client, "radixark/miles", "maint", Approvers(teams=["rocm-maintainers"])).maintainer
    assert authority(client, "radixark/miles", "reader", Approvers(teams=["rocm-maintainers"], users=["reader"])).via == "user list"


def test_a_team_lookup_that_fails_otherwise_is_not_taken_for_a_no(github_sim):
    client = client_for(github_sim, WITH_MEMBERS)
    github_sim.inject_fault("GET", r"/orgs/radixark/teams/rocm/memberships/reader$", "500", times=None)
    with pytest.raises((GitHubError, TransientError)) as raised:
        authority(client, "radixark/miles", "reader", Approvers(permissions=["admin"], teams=["rocm"]))
    assert getattr(raised.value, "status", 500) == 500
