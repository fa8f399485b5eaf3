"""pinbench: a reproducible artifact registry and evaluation store for deep-learning benchmarks.

The Python API is ``pinbench.Registry``, ``pinbench.Lockfile`` and ``pinbench.Run``
(``pinbench.sdk``), imported when first used so that ``import pinbench`` stays cheap.
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["LocalOnly", "Lockfile", "Published", "Registry", "Run"]

if TYPE_CHECKING:
    from pinbench.sdk import LocalOnly, Lockfile, Published, Registry, Run


def __getattr__(name: str) -> Any:
    if name in __all__:
        from importlib import import_module

        return getattr(import_module("pinbench.sdk"), name)
    raise AttributeError(f"module 'pinbench' has no attribute {name!r}")
