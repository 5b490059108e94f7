"""The exhaustive or quasi-random sweep (``sweep``): numbered chunks of designs evaluated
vectorized (``chunks``) here, on local processes (``_local``) or on a Dask cluster
(``_dask``, ``scheduler_address``), merged into the exact feasible front."""
