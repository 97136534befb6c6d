"""On-demand run records (migration 0004): requests and their states, the audit log, command steps.

A request's states and the events that move it are one table, bot/store/ondemand_states.py
(docs/on-demand-states.md shows it). Every change of state is one transaction here: change()
compare-and-sets the status from the event's statuses, writes the columns the event names and
its audit entry together, so two workers racing on one delivery change it once and no status is
ever written without its entry; the partial unique index (migration 0007) lets at most one
request per (PR, suite, head SHA) be in flight at a time.

The move to dispatching is reserve(): the daily budget's sum and the claim are one transaction
that holds the repository's budget lock (BEGIN IMMEDIATE on SQLite, a transaction-level advisory
lock on PostgreSQL), so simultaneous dispatches of one repository are decided one after another
against what the others reserved.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from bot.store import ondemand_states as states
from bot.store.db import Base, dialect_insert, get_engine, session_scope
from bot.store.measurements import UTCDateTime
from bot.store.ondemand_states import (APPROVED, COMPLETED, DENIED, DISPATCHED, DISPATCHING, EXPIRED, FAILED,  # noqa: F401
                                       IN_FLIGHT, OPEN, PENDING, REFUSED, RETRYABLE, SPENT, STALE, SUPERSEDED)

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

REQUEST_TTL = dt.timedelta(days=7)


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class RocmRequest(Base):
    __tablename__ = "rocm_requests"

    id: Mapped[int] = mapped_column(_ID, primary_key=True, autoincrement=True)
    repository: Mapped[str] = mapped_column(sa.String(200))
    pull_number: Mapped[int] = mapped_column(sa.Integer)
    head_sha: Mapped[str] = mapped_column(sa.String(64))
    suite: Mapped[str] = mapped_column(sa.String(200))
    files_json: Mapped[str] = mapped_column("files", sa.Text)
    requester: Mapped[str] = mapped_column(sa.String(100))
    comment_id: Mapped[int | None] = mapped_column(sa.BigInteger, nullable=True)
    commented_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)  # GitHub's created_at
    status: Mapped[str] = mapped_column(sa.String(16))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    decided_by: Mapped[str | None] = mapped_column(sa.String(100), nullable=True)
    reason: Mapped[str | None] = mapped_column(sa.String(500), nullable=True)
    cost_gpu_hours: Mapped[float] = mapped_column(sa.Float, default=0.0)
    dispatch_repository: Mapped[str] = mapped_column(sa.String(200))
    workflow: Mapped[str] = mapped_column(sa.String(200))
    request_check_run_id: Mapped[int | None] = mapped_column(sa.BigInteger, nullable=True)
    run_check_run_id: Mapped[int | None] = mapped_column(sa.BigInteger, nullable=True)
    workflow_run_id: Mapped[int | None] = mapped_column(sa.BigInteger, nullable=True)
    run_url: Mapped[str | None] = mapped_column(sa.String(500), nullable=True)
    dispatched_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    completed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)

    @property
    def details(self) -> dict:
        """{"requested": the files the command listed (none: the whole suite), "selected": [[file,
        est_time]...] at the request's head SHA, "gpus": n}."""
        data = json.loads(self.files_json or "{}")
        return data if isinstance(data, dict) else {"requested": list(data)}

    def expired(self, at: dt.datetime | None = None) -> bool:
        return self.status in OPEN and (at or now()) - self.created_at > REQUEST_TTL


class AuditEntry(Base):
    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(_ID, primary_key=True, autoincrement=True)
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    repository: Mapped[str] = mapped_column(sa.String(200))
    pull_number: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    head_sha: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    action: Mapped[str] = mapped_column(sa.String(32))
    actor: Mapped[str | None] = mapped_column(sa.String(100), nullable=True)
    suite: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    files_json: Mapped[str | None] = mapped_column("files", sa.Text, nullable=True)
    cost_gpu_hours: Mapped[float | None] = mapped_column(sa.Float, nullable=True)
    run_id: Mapped[int | None] = mapped_column(sa.BigInteger, nullable=True)
    request_id: Mapped[int | None] = mapped_column(sa.BigInteger, nullable=True)
    detail: Mapped[str | None] = mapped_column(sa.String(500), nullable=True)
    delivery_id: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)

    def as_json(self) -> dict:
        return {"at": self.at.isoformat().replace("+00:00", "Z"), "repository": self.repository,
                "pull_number": self.pull_number, "head_sha": self.head_sha, "action": self.action,
                "actor": self.actor, "suite": self.suite, "files": json.loads(self.files_json or "[]"),
                "cost_gpu_hours": self.cost_gpu_hours, "run_id": self.run_id, "request_id": self.request_id,
                "detail": self.detail, "delivery_id": self.delivery_id}


