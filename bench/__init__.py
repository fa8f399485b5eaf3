"""Benchmarks of pinbench against baselines (openssl, DVC, a naive resolver).

Run them from the repository root as modules, e.g. ``.venv/bin/python -m bench.bench_verify``,
or all of them with ``.venv/bin/python bench/run_all.py``. Results: ``docs/benchmarks.md``.
"""
