"""A model's chat template rendered as transformers renders it, in a bounded sandbox.

transformers renders a tokenizer's ``chat_template`` in Jinja's immutable sandbox, which keeps a
template from reaching Python's internals but not from growing: ``{{ 'x' * 10**10 }}`` grows
until memory runs out. Here the same template language (the sandbox, ``trim_blocks`` and
``lstrip_blocks``, ``loopcontrols``, the ``{% generation %}`` tag, and transformers' globals
``raise_exception``, ``strftime_now``, ``namespace``, ``dict`` and its ``tojson``) renders with
the bounds of ``template_bounds``: every operation that can make a large value from small ones
is sized first (``*``, ``**``, ``+``, ``%``, ``~``, ``range``, the string methods and filters
that pad, replace or join), everything else is measured as it is made, loops count their steps,
output is counted as it is produced, the render has a time limit, and operations that walk
their operands (comparisons, ordering filters, ``tojson``) are sized by them first. ``render``
runs in a child process under memory and CPU limits (``template_worker``), the catch-all.
A template past a bound, or one that does not compile, fails with ``TemplateRefused``.
Filters not deterministic or that no chat needs (``random``, ``urlize``, ...) are left out.
"""

from __future__ import annotations

import functools
import operator
import types
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from pinbench.errors import UserError
from pinbench.worker.generation import template_bounds as bounds

if TYPE_CHECKING:
    from pinbench.worker.generation.template_worker import Worker

TEXT_FILTERS = frozenset(
    {
        *("capitalize", "center", "e", "escape", "forceescape", "format", "indent", "lower"),
        *("replace", "safe", "string", "striptags", "title", "trim", "truncate", "upper"),
        "wordcount",
    }
)
"""Filters that turn their value into text first (``str``), which is sized here first."""
KEPT_FILTERS = TEXT_FILTERS | frozenset(
    {
        *("abs", "attr", "batch", "count", "d", "default", "dictsort", "first", "float"),
        *("groupby", "int", "join", "last", "length", "list", "items", "map", "min", "max"),
        *("reject", "rejectattr", "reverse", "round", "select", "selectattr", "slice", "sort"),
        *("sum", "unique"),
    }
)
ORDERING_FILTERS = frozenset({"dictsort", "groupby", "max", "min", "sort", "unique"})
"""Filters that lower, compare or hash every item (a reference to one long string each time):
sized by their value's characters and items first."""
REFUSED_METHODS = frozenset({"translate", "maketrans", "expandtabs"})
"""String methods whose result cannot be sized from their operands cheaply."""


class TemplateRefused(UserError):
    """A chat template that does not compile or went past a bound while rendering."""

    def __init__(self, *, template: str, reason: str) -> None:
        super().__init__(f"chat template {template}: {reason}")
        self.template = template
        self.reason = reason


class ChatTemplate:
    """One template, compiled once, rendered per conversation."""

    def __init__(self, source: str, *, name: str, variables: dict[str, Any]) -> None:
        """``name`` says where the template is (messages name it); ``variables`` are what
        transformers passes beside the messages (the tokenizer's special tokens)."""
        self.name = name
        self._variables = dict(variables)
        self._source = source
        self._worker: Worker | None = None
        try:
            self._template = BoundedSandbox().from_string(source)
        except TemplateError as exc:
            raise TemplateRefused(template=name, reason=f"does not compile: {exc}") from None
        except RecursionError:
            raise TemplateRefused(template=name, reason="nested too deeply to compile") from None

    def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> str:
        """The text transformers' ``apply_chat_template(..., tokenize=False)`` gives, rendered
        in a process of its own under a memory and a CPU limit (``template_worker``)."""
        from pinbench.worker.generation.template_worker import Worker, WorkerRefused

        if self._worker is None:
            self._worker = Worker(self._source, name=self.name, variables=self._variables)
        try:
            return self._worker.render(messages, add_generation_prompt=add_generation_prompt)
        except WorkerRefused as exc:
            raise TemplateRefused(template=self.name, reason=exc.reason) from None

    def render_here(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> str:
        """``render`` in this process: the rules of ``template_bounds`` alone."""
        spent = bounds.Budget()
        token = bounds.CURRENT.set(spent)
        pieces: list[str] = []
        try:
            for piece in self._template.generate(
                {
                    **self._variables,
                    "messages": messages,
                    "tools": None,
                    "documents": None,
                    "add_generation_prompt": add_generation_prompt,
                }
            ):
                spent.emit(piece)
                pieces.append(piece)
        except bounds.Exceeded as exc:
            raise TemplateRefused(template=self.name, reason=f"refused: {exc.reason}") from None
        except TemplateError as exc:  # raise_exception, the sandbox's own refusals
            raise TemplateRefused(template=self.name, reason=f"failed: {exc}") from None
        except RecursionError:
            raise TemplateRefused(template=self.name, reason="recursed too deeply") from None
        except MemoryError:
            raise TemplateRefused(template=self.name, reason="ran out of memory") from None
        except (TypeError, ValueError, LookupError, ArithmeticError, AttributeError) as exc:
            reason = f"failed: {type(exc).__name__}: {exc}"
            raise TemplateRefused(template=self.name, reason=reason) from None
        finally:
            bounds.CURRENT.reset(token)
        return "".join(pieces)


class _Generation(Extension):
    """``{% generation %}...{% endgeneration %}`` (transformers' assistant-mask marker):
    renders its body; pinbench asks for no mask."""

    tags = {"generation"}  # noqa: RUF012 - Extension declares it so

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_body")
        return nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller: Callable[[], str]) -> str:
        return caller()


