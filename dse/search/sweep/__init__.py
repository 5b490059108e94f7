"""The exhaustive or quasi-random sweep (``sweep``): numbered chunks of designs evaluated
vectorized (``chunks``) here, or on local processes or a Dask cluster (``_dask``,
``scheduler_address``), merged into the exact feasible front."""
