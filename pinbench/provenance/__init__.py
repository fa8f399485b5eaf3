"""Signed provenance of runs: an in-toto Statement v1 whose predicate is SLSA Provenance v1,
in a DSSE envelope signed with Ed25519 (``keys``, ``dsse``, ``statement``, ``attest``,
``verify``). Import from the submodules; this package imports nothing."""
