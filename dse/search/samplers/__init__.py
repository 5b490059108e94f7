"""Samplers: the plug-in contract (``plugin``), the built-in ones registered through it
(``_builtin``), building a study's sampler from the spec (``factory``) and the conformance
check for third-party samplers (``testing``)."""