class Step(Base):
    __tablename__ = "ondemand_steps"

    key: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    step: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime)


# -- steps: a side effect on GitHub taken at most once per command ------------------------------
def claim_step(url: str, key: str, step: str) -> bool:
    """True for the one caller that takes `step` of `key` (a comment, a click); False for the rest.

    The primary key decides, across threads and processes. A caller whose side effect then fails
    in a way worth retrying calls release_step, so the retried job can take the step again.
    """
    with session_scope(url) as session:
        return _claim(session, key, step)


def _claim(session, key: str, step: str) -> bool:
    insert = dialect_insert(session)
    # RETURNING names the row only if this insert made it (the rowcount of an upsert is not portable)
    done = session.execute(insert(Step.__table__).values(key=key[:200], step=step[:64], at=now())
                           .on_conflict_do_nothing(index_elements=["key", "step"]).returning(Step.__table__.c.key))
    return done.first() is not None


def release_step(url: str, key: str, step: str) -> None:
    with session_scope(url) as session:
        session.execute(sa.delete(Step).where(Step.key == key[:200], Step.step == step[:64]))


# -- requests ------------------------------------------------------------------------------------
def create_request(url: str, *, event: str, audit: dict, repository: str, pull_number: int, head_sha: str,
                   suite: str, details: dict, requester: str, comment_id: int | None, cost_gpu_hours: float,
                   dispatch_repository: str, workflow: str, decided_by: str | None = None,
                   commented_at: dt.datetime | None = None) -> tuple[RocmRequest, bool]:
    """The request for this comment: (row, True) when this call made it, (existing row, False) if not.

    `event`: "request" (pending) or "request_at_once" (approved), bot/store/ondemand_states.py. The
    row and its audit entry (`audit`: audit()'s fields but the action) are one transaction."""
    e = states.check(event, {"decided_by"} if decided_by is not None else (), True)
    if not e.creates:
        raise ValueError(f"event {event!r} does not make a request")
    at = now()
    try:
        with session_scope(url) as session:
            row = RocmRequest(repository=repository, pull_number=pull_number, head_sha=head_sha, suite=suite,
                              files_json=json.dumps(details), requester=requester, comment_id=comment_id,
                              status=e.to_status, created_at=at, updated_at=at, cost_gpu_hours=cost_gpu_hours,
                              dispatch_repository=dispatch_repository, workflow=workflow, decided_by=decided_by,
                              commented_at=commented_at)
            session.add(row)
            session.flush()
            session.add(_entry(row, e.audit, audit))
            return row, True
    except IntegrityError:
        existing = request_by_comment(url, repository, comment_id)
        if existing is None:
            raise
        return existing, False


def _one(url: str, *where) -> RocmRequest | None:
    with session_scope(url) as session:
        return session.scalars(sa.select(RocmRequest).where(*where).order_by(RocmRequest.id.desc())).first()


def get_request(url: str, request_id: int) -> RocmRequest | None:
    return _one(url, RocmRequest.id == request_id)


def request_by_comment(url: str, repository: str, comment_id: int | None) -> RocmRequest | None:
    if comment_id is None:
        return None
    return _one(url, RocmRequest.repository == repository, RocmRequest.comment_id == comment_id)


def request_by_check_run(url: str, repository: str, check_run_id: int) -> RocmRequest | None:
    return _one(url, RocmRequest.repository == repository, RocmRequest.request_check_run_id == check_run_id)


def request_by_workflow_run(url: str, dispatch_repository: str, run_id: int) -> RocmRequest | None:
    return _one(url, RocmRequest.dispatch_repository == dispatch_repository, RocmRequest.workflow_run_id == run_id)


def requests_for_pull(url: str, repository: str, pull_number: int, statuses=None) -> list[RocmRequest]:
    with session_scope(url) as session:
        stmt = sa.select(RocmRequest).where(RocmRequest.repository == repository,
                                            RocmRequest.pull_number == pull_number)
        if statuses is not None:
            stmt = stmt.where(RocmRequest.status.in_(list(statuses)))
        return list(session.scalars(stmt.order_by(RocmRequest.id)))


def in_flight(url: str, repository: str, pull_number: int, suite: str, head_sha: str) -> RocmRequest | None:
    return _one(url, RocmRequest.repository == repository, RocmRequest.pull_number == pull_number,
                RocmRequest.suite == suite, RocmRequest.head_sha == head_sha, RocmRequest.status.in_(IN_FLIGHT))


