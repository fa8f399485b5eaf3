"""pinbench's Python API: the registry, lockfiles and runs, the same on a local home or a server.

    import pinbench

    with pinbench.Registry(home="~/bench-home") as reg:   # or url=..., or Registry.from_env()
        reg.init()
        reg.publish(Path("model.yaml"))
        lock = reg.lock(Path("request.yaml"))[0]
        run = lock.run(runner="local")
        print(run.metrics, run.latencies().mean())

The CLI (``pinbench ...``) and the demo are faces of this API. The names are re-exported from
``pinbench`` itself (``pinbench.Registry``); importing them loads nothing heavy.
"""

from pinbench.sdk.registry import LocalOnly, Published, Registry
from pinbench.sdk.runs import Lockfile, Run

__all__ = ["LocalOnly", "Lockfile", "Published", "Registry", "Run"]
