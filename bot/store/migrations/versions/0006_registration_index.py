"""The registration index: each file's scan facts by (repository, scan key), shared by every worker;
and each pull request's newest head, so a check of an older push stops.

Revision ID: 0006_registration_index
Revises: 0005_web_sessions
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_registration_index"
down_revision = "0005_web_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "registration_index",
        sa.Column("repository", sa.String(200), primary_key=True),
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("facts", sa.Text(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_registration_index_used_at", "registration_index", ["used_at"])
    op.create_table(
        "pull_request_heads",
        sa.Column("repository", sa.String(200), primary_key=True),
        sa.Column("number", sa.Integer(), primary_key=True),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("updated_at", sa.String(40), nullable=False),
        sa.Column("noted_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pull_request_heads")
    op.drop_index("ix_registration_index_used_at", table_name="registration_index")
    op.drop_table("registration_index")