def in_flight_for_pull(url: str, repository: str, pull_number: int) -> list[RocmRequest]:
    """Every run of this PR in flight now, whatever its suite and head."""
    return requests_for_pull(url, repository, pull_number, IN_FLIGHT)


def change(url: str, request_id: int, event: str, *, audit: dict | None = None, **values) -> RocmRequest | None:
    """One event of bot/store/ondemand_states.py on one request, in one transaction.

    Compare-and-set: the request moves to the event's status only if it is in one of the event's
    `from_statuses`, with `values` (only columns the event names) and, for an event that has one,
    its audit entry (`audit`: audit()'s fields but the action; the request's repository, PR, head,
    suite and id by default). Returns the row as changed, or None when another worker moved it
    first, or when the move would put a second run of the same (PR, suite, head) in flight (the
    partial unique index refuses it): then nothing is written.
    """
    e = states.check(event, values, audit is not None)
    if e.creates:
        raise ValueError(f"event {event!r} makes a request: create_request")
    try:
        with session_scope(url) as session:
            done = session.execute(
                sa.update(RocmRequest)
                .where(RocmRequest.id == request_id, RocmRequest.status.in_(list(e.from_statuses)))
                .values(status=e.to_status, updated_at=now(), **values)
            )
            if done.rowcount != 1:
                return None
            row = session.scalars(sa.select(RocmRequest).where(RocmRequest.id == request_id)).one()
            if e.audit is not None:
                session.add(_entry(row, e.audit, audit))
            return row
    except IntegrityError:
        return None


def update_request(url: str, request_id: int, **values) -> None:
    """Columns that are not a change of state (a check run's id, a run found by its name); a status
    changes only by change(), create_request() or reserve()."""
    if "status" in values:
        raise ValueError("a request's status changes only by an event: bot.store.ondemand.change")
    with session_scope(url) as session:
        session.execute(sa.update(RocmRequest).where(RocmRequest.id == request_id).values(updated_at=now(), **values))


def _spent_since(repository: str, since: dt.datetime):
    return sa.select(sa.func.coalesce(sa.func.sum(RocmRequest.cost_gpu_hours), 0.0)).where(
        RocmRequest.repository == repository, RocmRequest.status.in_(SPENT), RocmRequest.dispatched_at >= since)


def gpu_hours_since(url: str, repository: str, since: dt.datetime) -> float:
    """GPU-hours dispatched for a repository since `since` (the daily budget's rolling window)."""
    with session_scope(url) as session:
        return float(session.scalar(_spent_since(repository, since)) or 0.0)


# -- the budget reservation -----------------------------------------------------------------------
RESERVED, OVER_BUDGET, BUSY, MOVED = "reserved", "over_budget", "in_flight", "moved"


@dataclass(frozen=True)
class Reservation:
    outcome: str  # RESERVED | OVER_BUDGET | BUSY (a run of this PR, suite and head in flight) | MOVED
    used: float  # GPU-hours dispatched in the window before this one (under the lock)


def _budget_key(repository: str) -> int:
    return int.from_bytes(hashlib.sha256(f"rocm-budget:{repository}".encode()).digest()[:8], "big", signed=True)


def reserve(url: str, request_id: int, *, since: dt.datetime, limit: float, **values) -> Reservation:
    """The event "reserve": move the request to dispatching if its cost fits the budget, check and
    claim in one transaction.

    Under the repository's budget lock: sum what was dispatched since `since`, and, if this
    request's cost fits under `limit`, compare-and-set it to dispatching with `values`. MOVED: the
    request was not in the event's `from_statuses` any more (another worker moved it); BUSY: the
    partial unique index refused a second run of its (PR, suite, head).
    """
    e = states.check("reserve", values, False)
    from_statuses = e.from_statuses
    engine = get_engine(url)
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as conn:
        if sqlite:
            # pysqlite begins a transaction only before a write; BEGIN IMMEDIATE takes the write
            # lock before the sum is read, so no other reservation commits in between.
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _budget_key_for(url, request_id, conn)})
        try:
            outcome, write = _reserve_locked(conn, request_id, list(from_statuses), since, float(limit), values)
        except BaseException:
            if sqlite:
                conn.exec_driver_sql("ROLLBACK")  # SQLAlchemy does not know of the BEGIN it did not issue
            raise
        if sqlite:
            conn.exec_driver_sql("COMMIT" if write else "ROLLBACK")
        elif write:
            conn.commit()
        else:
            conn.rollback()
        return outcome


