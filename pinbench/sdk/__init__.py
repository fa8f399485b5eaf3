"""pinbench's Python API: the registry, lockfiles and runs, the same on a local home or a server.

    import pinbench

    with pinbench.Registry(home="~/bench-home") as reg:   # or url=..., or Registry.from_env()
        reg.init()
        reg.publish(Path("model.yaml"))
        lock = reg.lock(Path("request.yaml"))[0]
        run = lock.run(runner="local")
        print(run.metrics, run.latencies().mean())

The CLI (``pinbench ...``) and the demo are faces of this API. The names are re-exported from
``pinbench`` itself (``pinbench.Registry``); each is imported when first used.
"""

from typing import TYPE_CHECKING

from pinbench.sdk.lazy import lazy_names

__all__ = ["LocalOnly", "Lockfile", "Published", "Registry", "Run"]

if TYPE_CHECKING:
    from pinbench.sdk.records import LocalOnly, Published
    from pinbench.sdk.registry import Registry
    from pinbench.sdk.runs import Lockfile, Run

_HOME = {
    "LocalOnly": "records",
    "Published": "records",
    "Registry": "registry",
    "Lockfile": "runs",
    "Run": "runs",
}

__getattr__ = lazy_names(
    __name__, {name: (f"pinbench.sdk.{module}", name) for name, module in _HOME.items()}
)
