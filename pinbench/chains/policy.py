"""Where a chain runs: on this machine, in any of its runners (local, venv, docker: each hands
its evaluator every stage's files, checked there against the lockfile), untraced. A cluster
system's agent is handed one model's run, and the trace levels time one framework's model: a
chain is refused there, before anything is recorded, rather than run as if it were its last
stage alone."""

from __future__ import annotations

from pinbench.registry.chain_spec import ChainRefused
from pinbench.registry.lockfile import Lockfile


def check_chain_run(lock: Lockfile, *, runner: str, trace: str, on_cluster: bool) -> None:
    chain = lock.body.chain
    if chain is None:
        return
    last = chain.stages[-1].name
    if on_cluster:
        raise ChainRefused(
            stage=last,
            reason="a chain of models runs on this machine (in the local, venv or docker "
            "runner), not on a cluster system (yet): leave --on out",
        )
    if trace != "none":
        raise ChainRefused(
            stage=last,
            reason=f"a chain is not traced (--trace {trace}): each stage's latency is "
            "recorded as stage_<name>_latency_*_ns; leave --trace out",
        )
