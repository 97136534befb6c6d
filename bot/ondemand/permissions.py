"""Who may start or approve an MI350 run: asked of GitHub on every command, approval and click.

Nothing here is cached across events: a maintainer whose access was removed a minute ago is not
one any more. The collaborator-permission endpoint gives the role (admin, maintain, write, triage,
read, none; a custom role falls back to its base permission); configured users and teams add to
the roles. Team membership needs the organisation permission `members: read`; an installation
that has not granted it still decides by roles and users, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.github.retry import GitHubError

ROLES = ("admin", "maintain", "write", "triage", "read", "none")
TEAMS_NEED_MEMBERS_READ = (
    "team-based approval is configured, but this installation has not granted the organisation "
    "permission `members: read`, so team membership could not be checked (roles and listed users still count)"
)


@dataclass(frozen=True)
class Authority:
    login: str
    role: str  # the role GitHub reports for the user on this repository
    maintainer: bool
    via: str | None = None  # what made them a maintainer: "role admin", "user list", "team org/slug"
    note: str | None = None  # something the user should know (a check that could not be made)


def role_of(answer: dict) -> str:
    role = str(answer.get("role_name") or "").lower()
    if role in ROLES:
        return role
    permission = str(answer.get("permission") or "none").lower()  # a custom role: its base permission
    return permission if permission in ROLES else "none"


def _team(entry: str, repo_owner: str) -> tuple[str, str]:
    org, _, slug = entry.partition("/")
    return (org, slug) if slug else (repo_owner, org)


def authority(client, repo: str, login: str, approvers) -> Authority:
    """Whether `login` counts as a maintainer of `repo` under the configuration's `approvers`."""
    role = role_of(client.collaborator_permission(repo, login))
    if role in approvers.permissions:
        return Authority(login, role, True, f"role {role}")
    if login.lower() in {u.lower() for u in approvers.users}:
        return Authority(login, role, True, "user list")
    note = None
    for entry in approvers.teams:
        org, slug = _team(entry, repo.split("/", 1)[0])
        try:
            membership = client.team_membership(org, slug, login)
        except GitHubError as exc:
            if exc.status == 403:
                note = TEAMS_NEED_MEMBERS_READ
                break
            raise
        if membership and membership.get("state") == "active":
            return Authority(login, role, True, f"team {org}/{slug}")
    return Authority(login, role, False, None, note)
