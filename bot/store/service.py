"""The service's own records: webhook deliveries and their outcome, installations, check runs."""

from __future__ import annotations

import datetime as dt
import re

from sqlalchemy import BigInteger, Boolean, DateTime, Integer, String, func, select, update
from sqlalchemy.orm import Mapped, mapped_column

from bot.store.db import Base, dialect_insert, get_engine, session_scope

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit identity.
_ID = BigInteger().with_variant(Integer(), "sqlite")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class Delivery(Base):
    __tablename__ = "deliveries"

    delivery_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    event: Mapped[str] = mapped_column(String(64))
    action: Mapped[str | None] = mapped_column(String(64), nullable=True)
    installation_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    repository: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # running | retrying | done | failed | invalid (payload refused, never retried) | dead (crash-looped)
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    outcome: Mapped[str | None] = mapped_column(String(500), nullable=True)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Installation(Base):
    __tablename__ = "installations"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    account: Mapped[str] = mapped_column(String(200))
    target_type: Mapped[str | None] = mapped_column(String(32), nullable=True)
    repository_selection: Mapped[str | None] = mapped_column(String(16), nullable=True)
    suspended: Mapped[bool] = mapped_column(Boolean, default=False)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class InstallationRepository(Base):
    __tablename__ = "installation_repositories"

    installation_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    full_name: Mapped[str] = mapped_column(String(200), primary_key=True)


class CheckRunRecord(Base):
    __tablename__ = "check_runs"

    id: Mapped[int] = mapped_column(_ID, primary_key=True, autoincrement=True)
    repository: Mapped[str] = mapped_column(String(200))
    head_sha: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(200))
    check_run_id: Mapped[int] = mapped_column(BigInteger)
    delivery_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    conclusion: Mapped[str | None] = mapped_column(String(32), nullable=True)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class CheckRunCreate(Base):
    """A create sent for this (repository, head, check): GitHub may hold a run that no record
    names yet (its answer lost), so no job may assume there is none."""

    __tablename__ = "check_run_creates"

    repository: Mapped[str] = mapped_column(String(200), primary_key=True)
    head_sha: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    sent_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


def _upsert(session, model, values: dict, keys: list[str], update_cols: list[str]):
    stmt = dialect_insert(session)(model).values(**values)
    if update_cols:
        stmt = stmt.on_conflict_do_update(index_elements=keys, set_={c: stmt.excluded[c] for c in update_cols})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=keys)
    session.execute(stmt)


# -- deliveries -------------------------------------------------------------------------------
# What ends a delivery's life: nothing runs it again unless GitHub (or an operator) redelivers it.
FINAL = ("done", "failed", "invalid", "dead")
# A job whose process died mid-job leaves its row `running`; the next start counts it here (in
# `outcome`, as the table has no column for it: a `crashes` column is the proper home).
_CRASHES = re.compile(r"^interrupted (\d+)x")


def crashes_of(row) -> int:
    match = _CRASHES.match(row.outcome or "") if row is not None else None
    return int(match.group(1)) if match else 0


def start_delivery(url: str, *, delivery_id: str, event: str, action: str | None, installation_id: int | None,
                   repository: str | None) -> tuple[str | None, int, int]:
    """Record that a job for this delivery starts; returns (its status before, attempts so far, crashes so far).

    A row found `running` means the attempt before never finished: its process died (OOM killer,
    kill -9, a stuck job cut off at shutdown). That counts as a crash, across process restarts.
    """
    with session_scope(url) as session:
        row = session.get(Delivery, delivery_id, with_for_update=session.get_bind().dialect.name == "postgresql")
        if row is None:
            _upsert(session, Delivery, dict(delivery_id=delivery_id, event=event, action=action,
                                            installation_id=installation_id, repository=repository,
                                            status="running", attempts=1, started_at=_now()),
                    ["delivery_id"], [])
            return None, 1, 0
        before = row.status
        crashes = crashes_of(row)
        if before in ("failed", "dead", "invalid"):
            # Redelivered by hand after it ended for good: a fresh budget.
            row.attempts, crashes, row.outcome = 0, 0, None
        elif before == "running":
            crashes += 1
            row.outcome = f"interrupted {crashes}x: the process running it stopped mid-job"
        if before != "done":
            row.status = "running"
            row.attempts = (row.attempts or 0) + 1
            row.started_at = _now()
            row.finished_at = None
        return before, row.attempts, crashes