class _Namespace(Namespace):
    """transformers' namespace: no underscore-led names."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _Namespace._check(name)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _Namespace._check(name)
        Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise bounds.Exceeded(f"a namespace attribute may not start with `_`: {name!r}")


class _Dict:
    """transformers' ``dict`` global: a call and ``fromkeys``, nothing else reachable."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


def _strftime_now(fmt: str) -> str:
    bounds.will_make(len(fmt) * 16, "strftime_now")
    return datetime.now().strftime(fmt)


def _tojson(
    x: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """transformers' ``tojson`` (no HTML escaping), its indent and separators bounded."""
    import json

    pad = len(indent) if isinstance(indent, str) else indent or 0
    if pad > 64 or any(len(s) > 64 for s in separators or ()):
        raise bounds.Exceeded("tojson's indent and separators are at most 64 characters")
    seps = separators or ((",", ": ") if indent is not None else (", ", ": "))
    size = bounds.json_size(x, pad=pad, separators=seps, ensure_ascii=ensure_ascii)
    bounds.will_make(size, "tojson")  # before json.dumps makes it
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _bounded_range(*args: int) -> range:
    found = range(*args)
    if len(found) > bounds.MAX_RANGE:
        raise bounds.Exceeded(f"range() of {len(found)} items (at most {bounds.MAX_RANGE})")
    bounds.budget().spend(len(found))
    return found


class _Generator(CodeGenerator):
    """Jinja's code generator with ``~`` joined through ``environment.bounded_concat`` and
    each ``for`` loop's items counted through ``environment.bounded_iter``."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def visit_Compare(self, node: nodes.Compare, frame: Frame) -> None:
        self.write("environment.bounded_compare(")
        self.visit(node.expr, frame)
        for operand in node.ops:
            self.write(f", ({operand.op!r}, ")
            self.visit(operand.expr, frame)
            self.write(")")
        self.write(")")

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        counted = nodes.Call(
            nodes.EnvironmentAttribute("bounded_iter"), [node.iter], [], None, None
        )
        node.iter = counted.set_lineno(node.lineno)
        super().visit_For(node, frame)


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """transformers' chat-template environment, every way to grow bounded."""

    code_generator_class = _Generator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self) -> None:
        super().__init__(
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[_Generation, loopcontrols],
            finalize=bounds.text,
            cache_size=0,
            auto_reload=False,
        )
        self.filters = {
            name: _bounded_filter(name, self.filters[name]) for name in sorted(KEPT_FILTERS)
        }
        self.filters["tojson"] = _bounded_filter("tojson", _tojson)
        self.globals.clear()
        self.globals.update(
            range=_bounded_range,
            raise_exception=_raise_exception,
            strftime_now=_strftime_now,
            namespace=_Namespace,
            dict=_Dict(),
        )

    def concat(self, pieces: Iterator[str]) -> str:  # type: ignore[override]
        """Every buffer's join (a ``{% set %}`` block, a macro's body, a filter block)."""
        texts = list(pieces)
        bounds.joined(texts, "")
        return str(bounds.made("".join(texts)))

    def bounded_concat(self, values: tuple[Any, ...]) -> str:
        bounds.joined(list(values), "")
        return str(bounds.made("".join(bounds.text(v) for v in values)))

    def bounded_compare(self, left: Any, *operands: tuple[str, Any]) -> Any:
        """``left op1 right1 op2 right2 ...`` as Python chains it, each comparison sized first
        (``template_bounds.compared``); the operands are evaluated before, not as needed."""
        result: Any = True
        for op, right in operands:
            bounds.compared(op, left, right)
            result = _COMPARISONS[op](left, right)
            if not result:
                return result
            left = right
        return result

    def bounded_iter(self, items: Any) -> Iterator[Any]:
        spent = bounds.budget()
        for item in items:
            spent.step()
            yield item

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            bounds.repeated(left, right)
        elif operator == "**":
            bounds.power(left, right)
        elif operator == "+":
            bounds.added(left, right)
        elif operator == "%" and isinstance(left, str):
            bounds.printf(left, right)
        return bounds.made(bounds.number(super().call_binop(context, operator, left, right)))

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        method = getattr(__obj, "__wrapped__", __obj)  # str.format arrives wrapped
        if isinstance(method, types.BuiltinMethodType) and isinstance(method.__self__, str):
            _check_method(method.__self__, method.__name__, args, kwargs)
            if method.__name__ == "join" and args:
                args = (bounds.listed(args[0]), *args[1:])
                bounds.joined(args[0], method.__self__)
        bounds.budget().tick()
        return bounds.made(super().call(__context, __obj, *args, **kwargs))


