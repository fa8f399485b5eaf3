"""The per-operator table of a trace, and how two traces' breakdowns compare.

Rows are layers: an operator's name as the framework reports it, numbered when one name occurs
more than once in a prediction (PyTorch names ops, not layers: ``aten::conv2d #2`` is the
second convolution of every prediction). Only top-level operators count, so rows do not
overlap and their shares of model time (the sum of the timed ``predict`` calls) add up to at
most 100%; the rest is framework overhead between operators. Comparing frameworks, whose
operator names differ, goes through categories (convolution, matmul, pooling, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("convolution", ("conv",)),
    ("matmul", ("gemm", "matmul", "linear", "addmm", "dense", "einsum", "mm", "bmm")),
    ("pooling", ("pool",)),
    ("activation", ("relu", "sigmoid", "tanh", "gelu", "clamp", "swish", "silu", "elu")),
    ("softmax", ("softmax",)),
    ("normalization", ("norm",)),
    ("elementwise", ("bias", "add", "mul", "sub", "div")),
    (
        "reshape",
        (
            "reshape",
            "flatten",
            "view",
            "transpose",
            "permute",
            "reorder",
            "squeeze",
            "slice",
            "pack",
            "concat",
            "identity",
            "shape",
            "contiguous",
            "t",
        ),
    ),
    (
        "conversion",
        ("copy", "detach", "lift", "cast", "empty", "variable", "const", "resolve", "to"),
    ),
)
"""Words of four letters or more match anywhere in the lower-cased operator name; shorter
ones must be a whole word of it (``aten::to``, ``Add``), so ``TopK`` is not a conversion."""
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def category(op: str) -> str:
    """The kind of an operator type, for comparing frameworks (``other`` when unknown)."""
    name = op.rsplit("::", 1)[-1]
    lower = name.lower()
    words = {w.lower() for w in _WORDS.findall(name)}
    for cat, keys in CATEGORIES:
        if any(k in lower if len(k) >= 4 else k in words for k in keys):
            return cat
    return "other"


@dataclass(frozen=True, slots=True)
class OpRow:
    name: str
    op: str
    count: int
    total_ns: int

    @property
    def category(self) -> str:
        return category(self.op)

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.count if self.count else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "op": self.op, "count": self.count, "total_ns": self.total_ns}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OpRow:
        return cls(str(data["name"]), str(data["op"]), int(data["count"]), int(data["total_ns"]))


def op_table(predictions: Iterable[Sequence[tuple[int, str, str, int]]]) -> list[OpRow]:
    """Rows from each prediction's top-level operators ``(start_ns, name, op, duration_ns)``,
    slowest first."""
    totals: dict[tuple[str, str], list[int]] = {}
    for ops in predictions:
        seen: dict[str, int] = {}
        for _, name, op, dur in sorted(ops):
            n = seen[name] = seen.get(name, 0) + 1
            key = (name if n == 1 else f"{name} #{n}", op)
            row = totals.setdefault(key, [0, 0])
            row[0] += 1
            row[1] += dur
    rows = [OpRow(name, op, c, t) for (name, op), (c, t) in totals.items()]
    return sorted(rows, key=lambda r: (-r.total_ns, r.name))


@dataclass(frozen=True, slots=True)
class CategoryRow:
    category: str
    per_prediction_ns: list[float]
    """Mean time per prediction in this category, one value per trace."""
    shares: list[float]
    """Share of each trace's model time."""


def by_category(
    tables: Sequence[Sequence[OpRow]], predictions: Sequence[int], model_ns: Sequence[int]
) -> list[CategoryRow]:
    """The traces' time per prediction in each operator category, largest difference first."""
    cats = sorted({r.category for t in tables for r in t})
    out = []
    for cat in cats:
        totals = [sum(r.total_ns for r in t if r.category == cat) for t in tables]
        per = [tot / max(1, n) for tot, n in zip(totals, predictions, strict=True)]
        shares = [tot / m if m else 0.0 for tot, m in zip(totals, model_ns, strict=True)]
        out.append(CategoryRow(cat, per, shares))
    return sorted(
        out, key=lambda r: (-(max(r.per_prediction_ns) - min(r.per_prediction_ns)), r.category)
    )