def release_attempt(url: str, delivery_id: str, outcome: str) -> None:
    """An attempt that did no work (it waited for another job on the same head): not counted."""
    with session_scope(url) as session:
        session.execute(update(Delivery).where(Delivery.delivery_id == delivery_id).values(
            status="retrying", outcome=outcome[:500], attempts=func.max(Delivery.attempts - 1, 0)
            if session.get_bind().dialect.name == "sqlite" else func.greatest(Delivery.attempts - 1, 0)))


def record_invalid(url: str, *, delivery_id: str, event: str, reason: str) -> None:
    """A delivery whose payload this App cannot use: recorded with the reason, never retried.

    Only the delivery id (checked at intake) and event go in beside the reason: the payload's own
    fields are what was wrong.
    """
    with session_scope(url) as session:
        _upsert(session, Delivery, dict(delivery_id=delivery_id, event=event[:64], action=None, installation_id=None,
                                        repository=None, status="invalid", attempts=1,
                                        outcome=_clean(reason, 500), started_at=_now(), finished_at=_now()),
                ["delivery_id"], ["status", "outcome", "finished_at"])


def _clean(text: str | None, limit: int) -> str | None:
    return (text or "").replace("\x00", "\ufffd")[:limit] or None


def finish_delivery(url: str, delivery_id: str, status: str, outcome: str | None = None) -> None:
    with session_scope(url) as session:
        session.execute(update(Delivery).where(Delivery.delivery_id == delivery_id).values(
            status=status, outcome=_clean(outcome, 500),
            finished_at=_now() if status in FINAL else None))


def get_delivery(url: str, delivery_id: str) -> Delivery | None:
    with session_scope(url) as session:
        return session.get(Delivery, delivery_id)


def dead_letters(url: str, limit: int = 20) -> list[Delivery]:
    with session_scope(url) as session:
        return list(session.scalars(select(Delivery).where(Delivery.status == "dead")
                                    .order_by(Delivery.finished_at.desc()).limit(limit)))


def dead_letter_count(url: str) -> int:
    with session_scope(url) as session:
        return session.scalar(select(func.count()).select_from(Delivery).where(Delivery.status == "dead")) or 0


def recent_deliveries(url: str, limit: int = 20) -> list[Delivery]:
    with session_scope(url) as session:
        return list(session.scalars(select(Delivery).order_by(Delivery.started_at.desc()).limit(limit)))


def delivery_counts(url: str) -> dict[str, int]:
    with session_scope(url) as session:
        return dict(session.execute(select(Delivery.status, func.count()).group_by(Delivery.status)).all())


# -- installations ----------------------------------------------------------------------------
def record_installation(url: str, *, installation_id: int, account: str, target_type: str | None,
                        repository_selection: str | None, suspended: bool = False, deleted: bool = False,
                        repositories: list[str] | None = None) -> None:
    with session_scope(url) as session:
        _upsert(session, Installation, dict(id=installation_id, account=account, target_type=target_type,
                                            repository_selection=repository_selection, suspended=suspended,
                                            deleted=deleted, updated_at=_now()),
                ["id"], ["account", "target_type", "repository_selection", "suspended", "deleted", "updated_at"])
        for name in repositories or ():
            _upsert(session, InstallationRepository, dict(installation_id=installation_id, full_name=name),
                    ["installation_id", "full_name"], [])


def set_installation_repositories(url: str, installation_id: int, added=(), removed=()) -> None:
    with session_scope(url) as session:
        for name in added:
            _upsert(session, InstallationRepository, dict(installation_id=installation_id, full_name=name),
                    ["installation_id", "full_name"], [])
        for name in removed:
            row = session.get(InstallationRepository, (installation_id, name))
            if row is not None:
                session.delete(row)


def installations(url: str) -> list[tuple[Installation, list[str]]]:
    with session_scope(url) as session:
        found = list(session.scalars(select(Installation).where(Installation.deleted.is_(False)).order_by(Installation.id)))
        repos = session.execute(select(InstallationRepository.installation_id, InstallationRepository.full_name)).all()
    by_id: dict[int, list[str]] = {}
    for iid, name in repos:
        by_id.setdefault(iid, []).append(name)
    return [(inst, sorted(by_id.get(inst.id, []))) for inst in found]


