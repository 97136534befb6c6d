"""Whose code a measurement ran: the workflow run's head branch and head repository; no value
outside (0 s, 7 days] or non-finite kept.  (branch i25-data; the coordinator re-numbers on merge)

Calibration counts only runs of the default branch from the configured events (docs/calibration.md);
`event` (0008) alone cannot tell a push to `main` from a push to `feature/x`, nor a fork's run.
Rows stored before have neither column: a `schedule` run still counts (GitHub schedules on the
default branch only), a `push` without its branch no longer does, and a row with no event either
(an operator's import of an older export) counts as before (checks/calibration.origin_of).

An elapsed time that is not a finite number in (0, 604800] seconds is refused at ingest since
this revision; rows stored before it (a log's `elapsed=<301 digits>s` read as infinity) are
deleted here, so no page, check or pull request ever reads one.

Revision ID: 0012_measurement_provenance
Revises: 0010_measurement_source_width
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_measurement_provenance"
down_revision = "0011_calibration_ingest_refresh"
branch_labels = None
depends_on = None

MAX_ELAPSED_S = 7 * 24 * 3600


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.add_column(sa.Column("head_branch", sa.String(255), nullable=True))
        batch.add_column(sa.Column("head_repository", sa.String(200), nullable=True))
    # NaN: PostgreSQL orders it above every number (so `> MAX` holds); SQLite stores it as NULL.
    op.execute(sa.text(f"DELETE FROM measurements WHERE elapsed_s IS NULL OR elapsed_s <= 0 OR elapsed_s > {MAX_ELAPSED_S}"))


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("head_repository")
        batch.drop_column("head_branch")
