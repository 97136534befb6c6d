"""What the PR sees from on-demand runs: replies, check-run names and texts, next to each other.

Mentions are deliberate: the commenter a reply answers, requesters whose request went stale or was
refused; a status table or an "already running" note names people without notifying them.

Everything interpolated here is either validated already (suite names and paths have passed the
grammar, logins are GitHub's) or free text that goes through `code` (a /deny-rocm reason, GitHub's
error messages), so nothing a commenter writes can become a mention, a link or markup.
"""

from __future__ import annotations

import json
import re

from bot.ondemand.grammar import GRAMMAR
from checks.target.dispatch_plan import plan_lines
from checks.wording import amount, plural, visible

REQUEST_CHECK = "MI350 run request · {suite}"
RUN_CHECK = "MI350 · {suite}"
APPROVE_ACTION = {"label": "Approve run", "description": "Dispatch this MI350 run now", "identifier": "approve-run"}


def code(text: str) -> str:
    """`text` as an inline code span that nothing inside can close (CommonMark: a longer fence)."""
    text = visible(" ".join(str(text).split()))  # one line: a code span cannot hold a paragraph break
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def hours(value: float) -> str:
    return amount(value, ".2f")


def _suites(suites: list[str]) -> str:
    return ", ".join(f"`{s}`" for s in suites) if suites else "none (no ROCm suite of this PR is in the dispatch table)"


def grammar_reply(user: str, reason: str, suites: list[str] | None) -> str:
    text = f"@{user} I could not run that command: {reason}.\n\n{GRAMMAR}"
    if suites is not None:
        text += f"\n\nROCm suites this PR can run on demand: {_suites(suites)}."
    return text


def not_selectable(user: str, reason: str, suites: list[str] | None) -> str:
    text = f"@{user} not dispatched: {reason}."
    if suites is not None:
        text += f"\n\nROCm suites this PR can run on demand: {_suites(suites)}."
    return text


def not_a_maintainer(user: str, what: str, role: str, note: str | None) -> str:
    text = (f"@{user} only maintainers can {what}: your role on this repository is `{role}`. "
            "A maintainer approves runs with `/approve-rocm` or the **Approve run** button.")
    if note:
        text += f"\n\nNote: {note}."
    return text


def _selected_table(files_with_est: list[tuple[str, float | None]]) -> str:
    rows = "\n".join(f"| {code(f)} | {'' if e is None else amount(e, 'g', 's')} |" for f, e in files_with_est)
    return "| test file | est_time |\n| --- | --- |\n" + rows


def plan_block(view: dict | None) -> str:
    """The run plan (checks/target/dispatch_plan.py, as `ci-registrar run-plan` prints it), or nothing
    for a request stored before plans were kept."""
    if not view:
        return ""
    return "\n\nRun plan:\n" + "\n".join(f"- {line}" for line in plan_lines(view))


def waiting(user: str, suite: str, head_sha: str, files_with_est, cost: float, gpus: int, note: str | None,
            costed: list[str] | None = None, plan: dict | None = None) -> str:
    text = (f"@{user} your request to run `{suite}` on {head_sha[:7]} is waiting for a maintainer "
            f"({plural(len(files_with_est), 'test file')}, about {hours(cost)} GPU-hours on {plural(gpus, 'GPU')}).\n\n"
            f"A maintainer approves it with `/approve-rocm` or the **Approve run** button of the "
            f"\u201c{REQUEST_CHECK.format(suite=suite)}\u201d check, or refuses it with `/deny-rocm [reason]`. "
            f"An approval holds for this commit only: a new push makes the request stale.\n\n"
            + _selected_table(files_with_est) + cost_notes(costed or []) + plan_block(plan))
    if note:
        text += f"\n\nNote: {note}."
    return text


def dispatched(suite: str, head_sha: str, number: int, run_url: str | None, files_with_est, cost: float, gpus: int,
               used: float, limit: float, approved_by: str | None, costed: list[str] | None = None,
               shards: int = 1, plan: dict | None = None) -> str:
    link = f"[the workflow run]({run_url})" if run_url else "the workflow run (its link follows on the check run)"
    who = f" (approved by @{approved_by})" if approved_by else ""
    return (f"Dispatched `{suite}` on {head_sha} for #{number}{who}: {link}.\n\n"
            + _selected_table(files_with_est)
            + f"\n\nEstimated cost: {hours(cost)} GPU-hours ({_cost_basis(gpus, shards)}). "
              f"Used in the last 24 hours, this one included: {hours(used)} of {hours(limit)} GPU-hours."
            + cost_notes(costed or []) + plan_block(plan))


def _cost_basis(gpus: int, shards: int) -> str:
    if shards <= 1:
        return f"{plural(gpus, 'GPU')} \u00d7 the most each file may run"
    return f"{shards} shards of {plural(gpus, 'GPU')} \u00d7 the longest shard, each file at the most it may run"


