"""One-line errors with exit status 2 for usage and environment problems (never a traceback).

A command that cannot start (the database is unreachable, a dependency of the `app` extra is
missing, git does not know a revision) says so in one line on stderr, naming what it tried.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

SHALLOW_HINT = "shallow clone? use `fetch-depth: 0` with actions/checkout"


# Top-level modules of the `app` extra (pyproject.toml) -> the distribution to name in the error.
APP_MODULES = {
    "flask": "flask", "werkzeug": "flask", "gidgethub": "gidgethub", "github": "PyGithub",
    "requests": "requests", "structlog": "structlog", "prometheus_client": "prometheus-client",
    "huey": "huey", "redis": "redis", "psycopg": "psycopg", "gunicorn": "gunicorn", "jwt": "PyJWT",
}


# Top-level modules of the `store` extra: the commands that read or write the store need them.
STORE_MODULES = {"sqlalchemy": "SQLAlchemy", "alembic": "alembic", "mako": "alembic"}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one-line explanation when `exc` is a dependency of an extra, else None."""
    top = (exc.name or "").split(".")[0]
    if top in STORE_MODULES:
        return (f"this command needs the store's dependencies ({STORE_MODULES[top]} is not installed): "
                "pip install 'ci-registrar[store]'")
    if top not in APP_MODULES:
        return None
    if top == "psycopg":
        return ("DATABASE_URL names PostgreSQL, whose driver (psycopg) is not installed: "
                "pip install 'ci-registrar[postgres]' (or the whole App: 'ci-registrar[app]')")
    return (f"this command needs the App's dependencies ({APP_MODULES[top]} is not installed): "
            "pip install 'ci-registrar[app]'")


def fail(command: str, message: str) -> None:
    click.echo(f"ci-registrar {command}: {message}", err=True)
    sys.exit(2)


def _database_where(url: str) -> str:
    try:
        from sqlalchemy.engine import make_url

        u = make_url(url)
    except Exception:  # noqa: BLE001 - an unparsable URL is named as given, without credentials
        return url.rsplit("@", 1)[-1]
    if u.get_backend_name() == "sqlite":
        return f"SQLite file {u.database or ':memory:'}"
    return f"{u.get_backend_name()} at {u.host or 'localhost'}:{u.port or 5432}" + (f"/{u.database}" if u.database else "")


def _first_reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    lines = [line.strip() for line in str(orig).strip().splitlines() if line.strip()]
    if not lines:
        return type(orig).__name__
    # psycopg: 'connection failed: connection to server at "h", port p failed: Connection refused'
    return lines[0].rsplit(" failed: ", 1)[-1].removeprefix("connection failed: ")


def environment_error(exc: BaseException) -> str | None:
    """A one-line explanation for an environment failure, or None when `exc` is a bug to show."""
    if isinstance(exc, ModuleNotFoundError):
        return missing_extra(exc)
    settings = sys.modules.get("bot.infra.settings")
    if settings is not None and isinstance(exc, settings.SettingsError):
        return str(exc)
    sqlalchemy_exc = sys.modules.get("sqlalchemy.exc")
    if sqlalchemy_exc is not None and isinstance(exc, (sqlalchemy_exc.OperationalError, sqlalchemy_exc.InterfaceError)):
        from bot.infra.settings import load_settings

        where = _database_where(load_settings().database_url)
        return f"cannot reach the database ({where}): {_first_reason(exc)} (check DATABASE_URL)"
    return None


def is_shallow(repo: Path) -> bool:
    import subprocess  # here, not at the top: the first check of a directory never asks

    try:
        done = subprocess.run(["git", "-C", str(repo), "rev-parse", "--is-shallow-repository"],
                              capture_output=True, text=True, check=False)
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def git_failure(repo: Path, reason: str) -> str:
    """git's own reason, plus the shallow-clone hint when the repository is shallow."""
    message = f"git: {reason}"
    if is_shallow(repo):
        message += f" ({SHALLOW_HINT})"
    return message
