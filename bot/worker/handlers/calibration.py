"""`/calibrate-est-time`: a maintainer refreshes the repository's calibration pull request now.

The command stands alone on a line of a new comment on an open pull request (not quoted, not in a
code block), by a person; who is a maintainer is asked of GitHub each time (`approvers:` of the
default branch's configuration, as for `/run-rocm`). Anything else costs no GitHub call.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.worker import calibration_pr
from bot.ondemand import grammar, texts
from bot.ondemand.pull import Pull, react, reply, trusted_config
from bot.ondemand.request import is_human_command_comment, still_says
from bot.ondemand.permissions import authority
from checks.wording import plural

router = Router()

COMMAND = grammar.CALIBRATE


def is_calibrate_command(body: str | None) -> bool:
    """Read by the one command reader (bot/ondemand/grammar.py), as GitHub renders the comment:
    only top-level paragraph text counts (never code, quotes, HTML comments, <details>, alt text)."""
    command = grammar.parse(body)
    return isinstance(command, grammar.Command) and command.word == grammar.CALIBRATE


def answer(login: str, outcome: calibration_pr.Outcome, repo: str) -> str:
    link = f"#{outcome.number}" if outcome.number else None
    return {
        "opened": f"@{login} opened the calibration pull request {link} ({plural(outcome.changes, 'est_time value')}).",
        "updated": f"@{login} updated the calibration pull request {link} in place ({plural(outcome.changes, 'est_time value')}).",
        "unchanged": f"@{login} the calibration pull request {link} is up to date: the stored durations give the same values.",
        "closed": f"@{login} nothing is left to calibrate: closed {link}.",
        # "nothing" with a message: nothing was done, for the reason it gives (an invalid configuration)
        "nothing": f"@{login} {outcome.message}" if outcome.message else
                   f"@{login} nothing to calibrate: every est_time fits the stored durations.",
        "kept-closed": f"@{login} the calibration pull request {link} was closed by a maintainer and the values have "
                       "not changed since: it stays closed.",
        "disabled": f"@{login} {outcome.message}. Set `calibration.pull_requests: true` to enable it, or run "
                    "`ci-registrar calibrate --durations` on a checkout.",
        "no-permission": f"@{login} {outcome.message}",
        "held": f"@{login} the calibration pull request {link} is on hold: {outcome.message}. The App does not "
                "touch it; its comment there lists the values it would write.",
        "branch-taken": f"@{login} {outcome.message}",
        "branch-deleted": f"@{login} {outcome.message} Ask again (`{COMMAND}`) to open it now.",
    }.get(outcome.action, f"@{login} {outcome.action}: {outcome.message}")


@router.register("issue_comment", action="created")
async def calibrate_command(event, ctx):
    data = event.data
    if not is_human_command_comment(data) or not is_calibrate_command((data.get("comment") or {}).get("body")):
        return
    comment = data["comment"]
    repo = data["repository"]["full_name"]
    number = int(data["issue"]["number"])
    login = comment["user"]["login"]
    key = f"comment:{repo}:{comment['id']}"
    client = ctx.client
    pull = Pull(ctx, repo, number, client.pull(repo, number), config=None)
    config, problems = trusted_config(client, repo, data["repository"].get("default_branch") or "main")
    if config is None:
        react(pull, comment["id"], "confused")
        reply(pull, key, texts.config_invalid(login, problems))
        return
    who = authority(client, repo, login, config.approvers)
    if not who.maintainer:
        react(pull, comment["id"], "confused")
        reply(pull, key, f"@{login} only a maintainer may refresh the calibration pull request "
                         f"(GitHub reports your role as `{who.role}`).")
        return
    if not still_says(pull, comment, grammar.parse(comment.get("body"))):
        return  # deleted or edited away before it was acted on
    react(pull, comment["id"], "eyes")
    outcome = calibration_pr.run(ctx.github, ctx.store_url, ctx.installation_id, repo)
    reply(pull, key, answer(login, outcome, repo))
