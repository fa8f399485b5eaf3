"""A checkpoint's hyper-parameters as plain data, handed to a ``torch-state-dict`` model's
builder (``Builder.hyperparameters_key``; issue 86, item 4).

What ``torch.load(weights_only=True)`` gave with the stand-ins of ``pickle_data``: plain
containers (Lightning's ``AttributeDict`` already a ``dict``), numbers, strings and tensors as
they are; omegaconf's containers and value nodes as ``OmegaConf.to_container(cfg,
resolve=False)`` gives them (a ``DictConfig`` a dict of its content, a ``ListConfig`` a list,
a node its value; an interpolation or ``???`` as its text), read from their pickled state
without omegaconf; an ``argparse.Namespace`` as the dict of its attributes. Anything else
(another global read as inert data, a set, a class a pickle would need) is refused naming it
and where it is: a builder is handed data, never an object of a class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinbench.artifacts.pickle_data import Inert
from pinbench.errors import Picklable

MAX_DEPTH = 64
"""The deepest nesting read."""
MAX_ITEMS = 200_000
"""The most values read in all."""
SCALARS = (bool, int, float, str, bytes, type(None))
KEY_CHARS = 60
"""The most of a key's text a place in the hyper-parameters shows (a long key, repeated at
every depth, would make the places themselves large)."""

_CONTAINERS = {"omegaconf.dictconfig.DictConfig", "omegaconf.listconfig.ListConfig"}
_NODES = "omegaconf.nodes."
_NAMESPACE = "argparse.Namespace"


class NotPlain(Picklable, Exception):
    """A value of the hyper-parameters that is not plain data: where it is and what it is."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where} is {what}")
        self.where = where
        self.what = what


def plain(value: Any, is_tensor: Callable[[Any], bool], where: str = "") -> Any:
    """``value`` as plain data (``NotPlain`` naming the first value that is not);
    ``is_tensor``: whether a value is a tensor (kept as it is)."""
    return _Reader(is_tensor).read(value, where, 0)


class _Reader:
    def __init__(self, is_tensor: Callable[[Any], bool]) -> None:
        self.is_tensor = is_tensor
        self.items = 0

    def read(self, value: Any, where: str, depth: int) -> Any:
        self.items += 1
        if self.items > MAX_ITEMS:
            raise NotPlain(where or "the hyper-parameters", f"past {MAX_ITEMS} values")
        if depth > MAX_DEPTH:
            raise NotPlain(where, f"nested deeper than {MAX_DEPTH}")
        if isinstance(value, SCALARS):
            return value
        if self.is_tensor(value):  # without what unpickling set on it beside its data
            return value.detach()
        if isinstance(value, dict):
            return self._mapping(value, where, depth)
        if isinstance(value, list | tuple):
            read = [self.read(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
            return read if isinstance(value, list) else tuple(read)
        if isinstance(value, Inert):
            return self._inert(value, where, depth)
        raise NotPlain(where, f"a {type(value).__module__}.{type(value).__qualname__}")

    def _mapping(self, value: dict[Any, Any], where: str, depth: int) -> dict[Any, Any]:
        out = {}
        for key, item in value.items():
            if not isinstance(key, SCALARS):
                raise NotPlain(where, f"a mapping with a key of type {type(key).__name__}")
            out[key] = self.read(item, f"{where}[{_shown(key)}]", depth + 1)
        return out

    def _inert(self, value: Inert, where: str, depth: int) -> Any:
        name, state = value.global_name, value.state
        if name in _CONTAINERS and isinstance(state, dict) and "_content" in state:
            content = state["_content"]
            if content is None or isinstance(content, str):  # None, "???", "${...}"
                return content
            if name.endswith("DictConfig") and isinstance(content, dict):
                return self._mapping(content, where, depth)
            if name.endswith("ListConfig") and isinstance(content, list):
                return [self.read(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(content)]
        if name.startswith(_NODES) and isinstance(state, dict) and "_val" in state:
            return self.read(state["_val"], where, depth + 1)
        if name == _NAMESPACE and isinstance(state, dict):
            return self._mapping(state, where, depth)
        raise NotPlain(where, f"a {name} (read as inert data, not as plain data)")


def _shown(key: object) -> str:
    """A key as a place names it: at most ``KEY_CHARS`` of its ``repr``."""
    text = repr(key)
    return text if len(text) <= KEY_CHARS else f"{text[:KEY_CHARS]}..."
