"""`ci-registrar db upgrade`: apply the store's migrations (the Procfile's release step)."""

from __future__ import annotations

import click


@click.group()
def db():
    """The store: SQLite under the data directory by default, PostgreSQL by DATABASE_URL."""


@db.command()
@click.option("--revision", default="head", show_default=True, help="Alembic revision to upgrade to.")
def upgrade(revision):
    """Create or upgrade the store's schema."""
    from bot.infra.settings import load_settings
    from bot.store.db import upgrade as run_upgrade

    url = load_settings().database_url
    run_upgrade(url, revision)
    click.echo(f"store at {_redacted(url)} is at revision {revision}")


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
