"""The symbolic shape expressions of a ``torch.export`` archive, checked as data before PyTorch
reads them.

``torch.export.load`` turns each ``expr_str`` of the archive's program (``Add(Symbol('s0',
integer=True, positive=True), Integer(1))``, or in older archives ``s0 + 1``) into a sympy
expression with ``sympy.sympify``, which is Python's ``eval`` with sympy's and the builtins'
names in scope: a published ``.pt2`` holding ``__import__('os').system(...)`` there would run
its publisher's code in the runner, pickles refused or not. So an expression is parsed with
``ast`` (which runs nothing) and accepted only when every node is one of: an allowed sympy or
PyTorch function called by its bare name (``ALLOWED_CALLS``), a symbol name (``s0``, ``u3``), a
bounded integer, a finite decimal, a boolean, arithmetic, comparison and logic operators, and
keyword arguments that are sympy assumptions. No attribute, subscript, lambda or other name
gets through, so nothing else can be reached. A power's exponent must be a literal of at most
``MAX_EXPONENT`` (``2 ** 10 ** 10`` would otherwise be computed), and a power's base holds no
power: sympy computes integer powers at once, so six nested ``** 64`` are a number of 2**36
bits (8 GB), a seventh 512 GB. A ``Float``'s ``precision`` is at most ``MAX_PRECISION`` bits.

The publish-time check (``check_archive``, every JSON member) and the run-time one (the torch
predictor checks every string ``sympify`` is handed while it loads) use ``check_expression``.
"""

from __future__ import annotations

import ast
import re
import zipfile
from pathlib import Path
from typing import Any

from pinbench.errors import UserError

MAX_EXPR_CHARS = 65_536
"""The longest expression read; an exported model's are tens to hundreds of characters."""
MAX_NODES = 4_096
"""The most syntax nodes in one expression."""
MAX_INT = 2**63
"""Integer literals are sizes, strides and offsets: within int64."""
MAX_EXPONENT = 64
MAX_PRECISION = 1024
"""Bits of a ``Float`` (torch writes 53): mpmath works at whatever precision it is given."""
MAX_MEMBER_BYTES = 512 * 1024 * 1024
"""The largest JSON member read (a large language model's program is tens of MB)."""
MAX_JSON_DEPTH = 512

SYMBOL = re.compile(r"[a-z]{1,8}[0-9]{1,9}\Z")
"""A shape symbol's name as PyTorch makes them (``s0``, ``u12``, ``zuf0``, ``ps3``)."""
DECIMAL = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,3})?\Z")

POWERS = frozenset({"Pow", "PowByNatural", "FloatPow", "LShift"})
"""Calls whose second argument is an exponent (``LShift(a, b)`` is ``a * 2**b``)."""
RAISING = POWERS - {"LShift"}
"""Powers whose base is raised: one inside another's base multiplies the exponents
(``LShift`` multiplies its first argument, so nesting it grows the size only linearly)."""
ALLOWED_CALLS = POWERS | frozenset(
    {
        # sympy's own, as srepr writes them
        "Symbol", "Integer", "Rational", "Float", "Add", "Mul", "Max", "Min", "Abs",
        "floor", "ceiling", "Mod", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "Equality",
        "Unequality", "StrictLessThan", "LessThan", "StrictGreaterThan", "GreaterThan",
        "And", "Or", "Not", "sqrt",
        # torch.utils._sympy.functions, as torch._export.serde.serialize lists them
        "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt",
        "FloorToInt", "CeilDiv", "RShift", "FloatTrueDiv", "IntTrueDiv",
        "IsNonOverlappingAndDenseIndicator", "TruncToFloat", "TruncToInt", "RoundToInt",
        "RoundDecimal", "ToFloat", "Identity", "OpaqueUnaryFn_sqrt",
    }
)  # fmt: skip
ALLOWED_NAMES = frozenset({"true", "false", "True", "False", "oo"})
ASSUMPTIONS = frozenset(
    {
        "integer", "positive", "nonnegative", "negative", "nonpositive", "real", "finite",
        "zero", "nonzero", "commutative", "even", "odd", "rational", "precision",
    }
)  # fmt: skip
_OPERATORS = (
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd, ast.Not,
    ast.Invert, ast.BitAnd, ast.BitOr, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE,
    ast.Gt, ast.GtE, ast.Load, ast.Expression, ast.Pow, ast.LShift,  # exponents: in _problem
)  # fmt: skip


class ShapeExprRefused(UserError):
    """A shape expression that could do more than describe a size."""

    def __init__(self, *, expression: str, reason: str) -> None:
        shown = expression if len(expression) <= 120 else expression[:117] + "..."
        super().__init__(f"shape expression {shown!r} is refused: {reason}")
        self.expression = shown
        self.reason = reason


