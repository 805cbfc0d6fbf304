"""Rejected lines of ``kaudit ingest --skip-invalid``.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

big_key = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("traces") as batch_op:
        batch_op.add_column(sa.Column("rejected_count", sa.Integer(), server_default="0",
                                      nullable=False))
    op.create_table(
        "rejected_lines",
        sa.Column("id", big_key, nullable=False),
        sa.Column("trace_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["trace_id"], ["traces.id"], ondelete="CASCADE",
                                name=op.f("fk_rejected_lines_trace_id_traces")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rejected_lines")),
    )
    op.create_index(op.f("ix_rejected_lines_trace_id"), "rejected_lines", ["trace_id"],
                    unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_rejected_lines_trace_id"), table_name="rejected_lines")
    op.drop_table("rejected_lines")
    with op.batch_alter_table("traces") as batch_op:
        batch_op.drop_column("rejected_count")