def _reserve_locked(conn, request_id: int, from_statuses: list, since, limit: float, values) -> tuple[Reservation, bool]:
    """(the reservation, whether to commit): nothing is written unless the claim succeeded."""
    row = conn.execute(sa.select(RocmRequest.repository, RocmRequest.cost_gpu_hours, RocmRequest.status)
                       .where(RocmRequest.id == request_id)).first()
    if row is None or row.status not in from_statuses:
        return Reservation(MOVED, 0.0), False
    used = float(conn.scalar(_spent_since(row.repository, since)) or 0.0)
    if used + float(row.cost_gpu_hours) > limit + 1e-9:
        return Reservation(OVER_BUDGET, used), False
    try:
        done = conn.execute(sa.update(RocmRequest).where(
            RocmRequest.id == request_id, RocmRequest.status.in_(from_statuses))
            .values(status=states.EVENTS["reserve"].to_status, updated_at=now(), **values))
    except IntegrityError:
        return Reservation(BUSY, used), False
    return Reservation(RESERVED if done.rowcount == 1 else MOVED, used), done.rowcount == 1


def _budget_key_for(url: str, request_id: int, conn) -> int:
    # The lock is per repository: read the request's repository first (it never changes).
    repository = conn.scalar(sa.select(RocmRequest.repository).where(RocmRequest.id == request_id))
    return _budget_key(repository or "")


# -- the audit log -------------------------------------------------------------------------------
def _new_entry(*, repository: str, action: str, actor: str | None = None, pull_number: int | None = None,
               head_sha: str | None = None, suite: str | None = None, files=None, cost_gpu_hours: float | None = None,
               run_id: int | None = None, request_id: int | None = None, detail: str | None = None,
               delivery_id: str | None = None) -> AuditEntry:
    return AuditEntry(at=now(), repository=repository, pull_number=pull_number, head_sha=head_sha,
                      action=action, actor=actor, suite=suite,
                      files_json=json.dumps(list(files)) if files is not None else None,
                      cost_gpu_hours=cost_gpu_hours, run_id=run_id, request_id=request_id,
                      detail=(detail or "")[:500] or None, delivery_id=delivery_id)


def _entry(row: RocmRequest, action: str, values: dict) -> AuditEntry:
    """The audit entry of an event on `row`: its repository, PR, head, suite and id unless given."""
    return _new_entry(**{"repository": row.repository, "pull_number": row.pull_number, "head_sha": row.head_sha,
                         "suite": row.suite, "request_id": row.id, **values, "action": action})


def audit(url: str, **values) -> None:
    """An entry that changes no request (a command, a refusal before any request, a vanished PR)."""
    with session_scope(url) as session:
        session.add(_new_entry(**values))


def audit_once(url: str, key: str, step: str, **values) -> bool:
    """audit(), once per (key, step): the step's claim and the entry are one transaction. False
    (and nothing written) when the step was claimed before."""
    with session_scope(url) as session:
        if not _claim(session, key, step):
            return False
        session.add(_new_entry(**values))
        return True


def audit_entries(url: str, *, repository: str | None = None, pull_number: int | None = None,
                  limit: int | None = 200, repositories=None) -> list[AuditEntry]:
    """Newest first. `repositories`: only these (a caller that may see some repositories only)."""
    with session_scope(url) as session:
        stmt = sa.select(AuditEntry)
        if repository is not None:
            stmt = stmt.where(AuditEntry.repository == repository)
        if repositories is not None:
            stmt = stmt.where(AuditEntry.repository.in_(list(repositories)))
        if pull_number is not None:
            stmt = stmt.where(AuditEntry.pull_number == pull_number)
        stmt = stmt.order_by(AuditEntry.at.desc(), AuditEntry.id.desc())
        if limit is not None:
            stmt = stmt.limit(limit)
        return list(session.scalars(stmt))


def requests_without_run(url: str, dispatch_repository: str) -> list[RocmRequest]:
    """Dispatched requests whose run GitHub did not name (matched later by the run's name)."""
    with session_scope(url) as session:
        return list(session.scalars(sa.select(RocmRequest).where(
            RocmRequest.dispatch_repository == dispatch_repository, RocmRequest.status == DISPATCHED,
            RocmRequest.workflow_run_id.is_(None)).order_by(RocmRequest.id)))


def open_requests_before(url: str, created_before: dt.datetime) -> list[RocmRequest]:
    """Requests still waiting (pending, approved, failed) that were made before `created_before`."""
    with session_scope(url) as session:
        return list(session.scalars(sa.select(RocmRequest).where(
            RocmRequest.status.in_(list(RETRYABLE)), RocmRequest.created_at < created_before)
            .order_by(RocmRequest.id)))
