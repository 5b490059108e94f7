"""Layer 1: the study spec: schema (pydantic), YAML with line numbers, constraint expressions,
errors. Imports nothing else from ``dse``."""
