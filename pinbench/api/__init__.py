"""The REST API (Litestar): the registry, lockfiles, runs and accounts over HTTP.

Nothing else in pinbench imports this package; ``pinbench serve`` starts it.
"""
