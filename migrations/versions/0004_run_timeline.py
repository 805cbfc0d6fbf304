"""A run's timeline for the dashboard: node and placement intervals, queue spans, series;
which plugins rejected nodes in each attempt; faster indexes on the event log.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

big_key = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _run_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE",
                                   name=op.f(f"fk_{table}_run_id_runs"))


def upgrade() -> None:
    op.create_table(
        "run_nodes",
        sa.Column("id", big_key, nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("zone", sa.String(length=253), nullable=False),
        sa.Column("start_us", sa.BigInteger(), nullable=False),
        sa.Column("end_us", sa.BigInteger(), nullable=True),
        sa.Column("cpu_milli", sa.BigInteger(), nullable=False),
        sa.Column("memory_bytes", sa.BigInteger(), nullable=False),
        sa.Column("pods", sa.Integer(), nullable=False),
        sa.Column("extended", sa.Text(), nullable=False),
        sa.Column("labels", sa.Text(), nullable=False),
        sa.Column("unschedulable", sa.Boolean(), nullable=False),
        sa.Column("taints", sa.Integer(), nullable=False),
        _run_fk("run_nodes"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_nodes")),
    )
    op.create_index("ix_run_nodes_run_start", "run_nodes", ["run_id", "start_us"])
    op.create_table(
        "run_placements",
        sa.Column("id", big_key, nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("pod", sa.String(length=320), nullable=False),
        sa.Column("node", sa.String(length=253), nullable=False),
        sa.Column("start_us", sa.BigInteger(), nullable=False),
        sa.Column("end_us", sa.BigInteger(), nullable=True),
        sa.Column("by", sa.String(length=16), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("cpu_milli", sa.BigInteger(), nullable=False),
        sa.Column("memory_bytes", sa.BigInteger(), nullable=False),
        sa.Column("extended", sa.Text(), nullable=False),
        _run_fk("run_placements"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_placements")),
    )
    op.create_index("ix_run_placements_run_start", "run_placements", ["run_id", "start_us"])
    op.create_index("ix_run_placements_run_node", "run_placements", ["run_id", "node"])
    op.create_table(
        "run_queue_spans",
        sa.Column("id", big_key, nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("pod", sa.String(length=320), nullable=False),
        sa.Column("queue", sa.String(length=16), nullable=False),
        sa.Column("start_us", sa.BigInteger(), nullable=False),
        sa.Column("end_us", sa.BigInteger(), nullable=True),
        _run_fk("run_queue_spans"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_queue_spans")),
    )
    op.create_index("ix_run_queue_spans_run_start", "run_queue_spans", ["run_id", "start_us"])
    op.create_table(
        "run_series",
        sa.Column("id", big_key, nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("ts_us", sa.BigInteger(), nullable=False),
        sa.Column("active", sa.Integer(), nullable=False),
        sa.Column("backoff", sa.Integer(), nullable=False),
        sa.Column("unschedulable", sa.Integer(), nullable=False),
        sa.Column("gated", sa.Integer(), nullable=False),
        sa.Column("bound", sa.Integer(), nullable=False),
        sa.Column("allocation", sa.Text(), nullable=False),
        _run_fk("run_series"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_series")),
    )
    op.create_index("ix_run_series_run_ts", "run_series", ["run_id", "ts_us"])
    op.create_table(
        "run_rejections",
        sa.Column("id", big_key, nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("plugin", sa.String(length=100), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("nodes", sa.Integer(), nullable=False),
        _run_fk("run_rejections"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_rejections")),
    )
    op.create_index("ix_run_rejections_run_plugin_seq", "run_rejections",
                    ["run_id", "plugin", "seq"])
    op.create_index("ix_run_events_run_ts", "run_events", ["run_id", "ts_us"])
    # A pod's records in order straight from the index (the planner otherwise walks the whole
    # run through the (run_id, seq) key to honour ORDER BY seq).
    op.drop_index("ix_run_events_run_pod", table_name="run_events")
    op.create_index("ix_run_events_run_pod_seq", "run_events", ["run_id", "pod", "seq"])
    # Records of one kind near a moment (the history page) without reading the others.
    op.drop_index("ix_run_events_run_kind", table_name="run_events")
    op.create_index("ix_run_events_run_kind_ts", "run_events", ["run_id", "kind", "ts_us"])


def downgrade() -> None:
    op.drop_index("ix_run_events_run_kind_ts", table_name="run_events")
    op.create_index("ix_run_events_run_kind", "run_events", ["run_id", "kind"])
    op.drop_index("ix_run_events_run_pod_seq", table_name="run_events")
    op.create_index("ix_run_events_run_pod", "run_events", ["run_id", "pod"])
    op.drop_index("ix_run_events_run_ts", table_name="run_events")
    op.drop_index("ix_run_rejections_run_plugin_seq", table_name="run_rejections")
    op.drop_table("run_rejections")
    op.drop_index("ix_run_series_run_ts", table_name="run_series")
    op.drop_table("run_series")
    op.drop_index("ix_run_queue_spans_run_start", table_name="run_queue_spans")
    op.drop_table("run_queue_spans")
    op.drop_index("ix_run_placements_run_node", table_name="run_placements")
    op.drop_index("ix_run_placements_run_start", table_name="run_placements")
    op.drop_table("run_placements")
    op.drop_index("ix_run_nodes_run_start", table_name="run_nodes")
    op.drop_table("run_nodes")
