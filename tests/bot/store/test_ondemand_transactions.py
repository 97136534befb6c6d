"""One change of state, one transaction (issue 28, item 3): the on-demand commands' transactions,
counted, and the table of states and events (bot/store/ondemand_states.py) that every change
of a request's status goes through.

The counts are the transactions that wrote the on-demand tables (rocm_requests, audit_log,
ondemand_steps), read from the SQL the store sends (tests/transactions.py). Before this change a
maintainer's `/run-rocm` took 10 of them, 6 of which set a status or wrote an audit entry, each
status and its entry written apart; now every status is written with its audit entry, and the
steps that remain are the sequence docs/on-demand-states.md documents.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bot.store import ondemand as store
from bot.store import ondemand_states as states
from tests import REPO
from tests.ondemand_support import ALL_PASS_LOG, SUITE, build_ondemand
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.transactions import Transactions

ROOT = REPO
# A status and its audit entry, one transaction.
STATUS_AND_ENTRY = "audit_log+rocm_requests+status"


@pytest.fixture()
def od(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    return build_ondemand(github_sim, tmp_path)


def counted(od, action) -> Transactions:
    with Transactions(od.world.settings.database_url) as t:
        action()
    return t


def test_a_maintainers_run_rocm_takes_the_documented_sequence(od):
    t = counted(od, lambda: od.comment(f"/run-rocm {SUITE}", author="maint"))
    assert len(od.dispatches()) == 1
    assert t.summary() == [
        "audit_log+ondemand_steps",  # 1. the command's entry, with its step
        STATUS_AND_ENTRY,  # 2. the request (approved) and its "request" entry
        "rocm_requests+status",  # 4. reserve: the budget's sum and the claim, under the budget lock
        STATUS_AND_ENTRY,  # 6. confirm: dispatched, the run, the "dispatch" entry
        "ondemand_steps", "rocm_requests",  # 7. the run's check run: its step, then its id
        "ondemand_steps",  # 9. the reply's step
    ]
    assert len(t.writes()) == 7  # was 10
    assert len(t.state_changes()) == 4  # was 6: each status and its entry were written apart


def test_a_contributors_request_then_an_approval(od):
    t = counted(od, lambda: od.comment(f"/run-rocm {SUITE}", author="bob"))
    assert t.summary() == ["audit_log+ondemand_steps", STATUS_AND_ENTRY,  # the command; the request, pending
                           "ondemand_steps", "rocm_requests", "ondemand_steps"]  # its check run; the reply
    assert (len(t.writes()), len(t.state_changes())) == (5, 2)  # were 7 and 3
    t = counted(od, lambda: od.comment("/approve-rocm", author="maint"))
    assert len(od.dispatches()) == 1
    assert t.summary() == [
        "audit_log+ondemand_steps",  # the command
        STATUS_AND_ENTRY,  # approve: approved and its "approval" entry
        "rocm_requests+status",  # reserve
        STATUS_AND_ENTRY,  # confirm
        "ondemand_steps", "rocm_requests",  # the run's check run
        "ondemand_steps",  # the request's check run completed as approved
        "ondemand_steps",  # the reply
    ]
    assert (len(t.writes()), len(t.state_changes())) == (8, 4)  # were 11 and 6


def test_the_webhook_driven_changes_are_one_transaction_each(od):
    od.comment(f"/run-rocm {SUITE}", author="maint")
    [d] = od.dispatches()
    t = counted(od, lambda: od.finish_run(d, [ALL_PASS_LOG]))
    assert t.summary() == [STATUS_AND_ENTRY]  # completed and its "completion" entry (were 2)
    od.comment(f"/run-rocm {SUITE}", author="maint")
    od.comment("/run-rocm nightly-stage-c-8-gpu-mi350", author="bob")
    t = counted(od, lambda: od.push({"tests/e2e/test_new.py": "x = 1\n"}))
    # superseded (with its entry), its cancel, its check run and the comment; stale (with its
    # entry) and the comment: each status one transaction with its entry (were 2 apiece)
    assert t.summary() == [STATUS_AND_ENTRY, "ondemand_steps", "ondemand_steps", "ondemand_steps",
                           STATUS_AND_ENTRY, "ondemand_steps"]


def test_a_denial_is_one_transaction(od):
    od.comment(f"/run-rocm {SUITE}", author="bob")
    t = counted(od, lambda: od.comment("/deny-rocm not now", author="maint"))
    assert t.summary() == ["audit_log+ondemand_steps", STATUS_AND_ENTRY, "ondemand_steps"]  # were 5 writes


# -- the table ----------------------------------------------------------------------------------
def test_a_change_not_in_the_table_raises_before_anything_is_written(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    from bot.store.measurements import ensure_store

    ensure_store(url)
    request, made = store.create_request(
        url, event="request", audit={"actor": "bob"}, repository="acme/x", pull_number=1, head_sha="a" * 40,
        suite=SUITE, details={}, requester="bob", comment_id=1, cost_gpu_hours=1.0, dispatch_repository="acme/x",
        workflow="w.yml")
    assert made and request.status == states.PENDING
    with pytest.raises(ValueError, match="not an event"):
        store.change(url, request.id, "launch", audit={})
    with pytest.raises(ValueError, match="does not write"):
        store.change(url, request.id, "deny", audit={}, workflow_run_id=5)
    with pytest.raises(ValueError, match="writes a 'denial' audit entry"):
        store.change(url, request.id, "deny", decided_by="maint")
    with pytest.raises(ValueError, match="writes no audit entry"):
        store.change(url, request.id, "undispatchable", audit={}, reason="x")
    with pytest.raises(ValueError, match="only by an event"):
        store.update_request(url, request.id, status=states.APPROVED)
    with pytest.raises(ValueError, match="makes a request"):
        store.change(url, request.id, "request", audit={})
    assert store.get_request(url, request.id).status == states.PENDING
    assert [e.action for e in store.audit_entries(url)] == ["request"]
    # an event from a status it does not start from changes nothing and writes no entry
    assert store.change(url, request.id, "complete", audit={}, completed_at=store.now()) is None
    denied = store.change(url, request.id, "deny", audit={"actor": "maint", "detail": "no"}, decided_by="maint")
    assert denied.status == states.DENIED and denied.decided_by == "maint"
    assert [(e.action, e.request_id, e.suite, e.head_sha) for e in store.audit_entries(url)] == [
        ("denial", request.id, SUITE, "a" * 40), ("request", request.id, SUITE, "a" * 40)]
    assert store.change(url, request.id, "deny", audit={"actor": "maint"}, decided_by="maint") is None
    assert len(store.audit_entries(url)) == 2


def test_every_event_moves_between_declared_statuses():
    for e in states.EVENTS.values():
        assert e.to_status in states.STATUSES and set(e.from_statuses) <= set(states.STATUSES), e.name
        assert e.values <= {c.name for c in store.RocmRequest.__table__.columns}, e.name
    # every status but the first is reached by some event
    assert {e.to_status for e in states.EVENTS.values()} == set(states.STATUSES)


STATUS_WORDS = set(states.STATUSES)


def _status_literals(path: Path) -> list[tuple[int, str]]:
    """A status spelled as a string where a request's status is read or written: compared with a
    `.status` attribute, or passed as `status=` (GitHub's own `"completed"` runs are not requests)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Attribute) and o.attr == "status" for o in operands):
                found += [(c.lineno, c.value) for o in operands for c in ast.walk(o)
                          if isinstance(c, ast.Constant) and c.value in STATUS_WORDS]
        if isinstance(node, ast.keyword) and node.arg == "status":
            found += [(c.lineno, c.value) for c in ast.walk(node.value)
                      if isinstance(c, ast.Constant) and c.value in STATUS_WORDS]
    return found


def test_the_status_literal_check_would_catch_one(tmp_path):
    import textwrap

    sample = tmp_path / "probe.py"
    sample.write_text(textwrap.dedent("""\
        if request.status == "approved":
            store.update_request(url, 1, status="failed")
        if run.get("status") == "completed":
            pass
        """))
    assert _status_literals(sample) == [(1, "approved"), (2, "failed")]


@pytest.mark.parametrize("path", ["bot/ondemand/pull.py", "bot/ondemand/request.py", "bot/ondemand/dispatch.py",
                                  "bot/ondemand/completion.py", "bot/ondemand/housekeeping.py",
                                  "bot/worker/handlers/rocm_commands.py",
                                  "bot/worker/handlers/rocm_approvals.py", "bot/worker/handlers/rocm_runs.py",
                                  "bot/store/ondemand.py"])
def test_no_status_is_spelled_outside_the_table(path):
    assert _status_literals(ROOT / path) == []
    source = (ROOT / path).read_text()
    assert "store.transition(" not in source


def test_the_table_of_states_is_the_documented_one():
    """docs/on-demand-states.md is generated from this module (`make docs`): what a reader of the
    document sees is exactly the table the store enforces, row by row, with every column."""
    doc = (REPO / "docs" / "on-demand-states.md").read_text()
    assert states.markdown() == doc
    for e in states.EVENTS.values():
        row = next(line for line in doc.splitlines() if line.startswith(f"| `{e.name}` |"))
        assert f"| `{e.to_status}` |" in row and (e.writes or "") in row
    assert doc.count("\n| ") >= len(states.EVENTS) + len(states.STATUSES) + len(states.DISPATCH_SEQUENCE)
