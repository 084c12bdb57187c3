"""boinc_batches.parts: how many BOINC batches a gateway batch was sent as

Revision ID: 0004
Revises: 0003
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("boinc_batches") as batch_op:
        batch_op.add_column(
            sa.Column("parts", sa.Integer(), nullable=False, server_default=sa.text("1"))
        )


def downgrade() -> None:
    with op.batch_alter_table("boinc_batches") as batch_op:
        batch_op.drop_column("parts")