def check_expression(text: str) -> None:
    """Refuse ``text`` unless it is a shape expression that only describes a size (above)."""
    if len(text) > MAX_EXPR_CHARS:
        raise ShapeExprRefused(expression=text, reason=f"over {MAX_EXPR_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ShapeExprRefused(expression=text, reason=f"not an expression ({exc})") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ShapeExprRefused(expression=text, reason=f"over {MAX_NODES} syntax nodes")
    for node in nodes:
        problem = _problem(node)
        if problem is not None:
            raise ShapeExprRefused(expression=text, reason=problem)


def _problem(node: ast.AST) -> str | None:
    """What is wrong with one syntax node, or None."""
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in ALLOWED_CALLS:
            return f"calls {ast.unparse(node.func)[:60]}, not a sympy shape function"
        if node.func.id in POWERS and not _small_exponent(node.args[1:2]):
            return f"{node.func.id}'s exponent must be a literal of at most {MAX_EXPONENT}"
        if node.func.id in RAISING and _holds_power(node.args[:1]):
            return f"a power of a power ({node.func.id}): its size would grow exponentially"
        return None
    if isinstance(node, ast.keyword):
        if node.arg not in ASSUMPTIONS:
            return f"keyword {node.arg!r} is not a sympy assumption"
        literal = node.value.value if isinstance(node.value, ast.Constant) else None
        if not isinstance(literal, int):  # bool is an int
            return f"assumption {node.arg} must be a literal"
        if node.arg == "precision" and not 0 < literal <= MAX_PRECISION:
            return f"precision {literal} is not between 1 and {MAX_PRECISION} bits"
        return None
    if isinstance(node, ast.Name):
        ok = node.id in ALLOWED_NAMES or node.id in ALLOWED_CALLS or bool(SYMBOL.match(node.id))
        return None if ok else f"name {node.id!r} is neither a shape symbol nor a shape function"
    if isinstance(node, ast.Constant):
        return _constant(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow | ast.LShift):
        if not _small_exponent([node.right]):
            return f"** needs a literal exponent of at most {MAX_EXPONENT}"
        if isinstance(node.op, ast.Pow) and _holds_power([node.left]):
            return "a power of a power (**): its size would grow exponentially"
        return None
    if isinstance(node, ast.BinOp | ast.UnaryOp | ast.BoolOp | ast.Compare):
        return None  # their operators are checked as nodes of their own
    if isinstance(node, _OPERATORS):
        return None
    return f"{type(node).__name__} is not allowed in a shape expression"


def _constant(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if abs(value) <= MAX_INT else f"integer {str(value)[:30]} is past int64"
    if isinstance(value, str):  # Symbol('s0', ...) and Float('1.5', precision=53)
        ok = SYMBOL.match(value) or DECIMAL.match(value)
        return None if ok else f"string {value[:40]!r} is neither a symbol name nor a decimal"
    if isinstance(value, float):
        return None if value == value and abs(value) != float("inf") else "a non-finite float"
    return f"constant {value!r:.40} is not allowed"


def _small_exponent(args: list[ast.expr]) -> bool:
    """A literal exponent (``2``, ``-1``, ``Integer(2)``) of magnitude at most MAX_EXPONENT."""
    if len(args) != 1:
        return False
    arg = args[0]
    if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub | ast.UAdd):
        arg = arg.operand
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "Integer":
        arg = arg.args[0] if len(arg.args) == 1 else arg
    if not isinstance(arg, ast.Constant) or isinstance(arg.value, bool):
        return False
    return isinstance(arg.value, int) and abs(arg.value) <= MAX_EXPONENT


def _holds_power(bases: list[ast.expr]) -> bool:
    """Whether a power's base holds a power that raises (a call or ``**``) anywhere in it."""
    for base in bases:
        for node in ast.walk(base):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
                return True
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in RAISING:
                return True
    return False


def check_program(value: Any) -> None:
    """Check every ``expr_str`` in a parsed program (walked without recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if key == "expr_str":
                    if not isinstance(child, str):
                        raise ShapeExprRefused(expression=str(child)[:120], reason="not text")
                    check_expression(child)
                else:
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


class ArchiveRefused(UserError):
    """A ``torch.export`` archive whose programs cannot be read as data."""

    def __init__(self, *, member: str, reason: str) -> None:
        super().__init__(f"{member}: {reason}")
        self.member = member
        self.reason = reason


def check_archive(path: Path) -> None:
    """Check the shape expressions of every JSON member of the archive at ``path`` (its
    programs and any other JSON PyTorch may read); ``ArchiveRefused`` names the member.

    PyTorch finds a member by its name ignoring ASCII case (miniz's lookup, flags 0), and of
    several members of one name it may take any: so a ``.JSON`` member is JSON here too, and
    two names equal but for case (or equal) are refused, or one unchecked copy could load."""
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json
    from pinbench.artifacts.zipmember import MemberTooLarge, read_member

    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise ArchiveRefused(member="(archive)", reason=f"not a zip archive: {exc}") from None
    with archive:
        seen: set[str] = set()
        for name in archive.namelist():
            folded = name.lower()
            if folded in seen:
                reason = "two members of this name (PyTorch ignores case): it may read either"
                raise ArchiveRefused(member=name, reason=reason)
            seen.add(folded)
        for name in archive.namelist():
            if not name.lower().endswith(".json"):
                continue
            try:
                program = load_json(
                    read_member(archive, name, limit=MAX_MEMBER_BYTES), max_depth=MAX_JSON_DEPTH
                )
                check_program(program)
            except (JsonRefused, ShapeExprRefused) as exc:
                raise ArchiveRefused(member=name, reason=str(exc)) from None
            except (MemberTooLarge, zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                raise ArchiveRefused(member=name, reason=str(exc)) from None
