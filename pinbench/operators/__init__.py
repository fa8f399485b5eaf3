"""Operator benchmarks (Deep500's level 0): one operator, one framework, timed and validated.

``OperatorSpec`` (spec.py) names the operator, its parameters, dtype, direction and seed;
``inputs.generate`` draws the same tensors for every framework; ``reference`` computes the
float64 NumPy answer and validates a framework's against it; ``counts`` gives the analytical
FLOPs and bytes; ``frameworks/`` holds one module per framework (imported lazily);
``run.run_operator`` ties them together into an ``OperatorResult``. Design: docs/decisions/,
entry 107.

The package itself imports nothing, so a request naming an operator is parsed without NumPy.
"""
