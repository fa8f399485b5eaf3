"""The class names an output's ``labels`` give: a file of the model (one name per line,
``worker.labels``), or an entry of the ONNX model's metadata (``labels: {metadata: KEY}``),
read as bytes, never by loading or running the model.

A metadata value is read in one of three forms, told apart by its first character:

- ``{``: a dict literal of class index to name, as ultralytics writes ``names``
  (``{0: 'person', 1: 'bicycle'}``, Python's ``repr``; JSON's ``{"0": "person"}`` too). It is
  parsed as a Python expression and read as data only: a dict whose keys are whole numbers
  (or their decimal digits as strings) and whose values are strings, nothing else. Its keys
  must be exactly ``0..n-1``, each once;
- ``[``: a list literal of strings, class ``i`` the ``i``-th;
- anything else: one name per line, as a names file.

Refused, naming the model file and the key: a key the model does not have, or has more than
once (which entry holds the names is ambiguous); a value past ``MAX_BYTES``; a value that starts
as a literal and is not one of the two above; an index missing, repeated or out of order of
``0..n-1``; an empty name, or two classes of one name (a category could match either); more
classes than an output may score (``bounds.CLASSES``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from pinbench import bounds
from pinbench.errors import UserError
from pinbench.registry.ports import LabelsRef
from pinbench.worker.labels import LabelProblem, parse_class_names, read_label_text

MAX_BYTES = 1 << 20
"""The longest metadata value read as class names: 1 MiB holds 20,000 names of 50 bytes."""
MAX_CLASSES = int(bounds.CLASSES.high)


class ClassNamesProblem(UserError):
    """An output's class names that cannot be read as declared."""

    def __init__(self, *, output: str, source: str, reason: str) -> None:
        super().__init__(f"the class names of output {output!r} ({source}): {reason}")
        self.output = output
        self.source = source
        self.reason = reason


def class_names(labels: LabelsRef, model_files: Mapping[str, Path], *, output: str) -> list[str]:
    """The names ``labels`` give, by class index; ``model_files``: the model's verified files
    by artifact path."""
    if labels.path is not None:
        where = labels.path
        try:
            text = read_label_text(model_files[where], where)
            return list(parse_class_names(text, path=where).names)
        except LabelProblem as exc:
            raise ClassNamesProblem(
                output=output, source=f"file {where}", reason=exc.reason
            ) from None
    assert labels.metadata is not None  # a LabelsRef has one of the two
    source, text = metadata_value(labels.metadata, model_files, output=output)
    names = parse_names(text, output=output, source=source)

    def refuse(reason: str) -> ClassNamesProblem:
        return ClassNamesProblem(output=output, source=source, reason=reason)

    if not names:
        raise refuse("it names no class")
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if not name.strip():
            raise refuse(f"class {i}'s name is empty")
        if name in seen:
            raise refuse(f"classes {seen[name]} and {i} are both {name!r}")
        seen[name] = i
    return names


def metadata_value(key: str, model_files: Mapping[str, Path], *, output: str) -> tuple[str, str]:
    """``(where, value)`` of the ONNX model's one metadata entry ``key``."""
    from pinbench.tasks.onnx_metadata import MetadataProblem, one_value

    try:
        return one_value(key, model_files, max_bytes=MAX_BYTES, holds="names the classes")
    except MetadataProblem as exc:
        raise ClassNamesProblem(output=output, source=exc.source, reason=exc.reason) from None


def parse_names(text: str, *, output: str, source: str) -> list[str]:
    """A metadata value's names in the form its first character says (see the module)."""

    def refuse(reason: str) -> ClassNamesProblem:
        return ClassNamesProblem(output=output, source=source, reason=reason)

    start = text.lstrip()[:1]
    if start not in ("{", "["):
        try:
            return list(parse_class_names(text, path=source).names)
        except LabelProblem as exc:
            raise refuse(exc.reason) from None
    if text.count(",") + 1 > MAX_CLASSES:
        raise refuse(f"more than {MAX_CLASSES} entries: more classes than an output may score")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        form = _FORMS[start]
        raise refuse(f"it starts as a {form} but is not one ({type(exc).__name__})") from None
    if start == "[":
        if not isinstance(tree, ast.List) or not all(_is_str(e) for e in tree.elts):
            raise refuse("it starts as a list but is not a list of strings")
        return [_str(e) for e in tree.elts]
    if not isinstance(tree, ast.Dict):
        raise refuse("it starts as a dict but is not a dict of class index to name")
    names: dict[int, str] = {}
    for k, v in zip(tree.keys, tree.values, strict=True):
        index = _index(k)
        if index is None or not _is_str(v):
            raise refuse("a dict of class names maps whole numbers 0..n-1 to strings")
        if index in names:
            raise refuse(f"class {index} is named twice (which name is its is ambiguous)")
        names[index] = _str(v)
    missing = sorted(set(range(len(names))) - set(names))
    if missing:
        raise refuse(f"classes 0..{len(names) - 1} need a name each; class {missing[0]} has none")
    return [names[i] for i in range(len(names))]


_FORMS = {"{": "dict", "[": "list"}


def _is_str(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _str(node: ast.expr | None) -> str:
    assert isinstance(node, ast.Constant) and isinstance(node.value, str)
    return node.value


def _index(node: ast.expr | None) -> int | None:
    """A dict key that is a class index: a non-negative int, or its decimal digits."""
    if not isinstance(node, ast.Constant):
        return None
    value = node.value
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
        return int(value)
    return None
