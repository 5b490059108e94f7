"""Layer 2: the evaluator registry and contract, a compiled study (evaluation), uncertain
assumptions and robust objectives, Pareto dominance and hypervolume. Imports only ``dse.spec``."""
