"""The measurements table: one row per attempt of one test file in one job (migration 0002)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from bot.store.db import Base, get_engine, upgrade

UNKNOWN_HARDWARE = "unknown"
NATURAL_KEY = ("repository", "run_id", "job_id", "file", "attempt")


class UTCDateTime(TypeDecorator):
    """Aware UTC datetimes in and out, on SQLite (which keeps no zone) and PostgreSQL alike."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        value = value.astimezone(timezone.utc)
        if dialect.name == "sqlite":
            value = value.replace(tzinfo=None)  # stored as UTC text, so comparisons stay lexical
        return value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class Measurement(Base):
    __tablename__ = "measurements"

    id: Mapped[int] = mapped_column(_ID, primary_key=True, autoincrement=True)
    repository: Mapped[str] = mapped_column(sa.String(200))
    file: Mapped[str] = mapped_column(sa.String(500))
    backend: Mapped[str] = mapped_column(sa.String(16))
    suite: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    hardware: Mapped[str] = mapped_column(sa.String(64))  # "unknown" when the labels do not say
    elapsed_s: Mapped[float] = mapped_column(sa.Float)
    outcome: Mapped[str] = mapped_column(sa.String(8))  # PASS | FAIL | TIMEOUT
    attempt: Mapped[int] = mapped_column(sa.Integer)
    exit_code: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    timeout_after_s: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    est_time: Mapped[float | None] = mapped_column(sa.Float, nullable=True)  # the runner's _estimated_time
    run_id: Mapped[int] = mapped_column(sa.BigInteger)
    job_id: Mapped[int] = mapped_column(sa.BigInteger)
    head_sha: Mapped[str | None] = mapped_column(sa.String(40), nullable=True)
    workflow: Mapped[str | None] = mapped_column(sa.String(300), nullable=True)
    runner_labels: Mapped[str | None] = mapped_column(sa.String(500), nullable=True)  # comma-separated
    measured_at: Mapped[datetime] = mapped_column(UTCDateTime())
    source: Mapped[str] = mapped_column(sa.String(32))  # job-log | json | csv | workflow_run
    ingested_at: Mapped[datetime] = mapped_column(UTCDateTime(), server_default=sa.func.now())

    __table_args__ = (
        sa.CheckConstraint("outcome IN ('PASS', 'FAIL', 'TIMEOUT')", name="ck_measurements_outcome"),
        sa.UniqueConstraint(*NATURAL_KEY, name="uq_measurements_natural"),
        sa.Index("ix_measurements_file_time", "repository", "file", "measured_at"),
    )


# Declared after the class for the DESC column (migration 0002 creates it).
sa.Index(
    "ix_measurements_pass_window",
    Measurement.repository, Measurement.hardware, Measurement.backend, Measurement.file,
    Measurement.measured_at.desc(), Measurement.elapsed_s, Measurement.suite, Measurement.est_time,
    sqlite_where=sa.text("outcome = 'PASS'"),
    postgresql_where=sa.text("outcome = 'PASS'"),
)


measurements = Measurement.__table__

_ready: set[str] = set()
_ready_lock = threading.Lock()
_PG_MIGRATION_LOCK = 0x43495247  # "CIRG": one migrating process at a time on a shared PostgreSQL


def ensure_store(url: str) -> None:
    """Create or upgrade the store on first use in this process (SQLite file or PostgreSQL)."""
    if url in _ready:
        return
    with _ready_lock:
        if url in _ready:
            return
        if url.startswith("postgresql"):
            # Several workers may start at once: Alembic itself does not serialise them.
            with get_engine(url).connect() as conn:
                conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
                try:
                    upgrade(url)
                finally:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_MIGRATION_LOCK})
                    conn.commit()
        else:
            with _file_lock(url):
                upgrade(url)
        _ready.add(url)


@contextmanager
def _file_lock(url: str):
    """Two commands starting at once on a fresh SQLite file must not both create its tables."""
    path = url.split("///", 1)[-1] if "///" in url else ""
    if not path or path == ":memory:":
        yield
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    lock_path = Path(path).with_name(Path(path).name + ".migrate-lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