def in_flight(user: str, suite: str, run_url: str | None, requester: str) -> str:
    link = f"[its run]({run_url})" if run_url else "its run"
    return (f"@{user} `{suite}` is already running for this PR on its current head ({link}, requested by {requester}); "
            "it was not dispatched again. Ask again when it has finished.")


def head_unseen(user: str, what: str, head_sha: str, moved: bool) -> str:
    """A command written before the PR's head became what it is now: it acts on nothing."""
    why = (f"the head of this PR moved to {head_sha[:7]} after your comment was written"
           if moved else f"I cannot confirm that {head_sha[:7]}, the PR's head now, was its head when your "
                         "comment was written (its push is not recorded yet)")
    return (f"@{user} {why}, so your {what} does not apply to it and nothing was dispatched. "
            f"If {head_sha[:7]} is what you mean, write the command again.")


def cost_notes(notes: list[str]) -> str:
    """Each file's charge and its basis (checks/target/run_cost.py), one line each."""
    if not notes:
        return ""
    return "\n\nCost: " + ("; ".join(notes) if len(notes) == 1 else "\n" + "\n".join(f"- {n}" for n in notes)) + "."


def over_budget(user: str, suite: str, cost: float, used: float, limit: float, costed: list[str]) -> str:
    """The budget's refusal, whether the command is answered at once or the dispatch finds the
    budget spent: with each file's charge (`cost_notes`) in both."""
    return (f"@{user} not dispatched: `{suite}` needs about {hours(cost)} GPU-hours, and {hours(used)} of this "
            f"repository's {hours(limit)} daily GPU-hours have been dispatched in the last 24 hours "
            f"({hours(max(0.0, limit - used))} left)." + cost_notes(costed))


def too_many_files(user: str, count: int, limit: int) -> str:
    return f"@{user} not dispatched: {count} test files listed, at most {limit} per command."


def dispatch_failed(suite: str, status: int | str, message: str) -> str:
    return (f"Dispatch of `{suite}` failed: GitHub answered {status} {code(message)}. The request is kept: "
            "once the cause is fixed, a maintainer retries it with `/approve-rocm`.")


def config_invalid(user: str, problems: list[str]) -> str:
    listed = "\n".join(f"- {code(p)}" for p in problems[:5])
    return (f"@{user} on-demand runs are unavailable: the configuration on the default branch "
            f"(.github/ci-registrar.yml) is invalid:\n{listed}")


def already_decided(user: str, status: str) -> str:
    return f"@{user} this request is already {status}; nothing to approve."


def summary_of_another_head(user: str, summary_sha: str, head_sha: str) -> str:
    """A summary button clicked on a check run of a commit that is no longer the PR's head."""
    return (f"@{user} that summary was for `{summary_sha}`; the head is now "
            f"`{head_sha}`. Use the buttons of its own check run, or comment `/run-rocm SUITE`.")


def button_names_no_suite(user: str) -> str:
    return f"@{user} that button names no suite this App can run; comment `/run-rocm SUITE` instead."


def nothing_pending(user: str, head_sha: str) -> str:
    return f"@{user} there is no pending on-demand request on the current head ({head_sha[:7]})."


def own_request(user: str, suites: list[str]) -> str:
    return (f"@{user} you requested {', '.join(f'`{s}`' for s in suites)} yourself: with two-person approval "
            "(`approvers.two_person`) another maintainer must approve it.")


def denied(user: str, suites: list[str], reason: str | None) -> str:
    why = f": {code(reason)}" if reason else "."
    return f"@{user} refused the on-demand request(s) for {', '.join(f'`{s}`' for s in suites)}{why}"


def stale(new_sha: str, entries: list[tuple[str, str, str]]) -> str:
    listed = "\n".join(f"- `{suite}` requested by @{who} for {sha[:7]}" for suite, who, sha in entries)
    return (f"The head of this PR moved to {new_sha[:7]}: these on-demand requests were for an older commit and "
            f"will not run:\n{listed}\n\nAsk again with `/run-rocm` on the new head.")


def superseded(new_sha: str, entries: list[tuple[str, str, str | None]]) -> str:
    """entries: (suite, old head SHA, run URL) of the runs a push cancelled."""
    listed = "\n".join(f"- `{suite}` on {sha[:7]}" + (f" ([run]({url}))" if url else "") for suite, sha, url in entries)
    return (f"The head of this PR moved to {new_sha[:7]}: these MI350 runs of an older commit were cancelled "
            f"(superseded by {new_sha}):\n{listed}\n\nRun them on the new head with `/run-rocm`.")


def expired(user: str, suites: list[str]) -> str:
    return (f"@{user} the request(s) for {', '.join(f'`{s}`' for s in suites)} expired (older than 7 days) "
            "and will not run. Ask again with `/run-rocm`.")


