"""Names a module re-exports, each imported when first asked for (a module ``__getattr__``),
so that importing the module stays cheap."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(module: str, home: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``module``: ``home`` maps each name to the module that
    holds it and its name there."""

    def __getattr__(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        from importlib import import_module

        where, attr = home[name]
        return getattr(import_module(where), attr)

    return __getattr__
