"""Running a study: the ask/tell loop (``runner``), batched asks and tells (``batch``), worker
processes (``workers``, ``local_processes``), crash recovery (``recovery``), the checks before a
run (``preflight``) and the warm start. Imports only ``dse.spec``, ``dse.model`` and the rest
of ``dse.search``."""
