"""``pinbench manifest model weights.pt builder.py``: a ``torch-state-dict`` model's manifest
(issue 73, item 6), as for every other format: the files hashed, ``format: torch-state-dict``,
the ``builder`` named, its ``state_dict_key`` where the weights are a checkpoint.

The weights are read as the run reads them (``torch.load(weights_only=True)``, PyTorch's
restricted unpickler: no code runs; a compressed archive refused first; a Lightning
checkpoint's hyper-parameters as inert stand-ins) only to find the key that holds the tensors;
the builder is parsed (``ast``), never run: its function is ``build`` (or its only top-level
function), and the inputs are the arguments of ``forward`` of the class it returns, where the
file or one of its local modules defines it. The local modules it imports or names by path
(``builder_modules``) are listed beside it, each with its sha256; ``.py`` files given with the
builder must be among them. Element types, shapes, steps and outputs are not in the files:
they are left for the author, and said."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.authoring.builder_modules import MAX_SOURCE_BYTES, local_modules
from pinbench.authoring.errors import NotAModel
from pinbench.authoring.listing import Relative

if TYPE_CHECKING:
    from pinbench.authoring.authored import Authored

PREFERRED_KEYS = ("state_dict", "model_state_dict", "model_state", "model", "net", "weights")
"""Checkpoint keys read as the weights' where more than one holds tensors (the field's names)."""


def state_dict_pair(paths: Sequence[Path]) -> tuple[Path, Path] | None:
    """The state dict (by its bytes: ``artifacts.model_formats``) and the builder's ``.py`` file
    among ``paths``; None where no file is a state dict."""
    from pinbench.artifacts.model_formats import identify

    states = []
    for p in paths:
        if p.is_file() and p.suffix.lower() != ".py":
            found = identify(p)
            if found is not None and found.format == "torch-state-dict":
                states.append(p)
    if not states:
        return None
    code = [p for p in paths if p.is_file() and p.suffix == ".py"]
    builders = _builders(code)
    if len(states) != 1 or len(builders) != 1:
        found = identify(states[0])
        what = found.what if found is not None else "a PyTorch state dict"
        raise NotAModel(
            path=str(states[0]),
            reason=f"{what}: declare format: torch-state-dict with the `builder` that makes its "
            "module (docs/processing.md: a model's own builder); its manifest is written from "
            "the weights file and the builder's .py file (the local modules it imports are "
            "found and listed with it): give one of each (found "
            f"{len(states)} state dicts, {len(code)} .py files"
            + (", none of which imports all the others" if len(code) > 1 else "")
            + ")",
        )
    return states[0], builders[0]


def _builders(code: Sequence[Path]) -> list[Path]:
    """The ``.py`` files given that could be the builder: with one file, it; with several, those
    whose local modules (``builder_modules``) are all the others."""
    if len(code) <= 1:
        return list(code)
    out = []
    for candidate in code:
        needed = {m.resolve() for m in local_modules(candidate)[0]}
        if all(p.resolve() in needed for p in code if p != candidate):
            out.append(candidate)
    return out


def checkpoint_key(path: Path) -> str | None:
    """None where the file is a state dict itself; else the key of the checkpoint dict that
    holds one (the only one, or the first of ``PREFERRED_KEYS``)."""
    import torch

    from pinbench.worker.predictors.base import ModelLoadError
    from pinbench.worker.predictors.torch.state_dicts import read_checkpoint

    try:
        loaded = read_checkpoint(path.name, path)
    except ModelLoadError as exc:
        raise NotAModel(path=str(path), reason=exc.reason) from None
    if not isinstance(loaded, Mapping):
        raise NotAModel(path=str(path), reason=f"it holds a {type(loaded).__name__}, not a dict")
    if loaded and all(isinstance(k, str) and torch.is_tensor(v) for k, v in loaded.items()):
        return None
    held = [k for k, v in loaded.items() if isinstance(k, str) and _tensors(v)]
    if len(held) == 1:
        return held[0]
    preferred = [k for k in PREFERRED_KEYS if k in held]
    if preferred:
        return preferred[0]
    raise NotAModel(
        path=str(path),
        reason="a checkpoint whose weights pinbench cannot tell: "
        + (
            f"{len(held)} keys hold tensors ({', '.join(map(repr, held[:8]))})"
            if held
            else "no key holds a dict of tensors"
        )
        + "; write `builder.state_dict_key` by hand",
    )


def _modules_note(base: Path, code: Path, modules: list[Path], imported: list[Path]) -> list[str]:
    """What the author is told of the builder's local modules, listed among the files."""
    if not modules:
        return []
    relative = Relative(base)
    note = (
        f"{code.name}'s local modules are listed among the files, each pinned by its sha256: "
        + ", ".join(relative(m) for m in modules)
    )
    if imported:
        note += (
            "; a run gives the builder each file by its path (files['models.py']), not on "
            "Python's import path: execute a module's bytes from there as docs/processing.md's "
            "builder does"
        )
    return [note]


