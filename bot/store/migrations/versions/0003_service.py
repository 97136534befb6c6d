"""The service's records: webhook deliveries, installations and their repositories, check runs.

Revision ID: 0003_service
Revises: 0002_measurements
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_service"
down_revision = "0002_measurements"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "deliveries",
        sa.Column("delivery_id", sa.String(64), primary_key=True),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("action", sa.String(64), nullable=True),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("repository", sa.String(200), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("outcome", sa.String(500), nullable=True),
        sa.Column("started_at", _TS, nullable=True),
        sa.Column("finished_at", _TS, nullable=True),
    )
    op.create_index("ix_deliveries_started_at", "deliveries", ["started_at"])
    op.create_table(
        "installations",
        sa.Column("id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("target_type", sa.String(32), nullable=True),
        sa.Column("repository_selection", sa.String(16), nullable=True),
        sa.Column("suspended", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("deleted", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_table(
        "installation_repositories",
        sa.Column("installation_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("full_name", sa.String(200), primary_key=True),
    )
    op.create_table(
        "check_runs",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("repository", sa.String(200), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("check_run_id", sa.BigInteger(), nullable=False),
        sa.Column("delivery_id", sa.String(64), nullable=True),
        sa.Column("conclusion", sa.String(32), nullable=True),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_index("ix_check_runs_head", "check_runs", ["repository", "head_sha", "name"])
    op.create_index("ix_check_runs_check_run_id", "check_runs", ["check_run_id"], unique=True)


def downgrade() -> None:
    op.drop_table("check_runs")
    op.drop_table("installation_repositories")
    op.drop_table("installations")
    op.drop_index("ix_deliveries_started_at", table_name="deliveries")
    op.drop_table("deliveries")
