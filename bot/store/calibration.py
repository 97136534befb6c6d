"""When each repository's calibration pull request was last refreshed (migration 0009)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, Float, Integer, String, select
from sqlalchemy.orm import Mapped, mapped_column

from bot.store.db import Base, dialect_insert, session_scope


class CalibrationRun(Base):
    __tablename__ = "calibration_runs"

    repository: Mapped[str] = mapped_column(String(200), primary_key=True)
    last_run_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    outcome: Mapped[str] = mapped_column(String(32))
    pull_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    every_days: Mapped[float] = mapped_column(Float)  # the repository's calibration.pull_request_every_days then


def _utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value


def due(url: str, repositories: list[str], now: dt.datetime, default_days: float = 7) -> list[str]:
    """The repositories whose last refresh is older than their interval (or that never had one)."""
    with session_scope(url) as session:
        last = {r: (_utc(t), days) for r, t, days in session.execute(
            select(CalibrationRun.repository, CalibrationRun.last_run_at, CalibrationRun.every_days)
            .where(CalibrationRun.repository.in_(repositories)))}
    return [r for r in repositories
            if r not in last or now - last[r][0] >= dt.timedelta(days=last[r][1] or default_days)]


def record(url: str, repository: str, outcome: str, pull_number: int | None, now: dt.datetime,
           every_days: float = 7) -> None:
    with session_scope(url) as session:
        stmt = dialect_insert(session)(CalibrationRun).values(repository=repository, last_run_at=now, outcome=outcome,
                                                              pull_number=pull_number, every_days=every_days)
        session.execute(stmt.on_conflict_do_update(
            index_elements=["repository"],
            set_={c: stmt.excluded[c] for c in ("last_run_at", "outcome", "pull_number", "every_days")}))
