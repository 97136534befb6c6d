"""When the App last refreshed each repository's calibration pull request, and how it went.

Revision ID: 0009_calibration_runs
Revises: 0008_measurement_event
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_calibration_runs"
down_revision = "0008_measurement_event"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "calibration_runs",
        sa.Column("repository", sa.String(200), primary_key=True),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("outcome", sa.String(32), nullable=False),
        sa.Column("pull_number", sa.Integer(), nullable=True),
        sa.Column("every_days", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("calibration_runs")
