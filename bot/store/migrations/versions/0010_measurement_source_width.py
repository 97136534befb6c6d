"""measurements.source holds `workflow_run:<owner>/<name>`: room for GitHub's longest names.

A repository owner has up to 39 characters and a name up to 100, so the App's source of a
workflow run's durations can reach 153 characters; the old 32 made PostgreSQL refuse every
measurement of a repository whose full name is over 19 characters (SQLite never enforced it).

Revision ID: 0010_measurement_source_width
Revises: 0009_calibration_runs
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_measurement_source_width"
down_revision = "0009_calibration_runs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.alter_column("source", existing_type=sa.String(32), type_=sa.String(255), existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.alter_column("source", existing_type=sa.String(255), type_=sa.String(32), existing_nullable=False)
