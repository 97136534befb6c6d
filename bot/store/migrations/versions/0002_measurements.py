"""Stored per-file durations (docs/durations.md): one row per attempt of one test file in one job.

Revision ID: 0002_measurements
Revises: 0001_base
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_measurements"
down_revision = "0001_base"
branch_labels = None
depends_on = None

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit identity.
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "measurements",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("repository", sa.String(200), nullable=False),
        sa.Column("file", sa.String(500), nullable=False),
        sa.Column("backend", sa.String(16), nullable=False),
        sa.Column("suite", sa.String(200), nullable=True),
        sa.Column("hardware", sa.String(64), nullable=False),
        sa.Column("elapsed_s", sa.Float(), nullable=False),
        sa.Column("outcome", sa.String(8), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("timeout_after_s", sa.Integer(), nullable=True),
        sa.Column("est_time", sa.Float(), nullable=True),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("head_sha", sa.String(40), nullable=True),
        sa.Column("workflow", sa.String(300), nullable=True),
        sa.Column("runner_labels", sa.String(500), nullable=True),
        sa.Column("measured_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint("outcome IN ('PASS', 'FAIL', 'TIMEOUT')", name="ck_measurements_outcome"),
        sa.UniqueConstraint("repository", "run_id", "job_id", "file", "attempt", name="uq_measurements_natural"),
    )
    # The statistics window: passing attempts per (repository, hardware, backend, file), newest
    # first, in the order ROW_NUMBER() reads them (no sort). Partial and covering, so
    # `durations show` reads the index alone.
    op.create_index(
        "ix_measurements_pass_window",
        "measurements",
        ["repository", "hardware", "backend", "file", sa.text("measured_at DESC"), "elapsed_s", "suite", "est_time"],
        sqlite_where=sa.text("outcome = 'PASS'"),
        postgresql_where=sa.text("outcome = 'PASS'"),
    )
    # The dashboard's history of one test and its latest est_time.
    op.create_index("ix_measurements_file_time", "measurements", ["repository", "file", "measured_at"])


def downgrade() -> None:
    op.drop_index("ix_measurements_file_time", table_name="measurements")
    op.drop_index("ix_measurements_pass_window", table_name="measurements")
    op.drop_table("measurements")
