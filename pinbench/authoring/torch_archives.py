"""PyTorch models' signatures read from their archives as data: PyTorch is not imported, and
nothing in the archive is unpickled, deserialised into a program, or run.

Loading runs code: ``torch.jit.load`` runs a scripted module's ``__setstate__``, and
``torch.export.load`` evaluates every symbolic shape expression of the archive with
``sympy.sympify`` (Python's ``eval``) and compiles its guards. So:

- **TorchScript** (a zip: ``ROOT/data.pkl``, ``ROOT/code/...``): the root module's class is
  the first global ``data.pkl`` names (read with ``pickletools``, which decodes opcodes and
  executes none); ``forward`` is read from that class's TorchScript source (a subset of
  Python's syntax) with ``ast``: its arguments without a default after ``self`` (names only)
  and the number of values its return annotation says (a ``Tuple[...]``'s elements, else 1),
  what ``torch.jit.load(...).forward.schema`` says.
- **torch.export** (a zip: ``ROOT/models/model.json``, what ``torch.export.load`` loads, or
  the older ``serialized_exported_program.json``): the serialised graph signature's user
  inputs and outputs, each input's element type and sizes from the graph's tensor values (a
  symbolic size is dynamic; its expression is never evaluated).
"""

from __future__ import annotations

import ast
import pickletools
import posixpath
import zipfile
from pathlib import Path
from typing import Any

from pinbench.artifacts.jsonsafe import JsonRefused, load_json
from pinbench.artifacts.shape_exprs import ArchiveRefused, check_archive
from pinbench.artifacts.zipmember import MemberTooLarge, read_member
from pinbench.authoring.errors import NotAModel
from pinbench.authoring.signatures import Signature, Tensor

MAX_MEMBER_BYTES = 512 * 1024 * 1024
"""The largest ``data.pkl``, source file or program JSON read (a program's JSON is some KB per
graph node: a large language model's is tens of MB)."""
MAX_JSON_DEPTH = 512
"""A program's JSON nests some ten levels, a control-flow subgraph some more."""

SCALAR_TYPES = {
    1: "uint8",
    2: "int8",
    3: "int16",
    4: "int32",
    5: "int64",
    6: "float16",
    7: "float32",
    8: "float64",
    9: "complex32",
    10: "complex64",
    11: "complex128",
    12: "bool",
    13: "bfloat16",
    28: "uint16",
    29: "float8_e4m3fn",
    30: "float8_e5m2",
    31: "float8_e4m3fnuz",
    32: "float8_e5m2fnuz",
    33: "float8_e8m0fnu",
    34: "uint32",
    35: "uint64",
}
"""``torch._export.serde.schema.ScalarType`` -> the torch dtype's name (``str(dtype)`` less
``torch.``), as the torch predictor names an input's element type."""

TORCHSCRIPT_NOTE = "PyTorch outputs have no names: they are declared by index, in order"


def _refuse(path: Path, what: str, reason: str) -> NotAModel:
    return NotAModel(path=str(path), reason=f"not a {what} pinbench reads ({reason})")


def _open(path: Path, what: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise _refuse(path, what, f"not a zip archive: {exc}") from None


def _member(path: Path, archive: zipfile.ZipFile, name: str, what: str) -> bytes:
    try:
        return read_member(archive, name, limit=MAX_MEMBER_BYTES)
    except MemberTooLarge as exc:
        raise _refuse(path, what, str(exc)) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise _refuse(path, what, f"{name}: {exc}") from None


def _root_member(names: list[str], tail: str) -> str | None:
    """The one member ``ROOT/<tail>`` (``ROOT`` one folder, any name)."""
    found = [n for n in names if n.count("/") == tail.count("/") + 1 and n.endswith("/" + tail)]
    return found[0] if len(found) == 1 else None


# ---------------------------------------------------------------- TorchScript


def read_torchscript(path: Path) -> Signature:
    """``forward``'s arguments without a default (names only: TorchScript records neither
    element types nor shapes) and the number of values it returns."""
    what = "TorchScript archive"
    with _open(path, what) as archive:
        names = archive.namelist()
        data_pkl = _root_member(names, "data.pkl")
        if data_pkl is None:
            raise _refuse(path, what, "no ROOT/data.pkl")
        root = data_pkl.split("/", 1)[0]
        module, cls = _first_global(path, _member(path, archive, data_pkl, what))
        if module != "__torch__" and not module.startswith("__torch__."):
            raise _refuse(path, what, f"its root object is {module}.{cls}, not a scripted module")
        source = posixpath.join(root, "code", *module.split(".")) + ".py"
        if source not in names:
            raise _refuse(path, what, f"no source {source} for its module {module}.{cls}")
        text = _member(path, archive, source, what)
    forward = _forward(path, text, cls)
    args = forward.args
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)  # defaults are the last ones
    required = [a for i, a in enumerate(positional) if 1 <= i < first_default]  # after self
    required += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    count = _returned(forward.returns)
    return Signature(
        "torchscript",
        [Tensor(name=a.arg) for a in required],
        [Tensor(name=i) for i in range(count)],
        notes=[TORCHSCRIPT_NOTE],
    )


