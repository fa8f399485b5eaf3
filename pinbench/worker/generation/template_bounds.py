"""What one chat-template render may spend, and the size of what an operation would make,
known before it makes it (``chat_template`` applies these to every operation a template can
grow memory with).

A render has a ``Budget``: ``MAX_WORK`` characters (and list items) made in all, no value past
``MAX_VALUE``, ``MAX_OUTPUT`` characters of output, ``MAX_ITERATIONS`` loop steps and
``MAX_SECONDS`` of time. An operation whose result can be much larger than its operands
(``'x' * 10**10``, ``s.ljust(n)``, ``s.replace('', t)``, ``xs|join``, ``'%9999999d' % 1``) is
sized from its operands first and refused before it runs; any other is measured after (its
result is at most a small multiple of its operands, each already bounded).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sized
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from jinja2.utils import Namespace

MAX_OUTPUT = 4 * 1024 * 1024
"""Characters one render may give (a prompt is one line of at most 1 MiB)."""
MAX_VALUE = MAX_OUTPUT
"""Characters (or items) of any one value a template makes."""
MAX_WORK = 64 * 1024 * 1024
"""Characters and items a render may make in all."""
MAX_ITERATIONS = 1_000_000
"""Loop steps of one render, all loops together."""
MAX_RANGE = 100_000
"""Items of one ``range()`` (Jinja's own sandbox limit)."""
MAX_INT_BITS = 64
"""Bits of an integer that arithmetic makes."""
MAX_SECONDS = 10.0
MAX_FORMAT_WIDTH = 10_000
"""A width or precision in a ``%`` or ``str.format`` format."""


class Exceeded(Exception):
    """A render went past one of its bounds: ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Budget:
    """What one render has spent."""

    work: int = 0
    output: int = 0
    iterations: int = 0
    deadline: float = field(default_factory=lambda: time.monotonic() + MAX_SECONDS)

    def spend(self, amount: int) -> None:
        self.work += amount
        if self.work > MAX_WORK:
            raise Exceeded(f"it makes more than {MAX_WORK} characters and items in all")
        self.tick()

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise Exceeded(f"it runs for more than {MAX_SECONDS:g} s")

    def step(self) -> None:
        self.iterations += 1
        if self.iterations > MAX_ITERATIONS:
            raise Exceeded(f"its loops take more than {MAX_ITERATIONS} steps")
        if not self.iterations % 1024:
            self.tick()

    def emit(self, text: str) -> None:
        self.output += len(text)
        if self.output > MAX_OUTPUT:
            raise Exceeded(f"its output passes {MAX_OUTPUT} characters")
        self.spend(len(text))


CURRENT: ContextVar[Budget | None] = ContextVar("pinbench_chat_budget", default=None)


def budget() -> Budget:
    """The budget of the render under way (one that cannot spend is an error of pinbench's)."""
    spent = CURRENT.get()
    if spent is None:
        raise RuntimeError("a bounded template operation outside a render")
    return spent


def size(value: Any) -> int:
    """What ``value`` counts for: a string's characters, a collection's items, else 1."""
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        return len(value)
    return 1


def made(value: Any) -> Any:
    """``value``, just made by an operation: at most ``MAX_VALUE``, spent from the budget."""
    n = size(value)
    if n > MAX_VALUE:
        raise Exceeded(f"it makes a value of {n} characters or items (at most {MAX_VALUE})")
    budget().spend(n)
    return value


def will_make(n: int, what: str) -> None:
    """Refuse an operation that would make ``n`` characters or items, before it does."""
    if n > MAX_VALUE:
        raise Exceeded(f"{what} would make {n} characters or items (at most {MAX_VALUE})")


def repeated(left: Any, right: Any) -> None:
    """``left * right`` sized: a sequence times a count."""
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, (str, bytes, list, tuple)) and isinstance(count, int):
            will_make(len(seq) * max(count, 0), "`*`")


def power(left: Any, right: Any) -> None:
    """``left ** right`` sized: an integer's bits."""
    if isinstance(left, int) and isinstance(right, int) and right > 0:
        bits = max(abs(left).bit_length(), 1) * right
        if abs(left) > 1 and bits > MAX_INT_BITS:
            raise Exceeded(f"`{left} ** {right}` has more than {MAX_INT_BITS} bits")


def added(left: Any, right: Any) -> None:
    if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
        will_make(len(left) + len(right), "`+`")


def number(value: Any) -> Any:
    """An integer arithmetic made, at most ``MAX_INT_BITS`` bits."""
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise Exceeded(f"it makes an integer of more than {MAX_INT_BITS} bits")
    return value


_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_DIGITS = re.compile(r"\d+")


def _width(part: str | None, what: str) -> int:
    if part == "*":
        raise Exceeded(f"{what} takes a width from an argument")
    if part is not None and int(part) > MAX_FORMAT_WIDTH:
        raise Exceeded(f"{what} has a width of {part} (at most {MAX_FORMAT_WIDTH})")
    return int(part) if part else 0


def printf(fmt: str, args: Any) -> None:
    """``fmt % args`` sized: the format, each width and precision (at most
    ``MAX_FORMAT_WIDTH`` each), and the arguments' text."""
    total = len(fmt) + text_size(args)
    for found in _PRINTF.finditer(fmt):
        total += sum(_width(part, "a `%` format") for part in found.groups())
    will_make(total, "`%`")


def formatted(fmt: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """``fmt.format(*args, **kwargs)`` sized the same way (no nested field in a spec)."""
    from string import Formatter

    try:
        fields = list(Formatter().parse(fmt))
    except ValueError as exc:
        raise Exceeded(f"a malformed format: {exc}") from None
    total = len(fmt) + text_size(args) + text_size(kwargs)
    for _, _, spec, _ in fields:
        if spec and "{" in spec:
            raise Exceeded("a format takes its width from an argument (a nested field)")
        total += sum(_width(d, "a format") for d in _DIGITS.findall(spec or ""))
    will_make(total, "format")


def padded(width: Any, what: str) -> None:
    if isinstance(width, int):
        will_make(width, what)


def replaced(s: str, old: Any, new: Any, count: Any = -1) -> None:
    """``s.replace(old, new, count)`` sized."""
    if not (isinstance(old, str) and isinstance(new, str)):
        return
    found = len(s) + 1 if not old else s.count(old)
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    will_make(len(s) + found * max(len(new) - len(old), 0), "replace")


def indented(s: str, width: Any) -> None:
    """``s|indent(width)`` sized: every line gets the indent."""
    pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    will_make(len(s) + (s.count("\n") + 2) * max(pad, 0), "indent")


def listed(items: Iterable[Any]) -> list[Any]:
    """``items`` as a list, refused past ``MAX_VALUE`` of them (a generator stops there)."""
    if isinstance(items, Sized):
        will_make(len(items), "a sequence")
    out = []
    for item in items:
        out.append(item)
        if len(out) > MAX_VALUE:
            will_make(len(out), "a sequence")
    budget().spend(len(out))
    return out


def joined(items: list[Any], separator: str) -> None:
    """``separator.join(items)`` sized (an item that is not text: as ``str`` gives it)."""
    total = len(separator) * max(len(items) - 1, 0)
    for item in items:
        total += len(item) if isinstance(item, str) else text_size(item)
        if total > MAX_VALUE:
            break
    will_make(total, "join")


def summed(items: list[Any]) -> None:
    """``items|sum``: sequences added up make one as long as them all."""
    will_make(sum(len(i) for i in items if isinstance(i, (str, list, tuple))), "sum")


def text_size(value: Any, cap: int = MAX_VALUE) -> int:
    """At least ``len(str(value))`` (a string within a collection: its characters and quotes;
    escapes can make its ``repr`` longer, which ``made`` then measures), walking no further
    than ``cap``: a collection that holds itself, or a million references to one long string,
    is sized without ever being turned into text."""
    total, stack = 0, [value]
    while stack and total <= cap:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + (2 if item is not value else 0)
        elif isinstance(item, bool) or item is None:
            total += 5
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 2
        elif isinstance(item, float):
            total += 24
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += 2 + 2 * len(item)
            stack.extend(item)
        elif isinstance(item, Namespace):
            total += 16
            stack.append(object.__getattribute__(item, "_Namespace__attrs"))
        else:
            total += 64  # a range, a macro, a loop: a short repr of its own
    return total


def text(value: Any) -> str:
    """``str(value)``, sized first when ``value`` is not already text."""
    if isinstance(value, str):
        return value
    will_make(text_size(value), "turning a value into text")
    return str(made(str(value)))


def _bounded_size(value: Any, what: str) -> None:
    """Refuse an operation whose work is ``value``'s size past ``MAX_VALUE``; spend it."""
    n = text_size(value)
    if n > MAX_VALUE:
        raise Exceeded(f"{what} goes over {n} characters and items (at most {MAX_VALUE})")
    budget().spend(n)


def compared(op: str, left: Any, right: Any) -> None:
    """A comparison (``==``, ``<``, ``in`` ...) sized by what it walks: both operands, each
    reference counted (``[b] * n == [a] * n`` walks ``n`` times ``len(a)``); a key looked up in
    a dict or set is only hashed."""
    if op in ("in", "notin") and isinstance(right, (dict, set, frozenset)):
        right = None
    if isinstance(left, _WALKED) or isinstance(right, _WALKED):
        _bounded_size((left, right), f"`{_OPERATORS.get(op, op)}`")


_WALKED = (str, bytes, list, tuple, dict, set, frozenset)
_OPERATORS = {"eq": "==", "ne": "!=", "gt": ">", "gteq": ">=", "lt": "<", "lteq": "<="}
_OPERATORS.update({"in": "in", "notin": "not in"})


def ordered(value: Any, what: str) -> None:
    """``max``, ``min``, ``sort``, ``unique``, ``groupby``, ``dictsort`` sized by their items'
    characters (each is lowered, compared or hashed; a reference counts each time)."""
    _bounded_size(value, what)


def json_size(
    value: Any, *, pad: int, separators: tuple[str, str], ensure_ascii: bool, cap: int = MAX_VALUE
) -> int:
    """At least the length of ``json.dumps(value, ...)`` (``pad``: its indent, 0 for none),
    walking no further than ``cap``: strings with their quotes and escapes, each container's
    separators and, indented, each item's line at its depth."""
    item_sep, key_sep = separators
    total, stack = 0, [(value, 0)]
    while stack and total <= cap:
        item, depth = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2 + item.count('"') + item.count("\\")
            total += 5 * len(_CONTROL.findall(item))
            if ensure_ascii and not item.isascii():
                total += 11 * (len(item) - len(item.encode("ascii", "ignore")))
        elif isinstance(item, (dict, list, tuple)):
            n = len(item)
            total += 2 + max(n - 1, 0) * len(item_sep)
            if pad and n:
                total += n * (1 + pad * (depth + 1)) + 1 + pad * depth
            if isinstance(item, dict):
                total += n * len(key_sep)
            if total + n > cap:  # each item is a character at least: no need to walk them
                return total + n
            if isinstance(item, dict):
                for k, v in item.items():
                    stack.append((k, depth + 1))
                    stack.append((v, depth + 1))
            else:
                stack.extend((v, depth + 1) for v in item)
        else:
            total += text_size(item, 64)
    return total


_CONTROL = re.compile(r"[\x00-\x1f]")
