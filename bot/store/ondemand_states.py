"""An on-demand request's states and the events that move it between them: the one table.

Every change of a request's status is one of the EVENTS below, applied by
bot.store.ondemand.change (or, for the two events that make a request, create_request, and for
the budget's claim, reserve): one transaction that compare-and-sets the status from the event's
`from_statuses` to its `to_status`, writes the columns the event names and nothing else, and adds
the event's audit entry. An event not in the table, a column it does not name, or an audit entry
it does not declare (or the lack of one it does) raises ValueError before anything is written.

GitHub's calls (the dispatch, check runs, replies) cannot be part of a transaction. A command that
interleaves them with writes is the sequence of DISPATCH_SEQUENCE: each write one transaction,
each guarded by the status it starts from or by a claimed step, so a retried job resumes where
the last one stopped and never dispatches or charges twice.

docs/on-demand-states.md is generated from this module (`make docs`; tests/test_docs.py fails
when it is stale).
"""

from __future__ import annotations

from dataclasses import dataclass

PENDING, APPROVED, DISPATCHING, DISPATCHED, COMPLETED = "pending", "approved", "dispatching", "dispatched", "completed"
DENIED, STALE, EXPIRED, SUPERSEDED = "denied", "stale", "expired", "superseded"
FAILED, REFUSED = "failed", "refused"

STATUSES: dict[str, str] = {
    PENDING: "waiting for a maintainer's approval",
    APPROVED: "approved (or a maintainer's own command), not dispatched yet",
    DISPATCHING: "claimed for dispatch under the budget lock; its GPU-hours count against the budget",
    DISPATCHED: "GitHub started its run; the run holds the (PR, suite, head) slot",
    COMPLETED: "its run finished and its results are on the PR",
    FAILED: "the dispatch failed or was never confirmed; approvable again",
    REFUSED: "over the daily budget, or another run of its (PR, suite, head) was in flight",
    DENIED: "a maintainer refused it",
    STALE: "the PR's head moved before it was dispatched",
    EXPIRED: "not dispatched within 7 days",
    SUPERSEDED: "a push moved the PR's head while it ran: cancelled",
}

# Not dispatched yet: approvable, and a push makes these stale.
RETRYABLE = (PENDING, APPROVED, FAILED)
OPEN = (PENDING, APPROVED)  # what RocmRequest.expired considers
IN_FLIGHT = (DISPATCHING, DISPATCHED)  # the partial unique index (migration 0007) admits one per (PR, suite, head)
# What counts against the daily GPU-hour budget: a superseded run was cancelled, but it held its
# GPUs until then.
SPENT = (DISPATCHING, DISPATCHED, COMPLETED, SUPERSEDED)


@dataclass(frozen=True)
class Event:
    name: str
    from_statuses: tuple[str, ...]  # () : the event makes the request
    to_status: str
    audit: str | None  # the audit entry's action, written in the same transaction (None: no entry)
    values: frozenset[str]  # the columns the transaction may set besides status and updated_at
    cause: str  # what causes it
    writes: str = ""  # what else the transaction writes or holds, for the docs

    @property
    def creates(self) -> bool:
        return not self.from_statuses


def _event(name, from_statuses, to_status, audit, values, cause, writes="") -> Event:
    return Event(name, tuple(from_statuses), to_status, audit, frozenset(values), cause, writes)


