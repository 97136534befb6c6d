"""On-demand MI350 runs: requests, the audit log, and the steps a command has already taken.

Revision ID: 0004_ondemand
Revises: 0003_service
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_ondemand"
down_revision = "0003_service"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TS = sa.DateTime(timezone=True)
IN_FLIGHT = "status IN ('dispatching', 'dispatched')"


def upgrade() -> None:
    op.create_table(
        "rocm_requests",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("repository", sa.String(200), nullable=False),
        sa.Column("pull_number", sa.Integer(), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("suite", sa.String(200), nullable=False),
        sa.Column("files", sa.Text(), nullable=False),
        sa.Column("requester", sa.String(100), nullable=False),
        sa.Column("comment_id", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("decided_by", sa.String(100), nullable=True),
        sa.Column("reason", sa.String(500), nullable=True),
        sa.Column("cost_gpu_hours", sa.Float(), nullable=False, server_default="0"),
        sa.Column("dispatch_repository", sa.String(200), nullable=False),
        sa.Column("workflow", sa.String(200), nullable=False),
        sa.Column("request_check_run_id", sa.BigInteger(), nullable=True),
        sa.Column("run_check_run_id", sa.BigInteger(), nullable=True),
        sa.Column("workflow_run_id", sa.BigInteger(), nullable=True),
        sa.Column("run_url", sa.String(500), nullable=True),
        sa.Column("dispatched_at", _TS, nullable=True),
        sa.Column("completed_at", _TS, nullable=True),
        sa.UniqueConstraint("repository", "comment_id", name="uq_rocm_requests_comment"),
    )
    op.create_index("ix_rocm_requests_pull", "rocm_requests", ["repository", "pull_number", "status"])
    op.create_index("ix_rocm_requests_run", "rocm_requests", ["dispatch_repository", "workflow_run_id"])
    op.create_index("ix_rocm_requests_check_run", "rocm_requests", ["repository", "request_check_run_id"])
    # At most one run in flight per (PR, suite), enforced by the database itself: two workers
    # racing to dispatch the same suite for the same PR cannot both win.
    op.create_index("uq_rocm_requests_in_flight", "rocm_requests", ["repository", "pull_number", "suite"],
                    unique=True, sqlite_where=sa.text(IN_FLIGHT), postgresql_where=sa.text(IN_FLIGHT))
    op.create_table(
        "audit_log",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("at", _TS, nullable=False),
        sa.Column("repository", sa.String(200), nullable=False),
        sa.Column("pull_number", sa.Integer(), nullable=True),
        sa.Column("head_sha", sa.String(64), nullable=True),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(100), nullable=True),
        sa.Column("suite", sa.String(200), nullable=True),
        sa.Column("files", sa.Text(), nullable=True),
        sa.Column("cost_gpu_hours", sa.Float(), nullable=True),
        sa.Column("run_id", sa.BigInteger(), nullable=True),
        sa.Column("request_id", sa.BigInteger(), nullable=True),
        sa.Column("detail", sa.String(500), nullable=True),
        sa.Column("delivery_id", sa.String(64), nullable=True),
    )
    op.create_index("ix_audit_log_pull", "audit_log", ["repository", "pull_number", "at"])
    op.create_index("ix_audit_log_at", "audit_log", ["at"])
    op.create_table(
        "ondemand_steps",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("step", sa.String(64), primary_key=True),
        sa.Column("at", _TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ondemand_steps")
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_index("ix_audit_log_pull", table_name="audit_log")
    op.drop_table("audit_log")
    op.drop_index("uq_rocm_requests_in_flight", table_name="rocm_requests")
    op.drop_index("ix_rocm_requests_check_run", table_name="rocm_requests")
    op.drop_index("ix_rocm_requests_run", table_name="rocm_requests")
    op.drop_index("ix_rocm_requests_pull", table_name="rocm_requests")
    op.drop_table("rocm_requests")
