"""The Kubernetes release of traces and runs: a trace keeps the release it was recorded from
(as its source says it: ``kaudit record``'s ``/version``, an audit log's kube-scheduler user
agent), a run the release whose kube-scheduler it mirrored. Runs made before kaudit kept the
release were all replayed as v1.34.2, the one release kaudit mirrored then.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The release every run stored before this revision was replayed as.
RELEASE_BEFORE = "v1.34.2"


def upgrade() -> None:
    with op.batch_alter_table("traces") as batch:
        batch.add_column(sa.Column("kubernetes_version", sa.String(32), nullable=True))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("kubernetes_version", sa.String(32), nullable=True))
    runs = sa.table("runs", sa.column("kubernetes_version", sa.String(32)))
    op.execute(runs.update().where(runs.c.kubernetes_version.is_(None))
               .values(kubernetes_version=RELEASE_BEFORE))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("kubernetes_version")
    with op.batch_alter_table("traces") as batch:
        batch.drop_column("kubernetes_version")
