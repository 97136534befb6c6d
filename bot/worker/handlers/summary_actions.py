"""The summary's "Run ROCm suite N" buttons: a maintainer's click is that maintainer's `/run-rocm SUITE`.

The CI registrations check run offers, as GitHub check-run actions, the `/run-rocm` runs its
summary suggests (checks/render.check_run_actions). A click arrives as check_run.requested_action
with the button's identifier only; the suite is read back from the summary this App posted on
that run. From there it is the comment command's own path (bot/worker/handlers/rocm_commands.run_rocm):
the clicker's permission asked of GitHub now, the selection read from the head, the cost, the
budget and the two-person rule. Nothing the pull request wrote decides who may run what.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.infra import payloads
from bot.ondemand import flow, grammar, texts
from bot.ondemand.flow import Pull, reply
from bot.ondemand.permissions import authority
from checks.reporting.render import ACTION_PREFIX, CHECK_RUN_NAME, suggestion_in_summary

router = Router()


@router.register("check_run", action="requested_action")
async def run_button(event, ctx):
    from bot.worker.handlers.rocm_commands import run_rocm

    # Only what the intake checked (bot/infra/payloads.CheckRunActionEvent) is read: the App that
    # owns the run, the run's pull requests, summary and times are all typed and bounded there.
    click = payloads.checked(payloads.CheckRunActionEvent, event.data)
    identifier = click.requested_action.identifier
    if not identifier.startswith(ACTION_PREFIX):
        return  # another button (the on-demand request's "Approve run")
    run = click.check_run
    app_id = str(ctx.settings.app_id or "")
    if run.name != CHECK_RUN_NAME or (app_id and str(run.app.id) != app_id):
        return  # not this App's CI registrations check
    if click.sender.type not in (None, "User") or not click.sender.login:
        return
    repo = click.repository.full_name
    if not run.pull_requests:
        return  # a check run of no open pull request in this repository
    login = click.sender.login
    number = run.pull_requests[0].number
    key = f"click:{ctx.delivery_id}"
    pr_data = flow.tolerate_gone(lambda: ctx.client.pull(repo, number))
    if pr_data is None:
        flow.vanished(ctx, repo, number, actor=login, detail=f"summary button {identifier}: the pull request is gone")
        return
    config, problems = flow.trusted_config(ctx.client, repo, click.repository.default_branch or "main")
    pull = Pull(ctx, repo, number, pr_data, config)
    if not pull.open:
        return
    if config is None:
        reply(pull, key, texts.config_invalid(login, problems))
        return
    who = authority(ctx.client, repo, login, config.approvers)
    if not who.maintainer:
        pull.audit_once(key, "audit", "refusal", actor=login,
                        detail=f"summary button {identifier} by role {who.role}: not a maintainer")
        reply(pull, key, texts.not_a_maintainer(login, "start on-demand runs from the summary", who.role, who.note))
        return
    if run.head_sha != pull.head_sha:
        # the summary described another commit: its suggestion is not for the head that would run
        reply(pull, key, f"@{login} that summary was for `{run.head_sha}`; the head is now "
                         f"`{pull.head_sha}`. Use the buttons of its own check run, or comment `/run-rocm SUITE`.")
        return
    suite = suggestion_in_summary((run.output.summary if run.output else None) or "", identifier)
    paths = config.paths
    command = grammar.parse(f"/run-rocm {suite}", roots=paths.test_roots, pattern=paths.test_pattern) if suite else None
    if not isinstance(command, grammar.Command):
        reply(pull, key, f"@{login} that button names no suite this App can run; comment `/run-rocm SUITE` instead.")
        return
    pull.audit_once(key, "audit", "command", actor=login, suite=command.suite,
                    detail=f"summary button {identifier}: {command.line[:160]}")
    # The click stands for a comment written when the check run was completed (GitHub's clock): the
    # head must have been pushed before that (bot/ondemand/seen.py), as for a comment.
    as_comment = {"id": None, "user": {"login": login}, "created_at": run.completed_at, "html_url": None}
    run_rocm(pull, command, as_comment, key)