# -- check runs -------------------------------------------------------------------------------
def record_check_run(url: str, *, repository: str, head_sha: str, name: str, check_run_id: int,
                     delivery_id: str | None, conclusion: str | None) -> None:
    """Recorded when created (conclusion None: in progress) and again when completed."""
    with session_scope(url) as session:
        row = session.scalars(select(CheckRunRecord).where(CheckRunRecord.check_run_id == check_run_id)).first()
        if row is None:
            session.add(CheckRunRecord(repository=repository, head_sha=head_sha, name=name, check_run_id=check_run_id,
                                       delivery_id=delivery_id, conclusion=conclusion, updated_at=_now()))
        elif conclusion is not None or row.conclusion is None:
            # A completed record never goes back to in progress; a re-run in place touches updated_at.
            row.conclusion, row.updated_at = conclusion, _now()
            if delivery_id:
                row.delivery_id = delivery_id


def note_check_run_create(url: str, repository: str, head_sha: str, name: str) -> None:
    """Committed before the create is sent: from then on has_check_run says yes, even if the
    answer never comes back (GitHub may have made the run all the same)."""
    with session_scope(url) as session:
        _upsert(session, CheckRunCreate, {"repository": repository, "head_sha": head_sha, "name": name,
                                          "sent_at": _now()}, ["repository", "head_sha", "name"], [])


def has_check_run(url: str, repository: str, head_sha: str, name: str) -> bool:
    """May GitHub hold a check run of this name on this head from this App: has any job recorded
    one, or sent a create for one? (No: the first check of a new head, nothing to list.)"""
    with session_scope(url) as session:
        for model in (CheckRunRecord, CheckRunCreate):
            if session.scalar(select(model.head_sha).where(
                    model.repository == repository, model.head_sha == head_sha, model.name == name).limit(1)) is not None:
                return True
        return False


def set_check_run_conclusion(url: str, check_run_id: int, conclusion: str) -> None:
    with session_scope(url) as session:
        session.execute(update(CheckRunRecord).where(CheckRunRecord.check_run_id == check_run_id).values(
            conclusion=conclusion, updated_at=_now()))


def stale_check_runs(url: str, older_than_s: float, limit: int = 200) -> list[tuple[CheckRunRecord, int | None]]:
    """Check runs recorded in progress for longer than `older_than_s`, with the installation that
    created them (from the delivery that did)."""
    cutoff = _now() - dt.timedelta(seconds=older_than_s)
    with session_scope(url) as session:
        rows = session.execute(
            select(CheckRunRecord, Delivery.installation_id)
            .join(Delivery, Delivery.delivery_id == CheckRunRecord.delivery_id, isouter=True)
            .where(CheckRunRecord.conclusion.is_(None), CheckRunRecord.updated_at < cutoff)
            .order_by(CheckRunRecord.updated_at).limit(limit)).all()
        return [(row, inst) for row, inst in rows]


def open_check_runs_of(url: str, delivery_id: str) -> list[CheckRunRecord]:
    with session_scope(url) as session:
        return list(session.scalars(select(CheckRunRecord).where(CheckRunRecord.delivery_id == delivery_id,
                                                                 CheckRunRecord.conclusion.is_(None))))


def installation_for(url: str, repository: str) -> int | None:
    with session_scope(url) as session:
        return session.scalar(select(InstallationRepository.installation_id)
                              .where(InstallationRepository.full_name == repository).limit(1))


# -- store errors ------------------------------------------------------------------------------
def is_transient(exc: BaseException) -> bool:
    """A store error that waiting may cure (connection lost, database locked, server restarting),
    as opposed to one the data itself causes (out of range, too long, NUL, integrity) that would
    fail the same way every time."""
    from sqlalchemy import exc as sa

    if isinstance(exc, sa.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, (sa.DataError, sa.IntegrityError, sa.ProgrammingError)):
        return False
    return isinstance(exc, (sa.OperationalError, sa.InterfaceError, sa.DisconnectionError, sa.TimeoutError,
                            ConnectionError, TimeoutError))


def ping(url: str) -> None:
    from sqlalchemy import text

    with get_engine(url).connect() as conn:
        conn.execute(text("select 1"))
