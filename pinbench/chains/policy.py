"""Where a chain runs: in the local runner, untraced, on this machine (for now). The venv,
docker and cluster runners carry one model's files to their evaluator, and the trace levels
time one framework's model: a chain is refused there, before anything is recorded, rather
than run as if it were its last stage alone."""

from __future__ import annotations

from pinbench.chains.spec import ChainRefused
from pinbench.registry.lockfile import Lockfile


def check_chain_run(lock: Lockfile, *, runner: str, trace: str, on_cluster: bool) -> None:
    chain = lock.body.chain
    if chain is None:
        return
    last = chain.stages[-1].name
    if on_cluster or runner != "local":
        where = "a cluster system" if on_cluster else f"the {runner} runner"
        raise ChainRefused(
            stage=last,
            reason=f"a chain of models runs in the local runner on this machine, not on "
            f"{where} (yet): run it with --runner local",
        )
    if trace != "none":
        raise ChainRefused(
            stage=last,
            reason=f"a chain is not traced (--trace {trace}): each stage's latency is "
            "recorded as stage_<name>_latency_*_ns; leave --trace out",
        )
