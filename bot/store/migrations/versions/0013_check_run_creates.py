"""Check runs asked for: a job notes that it sends a create for (repository, head, check) before
sending it.  (branch fix-races; the coordinator re-numbers on merge)

A create whose answer is lost (read timeout, dropped connection, the process killed meanwhile)
may still have made the run on GitHub, with nothing in `check_runs`. The first job of another
delivery for that head must then list GitHub's runs rather than assume none exists
(bot/worker/handlers/pull_requests.find_or_create_run), or the head gets two runs.

Revision ID: 0013_check_run_creates
Revises: 0012_measurement_provenance
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_check_run_creates"
down_revision = "0012_measurement_provenance"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "check_run_creates",
        sa.Column("repository", sa.String(200), primary_key=True),
        sa.Column("head_sha", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("check_run_creates")
