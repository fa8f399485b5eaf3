"""Errors of the operator benchmarks: each names the field at fault and carries its data."""

from __future__ import annotations

from collections.abc import Sequence

from pinbench.errors import UserError


class UnknownOperator(UserError):
    def __init__(self, *, op: str, known: Sequence[str]) -> None:
        super().__init__(f"unknown operator {op!r}; known operators: {', '.join(known)}")
        self.op = op
        self.known = list(known)


class UnknownParameter(UserError):
    def __init__(self, *, op: str, parameter: str, known: Sequence[str]) -> None:
        super().__init__(f"{op}: unknown parameter {parameter!r}; {op} takes: {', '.join(known)}")
        self.op = op
        self.parameter = parameter
        self.known = list(known)


class InvalidParameter(UserError):
    """A field of an operator spec has a wrong type or value, or shapes that do not fit.

    ``field`` is the parameter's name (or ``dtype``, ``direction``, ``seed``, ``size``);
    ``limit`` is what the value must satisfy, in words."""

    def __init__(self, *, op: str, field: str, value: object, limit: str) -> None:
        super().__init__(f"{op}: {field} = {value!r} is not allowed: {limit}")
        self.op = op
        self.field = field
        self.value = value
        self.limit = limit


class OutOfRange(InvalidParameter):
    """A number outside its bounds (``pinbench.bounds``): ``limit`` says them."""

    def __init__(self, *, op: str, field: str, value: object, limit: str) -> None:
        UserError.__init__(self, f"{op}: {field} must be {limit}, got {value!r}")
        self.op = op
        self.field = field
        self.value = value
        self.limit = limit


class TooLarge(InvalidParameter):
    """The operator's tensors or work exceed a cap: ``field`` names the quantity."""

    def __init__(self, *, op: str, field: str, value: int, cap: int) -> None:
        super().__init__(
            op=op,
            field=field,
            value=value,
            limit=f"at most {cap:,} allowed; ask for smaller shapes",
        )
        self.cap = cap


class UnsupportedOperation(UserError):
    """A framework cannot run this operator spec (dtype, direction) here: says why."""

    def __init__(self, *, framework: str, op: str, reason: str) -> None:
        super().__init__(f"{framework} cannot run {op}: {reason}")
        self.framework = framework
        self.op = op
        self.reason = reason


class UnknownFramework(UserError):
    def __init__(self, *, framework: str, known: Sequence[str]) -> None:
        super().__init__(
            f"no operator benchmarks for framework {framework!r}; known: {', '.join(known)}"
        )
        self.framework = framework
        self.known = list(known)
