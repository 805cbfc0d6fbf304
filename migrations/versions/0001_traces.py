"""Traces and their watch events.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

big_key = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "traces",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("sources", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kaudit_version", sa.String(length=32), nullable=False),
        sa.Column("event_count", sa.Integer(), nullable=False),
        sa.Column("kind_counts", sa.Text(), nullable=False),
        sa.Column("start_us", sa.BigInteger(), nullable=True),
        sa.Column("end_us", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_traces")),
        sa.UniqueConstraint("content_hash", name=op.f("uq_traces_content_hash")),
        sa.UniqueConstraint("name", name=op.f("uq_traces_name")),
    )
    op.create_table(
        "trace_events",
        sa.Column("id", big_key, nullable=False),
        sa.Column("trace_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("ts_us", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=63), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=True),
        sa.Column("source", sa.Integer(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("object", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["trace_id"], ["traces.id"], ondelete="CASCADE",
                                name=op.f("fk_trace_events_trace_id_traces")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trace_events")),
        sa.UniqueConstraint("trace_id", "seq", name=op.f("uq_trace_events_trace_id")),
    )
    op.create_index("ix_trace_events_trace_kind_name", "trace_events",
                    ["trace_id", "kind", "namespace", "name"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_trace_events_trace_kind_name", table_name="trace_events")
    op.drop_table("trace_events")
    op.drop_table("traces")
