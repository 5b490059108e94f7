"""Layer 1: the study spec: schema (pydantic), YAML with line numbers, constraint expressions,
message words. Imports nothing else from ``dse`` but ``dse.errors``."""
