"""What the last calibration refresh decided per file, and a refresh asked for by a durations ingest.

Branch i25-branch (the coordinator renumbers on merge).

Revision ID: 0011_calibration_ingest_refresh
Revises: 0010_measurement_source_width
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_calibration_ingest_refresh"
down_revision = "0010_measurement_source_width"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("calibration_runs") as batch:
        batch.add_column(sa.Column("verdicts", sa.Text(), nullable=True))
        batch.add_column(sa.Column("requested_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("ingest_request_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("calibration_runs") as batch:
        batch.drop_column("ingest_request_at")
        batch.drop_column("requested_at")
        batch.drop_column("verdicts")
