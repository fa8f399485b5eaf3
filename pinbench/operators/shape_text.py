"""``--shape n=1,c=64,h=56,...``: an operator's parameters as the command line writes them.

Each value is read as its parameter's kind says (``schema.OPS``): an int, a float, ``true`` or
``false``, a word, or dimensions written ``8x1024``. The spec validates the values afterwards.
"""

from __future__ import annotations

from pinbench.errors import UserError
from pinbench.specs.operators.errors import UnknownOperator, UnknownParameter
from pinbench.specs.operators.schema import OPS, ParamValue


class BadShapeText(UserError):
    def __init__(self, *, text: str, reason: str) -> None:
        super().__init__(f"--shape {text!r}: {reason}")
        self.text = text
        self.reason = reason


def parse_shape(op: str, text: str) -> dict[str, ParamValue]:
    """``k=v`` pairs separated by commas, typed by ``op``'s parameter table."""
    info = OPS.get(op)
    if info is None:
        raise UnknownOperator(op=op, known=sorted(OPS))
    out: dict[str, ParamValue] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise BadShapeText(text=text, reason=f"{part!r} is not NAME=VALUE")
        param = info.param(name)
        if param is None:
            raise UnknownParameter(op=op, parameter=name, known=[p.name for p in info.params])
        if name in out:
            raise BadShapeText(text=text, reason=f"{name} is given twice")
        out[name] = _typed(text, name, param.kind, value)
    return out


def _typed(text: str, name: str, kind: str, value: str) -> ParamValue:
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "dims":
            return tuple(int(d) for d in value.lower().split("x"))
    except ValueError:
        want = {"int": "an integer", "float": "a number", "dims": "dimensions like 8x1024"}[kind]
        raise BadShapeText(text=text, reason=f"{name}={value!r} is not {want}") from None
    if kind == "bool":
        if value.lower() not in ("true", "false"):
            raise BadShapeText(text=text, reason=f"{name}={value!r} is not true or false")
        return value.lower() == "true"
    return value


def shape_text(params: dict[str, ParamValue]) -> str:
    """The inverse of ``parse_shape`` (for tables and messages)."""

    def one(v: ParamValue) -> str:
        if isinstance(v, bool):
            return str(v).lower()
        return "x".join(map(str, v)) if isinstance(v, tuple) else str(v)

    return ",".join(f"{k}={one(v)}" for k, v in params.items())
