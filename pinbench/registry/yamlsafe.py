"""YAML from users, read with limits: PyYAML's safe loader, made hostile-input proof.

Every YAML document pinbench accepts from a person or a network peer (manifests, requests,
MLModelScope manifests, uploads) is read here. On top of ``yaml.SafeLoader`` (libyaml's
parser when PyYAML has it) it refuses, naming the problem and its line and column:

- a document larger than ``MAX_DOCUMENT_BYTES``;
- nesting deeper than ``MAX_DEPTH``, aliases expanded (PyYAML composes recursively, and
  so do the converters the data goes to next);
- aliases standing for more than ``MAX_ALIAS_NODES`` nodes in total (alias amplification,
  "billion laughs": a few KB expanding to millions of values);
- integers longer than ``MAX_INT_DIGITS`` digits (Python refuses to convert ints of more
  than 4,300 digits, and such a number means nothing in a manifest);
- non-finite floats (``.nan``, ``.inf``): JSON, and so a manifest's digest, cannot hold them;
- a key given twice in one mapping (YAML says keys are unique; PyYAML keeps the last one).

Errors are ``YamlRefused`` carrying the reason and the position; each caller turns it into
its own document error (``ManifestError``, ``RequestError``...).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer
from yaml.constructor import BaseConstructor, ConstructorError, SafeConstructor
from yaml.error import Mark, MarkedYAMLError
from yaml.events import AliasEvent, Event
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.resolver import BaseResolver, Resolver

from pinbench.errors import UserError

MAX_DOCUMENT_BYTES = 1024 * 1024
"""1 MiB: the largest manifests (a dataset with thousands of files) are a few hundred KB."""
MAX_DEPTH = 64
"""The deepest manifest (a model's input steps) nests about eight levels."""
MAX_ALIAS_NODES = 10_000
"""Nodes that aliases may stand for, all aliases together, each counted expanded."""
MAX_INT_DIGITS = 64
"""A size in bytes has at most 20 digits; 64 leaves room and stays far below Python's limit."""

_MERGE_TAG = "tag:yaml.org,2002:merge"
_PARSER_DEPTH_LIMIT = "exceeded maximum nesting depth"
"""What PyYAML's own scanner says (from 6.0.4) past its nesting limit."""


class YamlRefused(UserError):
    """A YAML document that is malformed or breaks a limit: the reason, and where if known."""

    def __init__(self, *, reason: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.column = column


class _Limit(MarkedYAMLError):
    """A limit broken while reading; carries the position of the node that broke it."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class _LimitedComposer(Composer):
    """PyYAML's composer with a depth limit and a budget for what aliases expand to.

    Each anchored node's expanded size (itself and everything under it, aliases expanded)
    and height are known once it is composed; an alias costs its target's size and reaches
    as deep as its target's height. Counting is linear in the document, however far the
    aliases would expand.
    """

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._peak = 0
        self._nodes = 0
        self._alias_nodes = 0
        self._sizes: dict[str, int] = {}
        self._heights: dict[str, int] = {}

    if TYPE_CHECKING:  # the parser's, in the loaders below

        def peek_event(self) -> Event: ...

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()
        if isinstance(event, AliasEvent) and event.anchor is not None:
            self._expand(event.anchor, event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        self._reach(self._depth, event.start_mark)
        outer_peak, self._peak = self._peak, self._depth
        before = self._nodes
        self._nodes += 1
        node = super().compose_node(parent, index)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._sizes[anchor] = self._nodes - before
            self._heights[anchor] = self._peak - self._depth + 1
        self._depth -= 1
        self._peak = max(outer_peak, self._peak)
        return node

    def _expand(self, anchor: str, mark: Any) -> None:
        if anchor in self.anchors and anchor not in self._sizes:
            raise _Limit(
                f"alias *{anchor} is inside the node it names: recursive structures are "
                "not allowed",
                mark,
            )
        size = self._sizes.get(anchor, 0)  # 0: undefined, which the composer refuses
        self._nodes += size
        self._alias_nodes += size
        if self._alias_nodes > MAX_ALIAS_NODES:
            raise _Limit(
                f"aliases expand to more than {MAX_ALIAS_NODES} nodes in total, past it at "
                f"*{anchor} (alias amplification); write the values out instead",
                mark,
            )
        self._reach(
            self._depth + self._heights.get(anchor, 0), mark, f" once *{anchor} is expanded"
        )

    def _reach(self, depth: int, mark: Any, how: str = "") -> None:
        if depth > MAX_DEPTH:
            raise _Limit(f"nesting deeper than {MAX_DEPTH} levels{how}", mark)
        self._peak = max(self._peak, depth)


class _Checks(BaseConstructor):
    """Duplicate keys refused; errors of the value constructors given a position."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(
                None, None, f"cannot read the value {_shown(node)}: {exc}", node.start_mark
            ) from None

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        self._refuse_duplicates(node)
        return super().construct_mapping(node, deep=deep)

    def _refuse_duplicates(self, node: MappingNode) -> None:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue  # an unhashable key: the mapping constructor names it
            if duplicate:
                raise ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"the key {key!r} is given twice (keys must be unique)",
                    key_node.start_mark,
                )


