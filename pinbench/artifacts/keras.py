"""A Keras ``.keras`` file's signature read from its ``config.json``: nothing is deserialised,
no layer is built, no code in the file runs.

A ``.keras`` file is a zip holding ``config.json`` (the model's architecture as Keras
serialises it), ``metadata.json`` and the weights. What the config tells:

- a functional model (``class_name`` ``Functional``, or ``Model`` in Keras 2): its
  ``input_layers`` and ``output_layers``, each a ``[layer, node, tensor]`` triple or a nest of
  them (lists in order, dicts by sorted key, as Keras flattens them); an input is an
  ``InputLayer`` whose config has the batch shape and the element type; an output is named
  after the layer that makes it (Keras' ``output_names``);
- a ``Sequential`` model: its first layer is the ``InputLayer`` (Keras writes one for any
  model built before saving), its one output is named after its last layer.

A subclassed model's signature is in its Python code, and a model saved before it was built
has none: both are refused, saying what to save instead. So is a ``Lambda`` layer holding
Python bytecode, which Keras' safe mode (how pinbench loads ``.keras`` files) refuses to load,
and two outputs with one name (which could not be told apart). The TensorFlow predictor names
outputs with this module too, so a manifest written from the config binds at run time.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinbench.artifacts.jsonsafe import JsonRefused, load_json
from pinbench.artifacts.zipmember import MemberTooLarge, read_member

CONFIG = "config.json"
MAX_CONFIG_BYTES = 64 * 1024 * 1024
"""A config is some KB per layer: a few MB for the largest models Keras ships."""
MAX_DEPTH = 256
"""A layer's config nests about six levels, a model inside a model some more."""

FUNCTIONAL = ("Functional", "Model")
SEQUENTIAL = "Sequential"


class KerasConfigError(ValueError):
    """The file is not a ``.keras`` model whose signature its config tells; the message says
    why and what to do (a plain ``ValueError`` of one string: it pickles)."""

    @property
    def reason(self) -> str:
        return str(self)


@dataclass(frozen=True, slots=True)
class KerasInput:
    name: str
    dtype: str | None
    """As Keras names it (``float32``...); None where the config does not say."""
    shape: tuple[int | None, ...] | None
    """With the batch axis; ``None`` for a dynamic dimension, or for no shape at all."""


@dataclass(frozen=True, slots=True)
class KerasSignature:
    kind: str
    """``functional`` or ``sequential``."""
    inputs: list[KerasInput]
    outputs: list[str]
    """The outputs' names, in the order the model returns them."""


def read_keras_config(path: Path) -> Any:
    """The parsed ``config.json`` of the ``.keras`` file at ``path``."""
    try:
        with zipfile.ZipFile(path) as archive:
            if CONFIG not in archive.namelist():
                raise KerasConfigError(f"a zip without {CONFIG}: not a .keras model file")
            data = read_member(archive, CONFIG, limit=MAX_CONFIG_BYTES)
    except MemberTooLarge as exc:
        raise KerasConfigError(str(exc)) from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        if isinstance(exc, KerasConfigError):
            raise
        raise KerasConfigError(f"not a .keras zip file ({exc})") from None
    try:
        return load_json(data, max_depth=MAX_DEPTH)
    except JsonRefused as exc:
        raise KerasConfigError(f"{CONFIG}: {exc.reason}") from None


def read_keras_signature(path: Path) -> KerasSignature:
    """The signature the ``.keras`` file's config tells (see the module's docstring)."""
    return keras_signature(read_keras_config(path))


def keras_signature(config: Any) -> KerasSignature:
    """The signature of a parsed ``config.json``."""
    top = _mapping(config, "the config")
    class_name = top.get("class_name")
    body = _mapping(top.get("config"), "the model's `config`")
    _refuse_lambdas(top)
    if class_name == SEQUENTIAL:
        signature = _sequential(body)
    elif class_name in FUNCTIONAL and "input_layers" in body and "output_layers" in body:
        signature = _functional(body)
    else:
        raise KerasConfigError(
            f"a subclassed Keras model (class {class_name!r}): its inputs and outputs "
            "are in its Python code, which pinbench does not run; save a functional or "
            "Sequential model (keras.Model(inputs, outputs)), or export a SavedModel"
        )
    seen: set[str] = set()
    for name in signature.outputs:
        if name in seen:
            raise KerasConfigError(
                f"two outputs are named {name!r} (one layer makes both): they could not "
                "be told apart; give each output a layer of its own"
            )
        seen.add(name)
    return signature


