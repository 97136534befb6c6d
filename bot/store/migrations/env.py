"""Alembic environment: runs the store's migrations on the URL the caller configured."""

from alembic import context

from bot.store.db import get_engine

config = context.config


def run_migrations_online() -> None:
    engine = get_engine(config.get_main_option("sqlalchemy.url"))
    with engine.connect() as connection:
        context.configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
