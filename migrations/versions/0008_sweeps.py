"""Sweeps: a product of traces × configurations × seeds, each cell one ordinary run.

A cell is keyed by its content (trace, effective configuration, seed, replay options), so a
sweep run again skips its finished cells; ``claim`` names the attempt that owns a running cell,
and the sweep's ``coordinator_*`` the ``kaudit sweep`` process running it (one at a time).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("baseline", sa.String(length=100), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kaudit_version", sa.String(length=32), nullable=False),
        sa.Column("coordinator_host", sa.String(length=255), nullable=True),
        sa.Column("coordinator_pid", sa.Integer(), nullable=True),
        sa.Column("coordinator_heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sweeps")),
        sa.UniqueConstraint("name", name=op.f("uq_sweeps_name")),
    )
    op.create_table(
        "sweep_cells",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sweep_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("trace", sa.String(length=100), nullable=False),
        sa.Column("config", sa.String(length=100), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("run_name", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("claim", sa.String(length=64), nullable=True),
        sa.Column("worker", sa.String(length=255), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("metrics", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["sweep_id"], ["sweeps.id"],
                                name=op.f("fk_sweep_cells_sweep_id_sweeps"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"],
                                name=op.f("fk_sweep_cells_run_id_runs"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sweep_cells")),
        sa.UniqueConstraint("sweep_id", "key", name=op.f("uq_sweep_cells_sweep_id")),
    )
    op.create_index(op.f("ix_sweep_cells_run_id"), "sweep_cells", ["run_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_sweep_cells_run_id"), table_name="sweep_cells")
    op.drop_table("sweep_cells")
    op.drop_table("sweeps")