def _first_global(path: Path, pickled: bytes) -> tuple[str, str]:
    """The module and name of the first global a pickle names (its root object's class),
    decoded opcode by opcode: nothing is constructed or called."""
    strings: list[str] = []
    try:
        for opcode, arg, _ in pickletools.genops(pickled):
            if opcode.name in ("GLOBAL", "INST") and isinstance(arg, str):
                module, _, name = arg.partition(" ")
                return module, name
            if opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                return strings[-2], strings[-1]
            if isinstance(arg, str):
                strings.append(arg)
    except (ValueError, EOFError) as exc:  # pickletools' own complaint about the bytes
        raise _refuse(path, "TorchScript archive", f"data.pkl: {exc}") from None
    raise _refuse(path, "TorchScript archive", "data.pkl names no class")


def _forward(path: Path, source: bytes, cls: str) -> ast.FunctionDef:
    what = "TorchScript archive"
    try:
        tree = ast.parse(source.decode("utf-8"))
    except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeDecodeError) as exc:
        raise _refuse(path, what, f"its code of {cls} does not parse: {exc}") from None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return item
            raise _refuse(path, what, f"its module {cls} has no forward method")
    raise _refuse(path, what, f"its code defines no class {cls}")


def _returned(annotation: ast.expr | None) -> int:
    """How many values a return annotation says: a ``Tuple[A, B, ...]``'s elements, else 1
    (TorchScript's ``schema.returns[0]``: a TupleType's elements, else one value)."""
    if not isinstance(annotation, ast.Subscript):
        return 1
    base = annotation.value
    named = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
    if named != "Tuple":
        return 1
    inner = annotation.slice
    if isinstance(inner, ast.Tuple):
        return len(inner.elts)
    return 1


# ---------------------------------------------------------------- torch.export

PROGRAM = "models/model.json"
LEGACY_PROGRAM = "serialized_exported_program.json"


def read_torch_export(path: Path) -> Signature:
    """The graph signature's user inputs (names, element types, sizes; a symbolic size
    dynamic) and user outputs, from the archive's serialised program."""
    what = "torch.export archive"
    try:
        check_archive(path)  # torch.export.load would eval its shape expressions
    except ArchiveRefused as exc:
        raise _refuse(path, what, str(exc)) from None
    with _open(path, what) as archive:
        names = archive.namelist()
        member = _root_member(names, PROGRAM)
        if member is None and LEGACY_PROGRAM in names:
            member = LEGACY_PROGRAM
        if member is None:
            raise _refuse(path, what, f"no ROOT/{PROGRAM} (the program torch.export.load loads)")
        raw = _member(path, archive, member, what)
    try:
        program = load_json(raw, max_depth=MAX_JSON_DEPTH)
    except JsonRefused as exc:
        raise _refuse(path, what, f"{member}: {exc.reason}") from None
    try:
        graph_module = program["graph_module"]
        graph, signature = graph_module["graph"], graph_module["signature"]
        values = graph["tensor_values"]
        inputs = [
            _export_input(spec["user_input"]["arg"], values)
            for spec in signature["input_specs"]
            if "user_input" in spec
        ]
        user = [
            spec["user_output"]["arg"]
            for spec in signature["output_specs"]
            if "user_output" in spec
        ]
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        reason = f"{member} is not a serialised program ({type(exc).__name__}: {exc})"
        raise _refuse(path, what, reason[:300]) from None
    outputs = [Tensor(name=_argument_name(arg, i)) for i, arg in enumerate(user)]
    return Signature("torch-export", inputs, outputs)


def _export_input(arg: dict[str, Any], values: dict[str, Any]) -> Tensor:
    """A user input: a tensor's name, element type and sizes; any other value's name."""
    if "as_tensor" not in arg:
        name = _argument_name(arg, None)
        if not isinstance(name, str):
            raise ValueError(f"a user input {sorted(arg)} with no name")
        return Tensor(name=name)
    name = arg["as_tensor"]["name"]
    meta = values[name]
    element = SCALAR_TYPES.get(meta["dtype"])
    if element is None:
        raise ValueError(f"input {name!r} has scalar type {meta['dtype']!r}, unknown")
    shape = tuple(_size(s) for s in meta["sizes"])
    return Tensor(name=str(name), element_type=element, shape=shape)


def _size(size: dict[str, Any]) -> int | None:
    """A ``SymInt``: ``as_int`` a static size; ``as_expr`` symbolic (its expression text is
    not evaluated), so dynamic."""
    if "as_int" in size:
        value = size["as_int"]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"size {value!r}")
        return value
    if "as_expr" in size:
        return None
    raise ValueError(f"size {sorted(size)}")


def _argument_name(arg: dict[str, Any], index: int | None) -> str | int:
    """A serialised argument's name (``as_tensor``, ``as_sym_int``...), else its index."""
    for value in arg.values():
        if isinstance(value, dict):
            name = value.get("name", value.get("as_name"))
            if isinstance(name, str):
                return name
    if index is None:
        raise ValueError(f"an argument {sorted(arg)} with no name")
    return index