_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "gteq": operator.ge,
    "lt": operator.lt,
    "lteq": operator.le,
    "in": lambda a, b: a in b,
    "notin": lambda a, b: a not in b,
}


def _check_method(text: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Size a string method's result before it runs (or refuse the method)."""
    if name in REFUSED_METHODS:
        raise bounds.Exceeded(f"str.{name} is not available in a chat template")
    if name in ("ljust", "rjust", "center", "zfill") and args:
        bounds.padded(args[0], f"str.{name}")
    elif name == "replace" and len(args) >= 2:
        bounds.replaced(text, args[0], args[1], args[2] if len(args) > 2 else -1)
    elif name == "format":
        bounds.formatted(text, args, kwargs)
    elif name == "format_map" and args:
        bounds.formatted(text, (), args[0] if isinstance(args[0], dict) else {})


def _bounded_filter(name: str, filter_: Callable[..., Any]) -> Callable[..., Any]:
    """``filter_`` with its result sized first where it can grow, measured after always
    (its Jinja ``pass_*`` marker kept: the value is the argument after the one it adds)."""
    passes = getattr(filter_, "jinja_pass_arg", None) is not None

    @functools.wraps(filter_)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        head, rest = (args[:1], args[1:]) if passes else ((), args)
        if rest:
            rest = _checked_filter(name, rest, kwargs)
        bounds.budget().tick()
        return bounds.made(filter_(*head, *rest, **kwargs))

    return bounded


def _checked_filter(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The filter's arguments, its value as text where it takes text, its result sized first
    where it can grow."""
    value, params = args[0], args[1:]

    def param(i: int, key: str, default: Any) -> Any:
        return params[i] if len(params) > i else kwargs.get(key, default)

    if name in TEXT_FILTERS:
        value = bounds.text(value)
        if name in ("e", "escape", "forceescape"):
            bounds.will_make(len(value) + 4 * sum(map(value.count, "&<>'\"")), name)
    if name == "center":
        bounds.padded(param(0, "width", 80), "center")
    elif name == "indent":
        bounds.indented(value, param(0, "width", 4))
    elif name == "replace":
        bounds.replaced(value, param(0, "old", None), param(1, "new", None), param(2, "count", -1))
    elif name == "format":
        bounds.printf(value, params or kwargs)
    elif name in ("batch", "slice"):
        bounds.padded(param(0, "linecount" if name == "batch" else "slices", 0), name)
    elif name in ORDERING_FILTERS:
        if not isinstance(value, (str, list, tuple, dict, set, frozenset)):
            value = bounds.listed(value)  # a generator (``map``, ``select``): its items
        bounds.ordered(value, name)
    elif name in ("join", "sum"):
        value = bounds.listed(value)
        if name == "sum":
            bounds.summed(value)
        elif param(1, "attribute", None) is None:
            separator = param(0, "d", "")
            bounds.joined(value, separator if isinstance(separator, str) else "")
    return (value, *params)
