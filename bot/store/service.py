"""The service's own records: webhook deliveries and their outcome, installations, check runs."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, Boolean, DateTime, Integer, String, func, select, update
from sqlalchemy.orm import Mapped, mapped_column

from bot.store.db import Base, get_engine, session_scope

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
    status: Mapped[str] = mapped_column(String(16))  # running | retrying | done | failed
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


def _upsert(session, model, values: dict, keys: list[str], update_cols: list[str]):
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    stmt = insert(model).values(**values)
    if update_cols:
        stmt = stmt.on_conflict_do_update(index_elements=keys, set_={c: stmt.excluded[c] for c in update_cols})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=keys)
    session.execute(stmt)


# -- deliveries -------------------------------------------------------------------------------
def start_delivery(url: str, *, delivery_id: str, event: str, action: str | None, installation_id: int | None,
                   repository: str | None) -> tuple[str | None, int]:
    """Record that a job for this delivery starts; returns (its status before, attempts so far)."""
    with session_scope(url) as session:
        row = session.get(Delivery, delivery_id, with_for_update=session.get_bind().dialect.name == "postgresql")
        if row is None:
            _upsert(session, Delivery, dict(delivery_id=delivery_id, event=event, action=action,
                                            installation_id=installation_id, repository=repository,
                                            status="running", attempts=1, started_at=_now()),
                    ["delivery_id"], [])
            return None, 1
        before = row.status
        if before == "failed":
            # Redelivered by hand after it failed for good: a fresh retry budget.
            row.attempts = 0
        if before != "done":
            row.status = "running"
            row.attempts = (row.attempts or 0) + 1
            row.started_at = _now()
            row.finished_at = None
        return before, row.attempts


def finish_delivery(url: str, delivery_id: str, status: str, outcome: str | None = None) -> None:
    with session_scope(url) as session:
        session.execute(update(Delivery).where(Delivery.delivery_id == delivery_id).values(
            status=status, outcome=(outcome or "")[:500] or None,
            finished_at=_now() if status in ("done", "failed") else None))


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
    with session_scope(url) as session:
        row = session.scalars(select(CheckRunRecord).where(CheckRunRecord.check_run_id == check_run_id)).first()
        if row is None:
            session.add(CheckRunRecord(repository=repository, head_sha=head_sha, name=name, check_run_id=check_run_id,
                                       delivery_id=delivery_id, conclusion=conclusion, updated_at=_now()))
        else:
            row.conclusion, row.updated_at = conclusion, _now()


def ping(url: str) -> None:
    from sqlalchemy import text

    with get_engine(url).connect() as conn:
        conn.execute(text("select 1"))
