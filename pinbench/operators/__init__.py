"""Operator benchmarks (Deep500's level 0): one operator, one framework, timed and validated.

``OperatorSpec`` (spec.py) names the operator, its parameters, dtype, direction and seed;
``inputs.generate`` draws the same tensors for every framework; ``reference`` computes the
float64 NumPy answer and validates a framework's against it; ``counts`` gives the analytical
FLOPs and bytes; ``frameworks/`` holds one module per framework (imported lazily);
``run.run_operator`` ties them together into an ``OperatorResult``. Design: docs/decisions.md
entry 107.
"""

from pinbench.operators.counts import Counts, counts
from pinbench.operators.errors import (
    InvalidParameter,
    TooLarge,
    UnknownFramework,
    UnknownOperator,
    UnknownParameter,
    UnsupportedOperation,
)
from pinbench.operators.inputs import OperatorInputs, generate
from pinbench.operators.reference import TOLERANCES, Validation, validate
from pinbench.operators.resnet50 import RESNET50_CONVS, resnet50_conv_specs
from pinbench.operators.run import OperatorResult, run_operator
from pinbench.operators.spec import OperatorSpec, parse_spec

__all__ = [
    "RESNET50_CONVS",
    "TOLERANCES",
    "Counts",
    "InvalidParameter",
    "OperatorInputs",
    "OperatorResult",
    "OperatorSpec",
    "TooLarge",
    "UnknownFramework",
    "UnknownOperator",
    "UnknownParameter",
    "UnsupportedOperation",
    "Validation",
    "counts",
    "generate",
    "parse_spec",
    "resnet50_conv_specs",
    "run_operator",
    "validate",
]
