"""The plain data a PyTorch checkpoint holds beside its tensors, read without its classes
(issue 73, item 3).

A Lightning checkpoint (``.ckpt``) is a dict: ``state_dict`` beside the epoch, the loops'
counters and the hyper-parameters, which are often omegaconf objects (``DictConfig``,
``ListConfig`` and their nodes), an ``argparse.Namespace`` or Lightning's ``AttributeDict``.
``torch.load(weights_only=True)`` refuses those globals; unpickling them with their own classes
would run omegaconf's (or any named class's) code. pinbench needs only the tensors, so each
global named here reads as an inert stand-in: a mapping as an empty plain ``dict`` (its items
then set on it as on any dict), anything else as ``Inert``, which takes any arguments and any
state and keeps none. Nothing of the named classes is imported or called, and any global not
named here is still refused by PyTorch's own restricted unpickler (a function, a class of the
model's code: a pickle that would run code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MAPPINGS = frozenset(
    {
        "builtins.dict",
        "collections.defaultdict",
        "lightning.fabric.utilities.data.AttributeDict",
        "lightning_fabric.utilities.data.AttributeDict",
        "pytorch_lightning.utilities.parsing.AttributeDict",
    }
)
"""Mappings, read as a plain ``dict`` (a ``defaultdict``'s factory is not kept)."""

VALUES = frozenset(
    {
        "typing.Any",
        "builtins.list",
        "builtins.tuple",
        "builtins.int",
        "builtins.float",
        "builtins.str",
        "builtins.bool",
        "builtins.bytes",
        "builtins.frozenset",
        "builtins.object",
        "argparse.Namespace",
        "pathlib.Path",
        "pathlib.PosixPath",
        "pathlib.WindowsPath",
        "pathlib.PurePosixPath",
        "pathlib.PureWindowsPath",
    }
)
"""Plain values and the types named as values (omegaconf's metadata names ``dict``, ``Any``)."""

PREFIXES = ("omegaconf.",)
"""Modules whose every class is configuration data (omegaconf's containers, nodes, metadata)."""


def plain_data(name: str) -> bool:
    """Whether global ``name`` (``module.qualname``) reads as an inert stand-in."""
    return name in MAPPINGS or name in VALUES or name.startswith(PREFIXES)


class Inert:
    """A plain-data object read without its class: takes any arguments and state, and keeps
    them as data (``args``, ``state``) for ``hyperparameters`` to read; nothing of the class is
    imported or called. Each global reads as a subclass naming it (``global_name``)."""

    __slots__ = ("args", "state")
    args: tuple[Any, ...]
    state: Any
    global_name = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> Inert:
        made = super().__new__(cls)
        made.args, made.state = args, None
        return made

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __repr__(self) -> str:
        return f"<{self.global_name}, read as data>"


class PlainDict:
    """A mapping read without its class: an empty plain ``dict`` its items are set on."""

    def __new__(cls, *args: Any, **kwargs: Any) -> dict[Any, Any]:  # type: ignore[misc]
        return {}


def stand_ins(names: list[str]) -> list[Callable[..., Any] | tuple[Callable[..., Any], str]]:
    """The stand-ins for ``names`` (all ``plain_data``), as ``torch.serialization.safe_globals``
    takes them: each object with the global's name."""
    return [(PlainDict if n in MAPPINGS else _inert(n), n) for n in names]


def _inert(name: str) -> type[Inert]:
    return type("Inert", (Inert,), {"__slots__": (), "global_name": name})
