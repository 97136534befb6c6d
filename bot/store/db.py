"""The store's engine, sessions and declarative base: SQLite by default, PostgreSQL by DATABASE_URL."""

from __future__ import annotations

import os
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


class Base(DeclarativeBase):
    pass


def _sqlite_pragmas(dbapi_connection, _record):
    # WAL lets the web process read while a worker writes; busy_timeout waits out short locks
    # instead of failing a job with "database is locked".
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def secure_dir(path: Path) -> Path:
    """The data directory (or one inside it): created 0700, and tightened to 0700 if it is ours."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if path.stat().st_uid == os.getuid() and path.stat().st_mode & 0o077:
            path.chmod(0o700)
    except OSError:
        pass
    return path


def secure_file(path: Path) -> Path:
    """A database or queue file: created 0600 before SQLite opens it (its -wal and -shm files take
    the same mode), tightened to 0600 if it already exists and is ours."""
    path = Path(path)
    secure_dir(path.parent)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        if path.stat().st_uid == os.getuid() and path.stat().st_mode & 0o077:
            path.chmod(0o600)
    except OSError:
        pass
    return path


@lru_cache(maxsize=None)
def get_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:" and not path.startswith("file:"):
            secure_file(Path(path))
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, connect_args=_pg_connect_args(url))


# A PostgreSQL that does not answer a connect is an outage, not a wait without end: a job then
# waits for the store on the queue (bot/worker/tasks.py) rather than holding its worker thread. TCP
# keepalives find a connection whose peer vanished. Any of these set in DATABASE_URL wins.
PG_CONNECT_DEFAULTS = {"connect_timeout": 5, "keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
                       "keepalives_count": 3}


def _pg_connect_args(url: str) -> dict:
    from sqlalchemy.engine import make_url

    given = make_url(url).query
    return {k: v for k, v in PG_CONNECT_DEFAULTS.items() if k not in given}


def dialect_insert(session):
    """The INSERT construct of the session's database (SQLite or PostgreSQL), which has
    `on_conflict_do_update` / `on_conflict_do_nothing`: the store's upserts are written once for both."""
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


@contextmanager
def session_scope(url: str):
    """One transaction: committed on success, rolled back on any error (nothing half-written)."""
    session: Session = sessionmaker(bind=get_engine(url), expire_on_commit=False)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


MIGRATION_LOCK = 0x43495247  # "CIRG": one migrating process at a time on a shared PostgreSQL


def upgrade(url: str, revision: str = "head") -> None:
    """Apply the Alembic migrations (what `ci-registrar db upgrade`, the Procfile's release, and
    every web and worker process at start run).

    On PostgreSQL under an advisory lock: Alembic does not serialise two processes, and a web
    process and its workers started together on a fresh database would otherwise race to create
    the same tables, or read tables that do not exist yet. A process that finds the lock taken
    waits for it, and then finds the store at its revision.
    """
    if not url.startswith("postgresql"):
        _upgrade(url, revision)
        return
    from sqlalchemy import text

    with get_engine(url).connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK})
        try:
            _upgrade(url, revision)
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK})
            conn.commit()


def _upgrade(url: str, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    before = current_revision(url)
    if before is not None and revision == "head" and before == _head(cfg):
        return  # at its revision already: no migration environment to load
    command.upgrade(cfg, revision)
    after = current_revision(url)
    if after != before:
        import logging

        logging.getLogger("ci_registrar.store").info("store migrated from %s to %s", before or "nothing", after)


def _head(cfg) -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(cfg).get_current_head()


def current_revision(url: str) -> str | None:
    """The store's Alembic revision (None: no schema yet)."""
    from alembic.runtime.migration import MigrationContext

    with get_engine(url).connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