class _SafeChecks(_Checks, SafeConstructor):
    """The safe constructor's types; integers bounded, floats finite."""

    def construct_yaml_int(self, node: ScalarNode) -> int:
        text = str(node.value).replace("_", "").lstrip("+-")
        if len(text) > MAX_INT_DIGITS:
            raise ConstructorError(
                None,
                None,
                f"an integer of {len(text)} digits: at most {MAX_INT_DIGITS} are allowed",
                node.start_mark,
            )
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: ScalarNode) -> float:
        value: float = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise ConstructorError(
                None,
                None,
                f"the number {_shown(node)} is not finite: .nan and .inf are not allowed "
                "(quote it to mean the text)",
                node.start_mark,
            )
        return value


_SafeChecks.add_constructor("tag:yaml.org,2002:int", _SafeChecks.construct_yaml_int)  # type: ignore[type-var]
_SafeChecks.add_constructor("tag:yaml.org,2002:float", _SafeChecks.construct_yaml_float)  # type: ignore[type-var]


def _parser_base() -> type:
    """libyaml's event parser when PyYAML was built with it, else the pure-Python one."""
    try:
        from yaml._yaml import CParser
    except ImportError:
        from yaml.parser import Parser
        from yaml.reader import Reader
        from yaml.scanner import Scanner

        class _PyParser(Reader, Scanner, Parser):
            def __init__(self, stream: str) -> None:
                Reader.__init__(self, stream)
                Scanner.__init__(self)
                Parser.__init__(self)

        return _PyParser
    return CParser


_Parser: Any = _parser_base()


class _SafeLoader(_LimitedComposer, _Parser, _SafeChecks, Resolver):  # type: ignore[misc]
    """Typed scalars (ints, floats, booleans...), as ``yaml.safe_load``."""

    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        _LimitedComposer.__init__(self)
        _SafeChecks.__init__(self)
        Resolver.__init__(self)


class _TextLoader(_LimitedComposer, _Parser, _Checks, BaseResolver):  # type: ignore[misc]
    """Every scalar as its text, as ``yaml.BaseLoader``."""

    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        _LimitedComposer.__init__(self)
        _Checks.__init__(self)
        BaseResolver.__init__(self)


def load_yaml(text: str, *, scalars_as_text: bool = False) -> Any:
    """Parse one YAML document within the limits; ``YamlRefused`` names what is wrong.

    ``scalars_as_text`` reads every scalar as its text (``yaml.BaseLoader``)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        raise YamlRefused(
            reason=f"the YAML document is {size} bytes: at most {MAX_DOCUMENT_BYTES} are allowed"
        )
    loader = (_TextLoader if scalars_as_text else _SafeLoader)(text)
    try:
        return loader.get_single_data()
    except _Limit as exc:
        raise _refused(f"refused YAML: {exc.problem}", exc.problem_mark) from None
    except ConstructorError as exc:
        raise _refused(f"refused YAML: {exc.problem}", exc.problem_mark) from None
    except yaml.YAMLError as exc:
        mark = exc.problem_mark if isinstance(exc, MarkedYAMLError) else None
        if isinstance(exc, MarkedYAMLError) and exc.problem == _PARSER_DEPTH_LIMIT:
            # PyYAML >= 6.0.4's scanner stops at its own nesting limit (1,000 levels) before
            # the composer counts ours: the same refusal, named as ours is.
            raise _refused(f"refused YAML: nesting deeper than {MAX_DEPTH} levels", mark) from None
        raise _refused(f"malformed YAML: {exc}", mark, located=True) from None
    finally:
        loader.dispose()


def read_yaml_file(path: Path) -> str:
    """A YAML file's text, read no further than the size limit (``OSError`` and
    ``UnicodeDecodeError`` as ``Path.read_text`` raises them)."""
    with path.open("rb") as f:
        data = f.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise YamlRefused(
            reason=f"the YAML document is larger than {MAX_DOCUMENT_BYTES} bytes: "
            "at most that many are allowed"
        )
    return data.decode("utf-8")


def _refused(reason: str, mark: Mark | None, *, located: bool = False) -> YamlRefused:
    if mark is None:
        return YamlRefused(reason=reason)
    line, column = mark.line + 1, mark.column + 1
    if not located:
        reason += f" (line {line}, column {column})"
    return YamlRefused(reason=reason, line=line, column=column)


def _shown(node: Node) -> str:
    text = str(node.value)
    return repr(text if len(text) <= 40 else text[:40] + "...")
