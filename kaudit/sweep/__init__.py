"""Sweeps: traces × scheduler configurations × seeds, each cell an ordinary run, on Dask.

:mod:`~kaudit.sweep.spec` reads a spec, :mod:`~kaudit.sweep.plan` turns it into keyed cells,
:mod:`~kaudit.sweep.cells` keeps their states in the database, :mod:`~kaudit.sweep.worker`
replays one cell on a Dask worker and :mod:`~kaudit.sweep.run` drives the whole sweep. The
report over a sweep's cells is a query (:mod:`kaudit.queries.sweeps`).
"""
