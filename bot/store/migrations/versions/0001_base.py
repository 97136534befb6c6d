"""The store's first revision: an empty schema every later migration builds on.

Revision ID: 0001_base
Revises:
"""

revision = "0001_base"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
