"""Signed-in sessions of the pages: who, and which installations and repositories they may see.

Revision ID: 0005_web_sessions
Revises: 0004_ondemand
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_web_sessions"
down_revision = "0004_ondemand"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("login", sa.String(100), nullable=False),
        sa.Column("installations", sa.Text(), nullable=False),
        sa.Column("repositories", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_web_sessions_expires_at", "web_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_web_sessions_expires_at", table_name="web_sessions")
    op.drop_table("web_sessions")