def _tensors(value: Any) -> bool:
    import torch

    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, str) and torch.is_tensor(v) for k, v in value.items())
    )


def builder_of(code: Path, modules: Sequence[Path] = ()) -> tuple[str, list[str]]:
    """The builder's function (``build``, or the file's only top-level function) and the
    arguments ``forward`` takes (without defaults) of the class it returns, where the file or
    one of its local ``modules`` defines it (else none)."""
    tree = _parsed(code)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if "build" in functions:
        name = "build"
    elif len(functions) == 1:
        (name,) = functions
    else:
        raise NotAModel(
            path=str(code),
            reason="the builder is the function that makes the module: name it `build` (the "
            f"file's top-level functions: {', '.join(functions) or 'none'})",
        )
    classes = _classes([_parsed(m, strict=False) for m in reversed(modules)] + [tree])
    made = [
        r.value.func.id
        for r in ast.walk(functions[name])
        if isinstance(r, ast.Return)
        and isinstance(r.value, ast.Call)
        and isinstance(r.value.func, ast.Name)
    ]
    cls = classes.get(made[0]) if len(set(made)) == 1 else None
    forward = (
        next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
        if cls is not None
        else None
    )
    if forward is None:
        return name, []
    args = forward.args.posonlyargs + forward.args.args
    required = args[: len(args) - len(forward.args.defaults)]
    return name, [a.arg for a in required[1:]]  # without self


def _parsed(code: Path, *, strict: bool = True) -> ast.Module:
    """``code``'s syntax tree; not Python source is refused (``strict``) or read as empty."""
    try:
        if code.stat().st_size > MAX_SOURCE_BYTES:
            raise ValueError(f"over {MAX_SOURCE_BYTES >> 20} MiB")
        return ast.parse(code.read_text(encoding="utf-8"), filename=code.name)
    except (SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError) as exc:
        if not strict:
            return ast.Module(body=[], type_ignores=[])
        why = str(exc) or type(exc).__name__  # a parser out of depth says nothing more
        raise NotAModel(path=str(code), reason=f"not Python source: {why}") from None


def _classes(trees: Sequence[ast.Module]) -> dict[str, ast.ClassDef]:
    """The top-level classes of ``trees`` by name, a later tree's over an earlier one's."""
    return {n.name: n for t in trees for n in t.body if isinstance(n, ast.ClassDef)}


def state_dict_authored(
    pair: tuple[Path, Path],
    paths: Sequence[Path],
    base: Path,
    name: str | None,
    version: str,
    framework_range: str | None,
) -> Authored:
    """The manifest of the state dict and builder ``pair`` (``state_dict_pair``) with the other
    files of ``paths``, their paths relative to ``base``."""
    from pinbench.authoring.authored import Authored, default_name
    from pinbench.authoring.listing import file_entries
    from pinbench.catalog.files import SUPPORTED
    from pinbench.registry.manifest import parse_manifest

    weights, code = pair
    modules, imported = local_modules(code)
    others = [p for p in paths if p not in pair]
    files = file_entries(base, [weights, code, *modules, *others])
    key = checkpoint_key(weights)
    function, forward = builder_of(code, modules)
    builder: dict[str, Any] = {"file": files[1]["path"], "function": function}
    if key is not None:
        builder["state_dict_key"] = key
    notes = [
        f"inputs {forward} are forward's arguments: their element type (float32 written), "
        "shape and steps are in neither file: check them"
        if forward
        else f"{code.name}: no forward of the class {function} returns was found in the file: "
        "declare the inputs forward takes",
        "declare the outputs forward returns, in order (a name each; `type` for accuracy)",
        *_modules_note(base, code, modules, imported),
    ]
    data: dict[str, Any] = {
        "kind": "model",
        "name": name if name is not None else default_name(weights),
        "version": version,
        "format": "torch-state-dict",
        "framework": {"name": "torch", "range": framework_range or SUPPORTED["torch"]},
        "files": files,
        "builder": builder,
        "inputs": [{"name": n, "element_type": "float32"} for n in forward],
        "outputs": [],
    }
    parse_manifest(data, source=f"the manifest written from {weights}")
    return Authored(data, notes)
