"""Layer 3: searching a study: samplers, the ask/tell run loop, workers, crash recovery,
storage, exhaustive sweeps. Imports only ``dse.spec`` and ``dse.model``."""