def status(number: int, requests, used: float, limit: float) -> str:
    if not requests:
        table = "No on-demand request on this PR yet."
    else:
        rows = []
        for r in requests[-15:]:
            run = f"[run]({r.run_url})" if r.run_url else ""
            rows.append(f"| `{r.suite}` | {r.head_sha[:7]} | {r.requester} | {r.status} | "
                        f"{hours(r.cost_gpu_hours)} | {run} |")
        table = "| suite | commit | requested by | state | GPU-hours | run |\n| --- | --- | --- | --- | --- | --- |\n" \
                + "\n".join(rows)
    return (f"On-demand MI350 runs for #{number}:\n\n{table}\n\n"
            f"Dispatched in this repository in the last 24 hours: {hours(used)} of {hours(limit)} GPU-hours.")


# -- check runs ------------------------------------------------------------------------------------
def request_check_output(requester: str, suite: str, head_sha: str, files_with_est, cost: float) -> dict:
    return {"title": "Waiting for a maintainer's approval",
            "summary": (f"@{requester} asked to run `{suite}` on {head_sha} (about {hours(cost)} GPU-hours). "
                        "A maintainer approves it with the **Approve run** button or `/approve-rocm`, or refuses "
                        "it with `/deny-rocm [reason]`. The approval holds for this commit only.\n\n"
                        + _selected_table(files_with_est))}


def request_closed_output(title: str, detail: str) -> dict:
    return {"title": title, "summary": detail}


# The "MI350 run request" check run closed: (title, detail) of request_closed_output.
STALE_TITLE = "Stale"
EXPIRED_TITLE = "Expired"
EXPIRED_DETAIL = "This request is older than 7 days and will not run."


def stale_detail(new_head: str, old_head: str | None = None) -> str:
    return f"The PR's head moved to {new_head}" + (f": this request was for {old_head}." if old_head else ".")


def request_approved(approver: str, run_url: str | None) -> tuple[str, str]:
    return f"Approved by @{approver}", f"Dispatched: {run_url or 'see the MI350 check run'}."


def request_denied(user: str, reason: str | None) -> tuple[str, str]:
    return f"Refused by @{user}", f"Reason: {code(reason)}" if reason else "No reason given."


def run_started_output(suite: str, head_sha: str, run_url: str | None, files_with_est, cost: float,
                       plan: dict | None = None) -> dict:
    """plan: the dispatch's run plan (bot.ondemand.request.details), to say where it runs."""
    link = f"[workflow run]({run_url})" if run_url else "the workflow run"
    return {"title": f"Running on MI350 ({plural(len(files_with_est), 'test file')})",
            "summary": f"`{suite}` on {head_sha}: {link}. Estimated {hours(cost)} GPU-hours.{_where(plan)}\n\n"
                       + _selected_table(files_with_est)}


def _where(plan: dict | None) -> str:
    if not plan or not plan.get("runs_on"):
        return ""
    try:
        labels = ", ".join(f"`{label}`" for label in json.loads(plan["runs_on"]))
    except (TypeError, ValueError):
        return ""
    shards = int(plan.get("shards") or 1)
    return f" Runs on {labels}" + (f" in {shards} parallel shards." if shards > 1 else ".")


def run_superseded_output(suite: str, new_head: str, run_url: str | None) -> dict:
    link = f"[The workflow run]({run_url})" if run_url else "The workflow run"
    return {"title": f"Superseded by {new_head[:7]}",
            "summary": f"`{suite}`: superseded by {new_head}. {link} was cancelled: a push made this commit "
                       "an older head of the pull request."}


def run_finished_output(suite: str, conclusion: str, run_url: str | None, rows: list[dict],
                        not_read: list[str] | None = None) -> dict:
    """rows: {file, status, elapsed, est_time, verdict} per file the run reported, over all its jobs;
    a selected file no job reported has status `NO RESULT` and elapsed None. not_read: each shard
    whose log could not be read, with why (the check then concludes neutral)."""
    link = f"[workflow run]({run_url})" if run_url else "the workflow run"
    if any(r["elapsed"] is not None for r in rows):
        body = "| test file | status | elapsed | est_time | verdict |\n| --- | --- | --- | --- | --- |\n" + "\n".join(
            f"| {code(r['file'])} | {r['status']} | {'' if r['elapsed'] is None else amount(r['elapsed'], 'g', 's')} | "
            f"{'' if r['est_time'] is None else amount(r['est_time'], 'g', 's')} | {r['verdict']} |" for r in rows)
    else:
        body = "The run's logs held no per-file result lines."
    passed = sum(1 for r in rows if r["status"] == "PASS")
    unread = ""
    if not_read:
        unread = ("\n\nNot every shard's log could be read, so this run is not counted as a pass:\n"
                  + "\n".join(f"- {code(line)}" for line in not_read))
    title = f"{conclusion}: {passed} of {plural(len(rows), 'test file')} passed"
    if not_read:
        title += f"; {plural(len(not_read), 'shard log')} not read"
    return {"title": title, "summary": f"`{suite}`: {link} finished with `{conclusion}`.{unread}\n\n{body}"}
