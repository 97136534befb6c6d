"""On-demand runs bound to a head: one run in flight per (PR, suite, head SHA), not per (PR, suite),
and the time each request's comment was written.

A push used to leave the old head's run holding the (PR, suite) slot, so a command on the new
head was refused while a run nobody would merge kept its GPUs. The slot is now per head; a push
cancels the older head's run (bot/ondemand/housekeeping.py supersede). `commented_at` is GitHub's
created_at of the request's comment: an approval only covers requests written before it.

Revision ID: 0007_ondemand_heads
Revises: 0006_registration_index
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_ondemand_heads"
down_revision = "0006_registration_index"
branch_labels = None
depends_on = None

IN_FLIGHT = "status IN ('dispatching', 'dispatched')"


def upgrade() -> None:
    with op.batch_alter_table("rocm_requests") as batch:
        batch.add_column(sa.Column("commented_at", sa.DateTime(timezone=True), nullable=True))
    op.drop_index("uq_rocm_requests_in_flight", table_name="rocm_requests")
    op.create_index("uq_rocm_requests_in_flight", "rocm_requests", ["repository", "pull_number", "suite", "head_sha"],
                    unique=True, sqlite_where=sa.text(IN_FLIGHT), postgresql_where=sa.text(IN_FLIGHT))
    # The budget sums what a repository dispatched in the last 24 hours at every reservation.
    op.create_index("ix_rocm_requests_spent", "rocm_requests", ["repository", "dispatched_at"])


def downgrade() -> None:
    op.drop_index("ix_rocm_requests_spent", table_name="rocm_requests")
    op.drop_index("uq_rocm_requests_in_flight", table_name="rocm_requests")
    op.create_index("uq_rocm_requests_in_flight", "rocm_requests", ["repository", "pull_number", "suite"],
                    unique=True, sqlite_where=sa.text(IN_FLIGHT), postgresql_where=sa.text(IN_FLIGHT))
    with op.batch_alter_table("rocm_requests") as batch:
        batch.drop_column("commented_at")
