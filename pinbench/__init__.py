"""pinbench: a reproducible artifact registry and evaluation store for deep-learning benchmarks."""

__version__ = "0.1.0"