def _sequential(body: dict[str, Any]) -> KerasSignature:
    layers = _layers(body)
    if not layers or layers[0].get("class_name") != "InputLayer":
        raise KerasConfigError(
            "a Sequential model saved before it was built records no input: start it "
            "with keras.Input(shape) (or call model.build(input_shape)) before saving"
        )
    if len(layers) < 2:
        raise KerasConfigError("a Sequential model with no layer after its input")
    return KerasSignature(
        "sequential", [_input(layers[0], _layer_name(layers[0]))], [_layer_name(layers[-1])]
    )


def _functional(body: dict[str, Any]) -> KerasSignature:
    by_name = {_layer_name(layer): layer for layer in _layers(body)}
    inputs = []
    for name in _flat_layer_names(body["input_layers"], "input_layers"):
        layer = by_name.get(name)
        if layer is None or layer.get("class_name") != "InputLayer":
            raise KerasConfigError(f"input {name!r} is not an InputLayer of the model")
        inputs.append(_input(layer, name))
    outputs = []
    for name in _flat_layer_names(body["output_layers"], "output_layers"):
        if name not in by_name:
            raise KerasConfigError(f"output layer {name!r} is not a layer of the model")
        outputs.append(name)
    return KerasSignature("functional", inputs, outputs)


def _flat_layer_names(nest: Any, where: str) -> list[str]:
    """The layer names of a nest of ``[layer, node, tensor]`` triples, flattened as Keras
    flattens a structure: lists in order, dicts by sorted key; no recursion."""
    out: list[str] = []
    stack: list[Any] = [nest]
    while stack:
        item = stack.pop()
        if _is_triple(item):
            out.append(item[0])
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(item[key] for key in sorted(item, reverse=True))
        else:
            raise KerasConfigError(
                f"`{where}` holds {str(item)[:80]!r}, not a [layer, 0, 0] triple"
            )
    if not out:
        raise KerasConfigError(f"`{where}` names no layer")
    return out


def _is_triple(item: Any) -> bool:
    return (
        isinstance(item, list)
        and len(item) == 3
        and isinstance(item[0], str)
        and all(isinstance(i, int) and not isinstance(i, bool) for i in item[1:])
    )


def _input(layer: dict[str, Any], name: str) -> KerasInput:
    config = _mapping(layer.get("config"), f"InputLayer {name!r}'s config")
    shape = config.get("batch_shape", config.get("batch_input_shape"))
    dims = None
    if shape is not None:
        if not isinstance(shape, list) or not all(
            d is None or (isinstance(d, int) and not isinstance(d, bool) and d >= 0) for d in shape
        ):
            raise KerasConfigError(f"InputLayer {name!r} has batch shape {str(shape)[:80]!r}")
        dims = tuple(shape)
    return KerasInput(name, _dtype(config.get("dtype")), dims)


def _dtype(value: Any) -> str | None:
    """``"float32"``, or a dtype policy ``{"class_name": "DTypePolicy", "config": {"name":
    "float32"}}``."""
    if isinstance(value, dict):
        value = (
            value.get("config", {}).get("name") if isinstance(value.get("config"), dict) else None
        )
    return value if isinstance(value, str) else None


def _layers(body: dict[str, Any]) -> list[dict[str, Any]]:
    layers = body.get("layers")
    if not isinstance(layers, list):
        raise KerasConfigError("the model's config has no list of `layers`")
    return [_mapping(layer, "a layer") for layer in layers]


def _layer_name(layer: dict[str, Any]) -> str:
    name = layer.get("name")
    if name is None and isinstance(layer.get("config"), dict):
        name = layer["config"].get("name")
    if not isinstance(name, str):
        raise KerasConfigError(f"a layer of class {layer.get('class_name')!r} has no name")
    return name


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise KerasConfigError(f"{what} is not a JSON object")
    return value


def _refuse_lambdas(config: dict[str, Any]) -> None:
    for layer in _objects(config):
        if layer.get("class_name") != "Lambda":
            continue
        function = (
            layer.get("config", {}).get("function")
            if isinstance(layer.get("config"), dict)
            else None
        )
        if isinstance(function, dict) and function.get("class_name") == "__lambda__":
            name = layer.get("name") or layer["config"].get("name")
            raise KerasConfigError(
                f"Lambda layer {name!r} holds Python bytecode, which pinbench never "
                "runs (Keras' safe mode, how the run loads the model, refuses it): replace it "
                "with built-in layers or keras.ops in a layer Keras knows"
            )


def layer_objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in a parsed config, without recursion (a Lambda is one of them)."""
    return _objects(value)


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``value``, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