_RUN = ("workflow_run_id", "run_url")
EVENTS: dict[str, Event] = {e.name: e for e in (
    _event("request", (), PENDING, "request", (), "`/run-rocm` by anyone but a maintainer (any command under "
           "`approvers.two_person`)", "the request row: its selection, plan and cost"),
    _event("request_at_once", (), APPROVED, "request", ("decided_by",), "`/run-rocm` by a maintainer",
           "the request row: its selection, plan and cost"),
    _event("approve", (PENDING, FAILED), APPROVED, "approval", ("decided_by",),
           "`/approve-rocm`, the Approve button or the summary's button, by a maintainer"),
    _event("reserve", RETRYABLE, DISPATCHING, None, ("dispatched_at", "decided_by"),
           "the dispatch of an approved request",
           "holds the repository's budget lock: the GPU-hours spent in the last 24 hours are summed and the "
           "claim made only if the request's cost fits"),
    _event("confirm", (DISPATCHING,), DISPATCHED, "dispatch", _RUN, "GitHub accepted the `workflow_dispatch`",
           "the run's id and address"),
    _event("dispatch_failed", (DISPATCHING,), FAILED, "dispatch_failed", ("dispatched_at", "reason"),
           "GitHub refused the `workflow_dispatch` (404 workflow, 422 inputs)", "its GPU-hours are released"),
    _event("dispatch_unconfirmed", (DISPATCHING,), FAILED, None, ("dispatched_at", "reason"),
           "GitHub did not answer the `workflow_dispatch` and no run of it is found (the job is retried)",
           "its GPU-hours are released"),
    _event("settle_found", (DISPATCHING,), DISPATCHED, None, _RUN,
           "a later command finds the run of a dispatch claimed over 10 minutes ago, never confirmed",
           "the run's id and address"),
    _event("settle_lost", (DISPATCHING,), FAILED, None, ("dispatched_at", "reason"),
           "a later command finds no run of a dispatch claimed over 10 minutes ago (its worker died)",
           "its GPU-hours are released"),
    _event("run_gone", (DISPATCHED,), FAILED, "dispatch_failed", ("reason",),
           "a later command finds the run deleted"),
    _event("complete", (DISPATCHED,), COMPLETED, "completion", ("completed_at",),
           "`workflow_run` completed (or a later command finds the run finished)",
           "after the run's durations are stored and its check run completed"),
    _event("supersede", IN_FLIGHT, SUPERSEDED, "superseded", ("completed_at", "reason"),
           "a push to the PR (`pull_request` synchronize), unless `budgets.cancel_superseded_runs` is off",
           "its run is cancelled and its check run completed after"),
    _event("superseded_run_named", (SUPERSEDED,), SUPERSEDED, "superseded", _RUN,
           "GitHub names the run of a dispatch superseded while it was made", "the run's id; it is cancelled after"),
    _event("over_budget", RETRYABLE, REFUSED, "refusal", ("reason",),
           "the dispatch found the daily GPU-hour budget spent"),
    _event("busy", RETRYABLE, REFUSED, "refusal", ("reason",),
           "the dispatch found another run of its (PR, suite, head) in flight"),
    _event("undispatchable", RETRYABLE, FAILED, None, ("reason",),
           "the dispatch found its suite gone from the dispatch table"),
    _event("unplanned", RETRYABLE, FAILED, "refusal", ("reason",),
           "the dispatch found no run plan (a request made before plans were kept)"),
    _event("stale", RETRYABLE, STALE, "stale", ("reason",),
           "a push to the PR, an approval or a dispatch finding the PR's head moved"),
    _event("expire", RETRYABLE, EXPIRED, "expiry", (),
           "7 days old: found when the PR's requests are read, or by the worker's periodic pass"),
    _event("deny", RETRYABLE, DENIED, "denial", ("decided_by", "reason"), "`/deny-rocm` by a maintainer"),
)}


def event(name: str) -> Event:
    try:
        return EVENTS[name]
    except KeyError:
        raise ValueError(f"{name!r} is not an event of an on-demand request (bot/store/ondemand_states.py)") from None


def check(name: str, values, audit: bool) -> Event:
    """The event `name`, if `values` are columns it writes and `audit` matches its audit entry; else ValueError."""
    e = event(name)
    extra = set(values) - e.values
    if extra:
        raise ValueError(f"event {name!r} does not write {', '.join(sorted(extra))}")
    if audit != (e.audit is not None):
        raise ValueError(f"event {name!r} " + (f"writes a {e.audit!r} audit entry" if e.audit else "writes no audit entry"))
    return e


