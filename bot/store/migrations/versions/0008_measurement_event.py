"""The GitHub event of the workflow run a measurement came from (pull_request, push, schedule...).

Calibration counts runs of merged code only (docs/calibration.md): a pull request head's run is
told apart by its event. Rows stored before this column have none and count as merged.

Revision ID: 0008_measurement_event
Revises: 0007_ondemand_heads
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_measurement_event"
down_revision = "0007_ondemand_heads"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.add_column(sa.Column("event", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("event")