# -- the sequence of a dispatch -------------------------------------------------------------------
# (what is done, transaction or GitHub call, what makes it safe to repeat)
DISPATCH_SEQUENCE: tuple[tuple[str, str, str], ...] = (
    ("the command's audit entry", "one transaction: the claimed step `audit` of the comment and the entry",
     "the step is claimed once per comment"),
    ("`request` or `request_at_once`", "one transaction: the row and its `request` entry",
     "one request per comment (a unique key): a retried job finds it and carries it on from its status"),
    ("`approve` (a waiting request)", "one transaction: the status and its `approval` entry",
     "compare-and-set from pending or failed"),
    ("`reserve`", "one transaction under the budget lock: the sum and the claim",
     "compare-and-set from pending, approved or failed: a retried job finds it dispatching or dispatched and "
     "follows it through, never dispatching it again"),
    ("`workflow_dispatch`", "GitHub", "taken only by the worker whose `reserve` succeeded"),
    ("`confirm` (or `dispatch_failed`, `dispatch_unconfirmed`)", "one transaction: the status, the run and the entry",
     "compare-and-set from dispatching; a worker that died before it leaves the request dispatching, which a later "
     "command settles after 10 minutes (`settle_found`, `settle_lost`)"),
    ("the check run `MI350 · <suite>`", "a claimed step, GitHub, then one transaction recording its id",
     "the step `run-check` is claimed once per request"),
    ("the check run `MI350 run request · <suite>` completed as approved (an approved request's)",
     "a claimed step, then GitHub", "the step `request-check-approved` is claimed once per request"),
    ("the rocket and the reply", "a claimed step, then GitHub", "the step `dispatched` is claimed once per request"),
)


def markdown() -> str:
    """docs/on-demand-states.md."""
    out = ["# On-demand requests: states and transitions", "",
           "<!-- Generated from bot/store/ondemand_states.py by `make docs`: edit that file, not this one. -->", "",
           "A `/run-rocm` command makes a request (one row per comment). Its status changes only by the events",
           "below, each **one database transaction**: a compare-and-set from the listed statuses (a second",
           "worker on the same delivery changes nothing), the columns the event names, and its audit entry,",
           "written together or not at all. An event not in this table raises before anything is written.",
           "", "## States", "", "| status | meaning | not dispatched yet | counts against the budget |",
           "| --- | --- | --- | --- |"]
    for status, meaning in STATUSES.items():
        out.append(f"| `{status}` | {meaning} | {'yes' if status in RETRYABLE else ''} | "
                   f"{'yes' if status in SPENT else ''} |")
    out += ["", "## Transitions", "", "| event | from | to | caused by | audit entry | also written |",
            "| --- | --- | --- | --- | --- | --- |"]
    for e in EVENTS.values():
        source = ", ".join(f"`{s}`" for s in e.from_statuses) or "(new request)"
        also = ", ".join(f"`{v}`" for v in sorted(e.values))
        also = "; ".join(x for x in (also, e.writes) if x)
        out.append(f"| `{e.name}` | {source} | `{e.to_status}` | {e.cause} | "
                   f"{f'`{e.audit}`' if e.audit else ''} | {also} |")
    out += ["", "Every other command is one transaction (its status and its entry) followed by GitHub's calls",
            "(check runs, comments, a run's cancel), each guarded by a step claimed once per request or",
            "comment, and released when GitHub's answer is worth retrying.",
            "", "## A dispatch, step by step", "",
            "GitHub's calls cannot be part of a transaction, so a dispatch is a sequence: each write is one",
            "transaction guarded by the status it starts from (or by a claimed step), so a job retried after",
            "any step resumes where the last attempt stopped, and never dispatches or charges twice.", "",
            "| # | step | how | why repeating it is safe |", "| --- | --- | --- | --- |"]
    for i, (step, how, safe) in enumerate(DISPATCH_SEQUENCE, 1):
        out.append(f"| {i} | {step} | {how} | {safe} |")
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")
