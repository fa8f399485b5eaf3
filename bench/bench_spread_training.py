"""Deep500's L3 across agents (issue 85, item 5): the same distributed training with its two
ranks on one agent and spread over two, in the same run: the step time, and the share of it
the ranks spend inside the scheme's collectives (the network's share of a step, with the
waits it brings: ``training.distributed.schemes``).

Everything runs on this machine, in a real Ray cluster of ``tests/cluster.py``: a head and the
server on a bridge, agents ``lab-a`` and ``lab-b`` each a machine of its own (a network
namespace with its own ``eth0`` and address, its home and cache). Ranks on one agent talk over
127.0.0.1 inside that agent's sandbox; spread, they talk across the veth pairs and the bridge
(the kernel's, not a physical NIC: a real network's share is larger). Both agents share this
machine's cores, one rank each.

The training: the digits CNN, allreduce, two workers, ``--epochs`` epochs (4) of 32 samples
per worker per step, no target (every run does the same steps), deterministic. Per run:
(1) both ranks on ``lab-a``; (2) rank 0 on ``lab-a``, rank 1 on ``lab-b``; (3) DDP spread the
same way (its share is not measured: its all-reduces overlap its backward pass), which of (1)
and (2) goes first alternating. Step time: the run's recorded ``step_time_s`` (each epoch
timed by its slowest rank, over the steps). Ratio = spread / one agent, within each run.

    .venv/bin/python -m bench.bench_spread_training --runs 3 [--epochs 4]

Needs root, ``unshare``/``nsenter`` (util-linux) and ``ip`` (iproute2), as the cluster tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from bench._common import Report, check_runs, command_line, log, machine, parser, scratch
from pinbench.config import Settings
from pinbench.evaluator.records.run_view import show_run
from pinbench.workspace import Workspace
from tests.apiserver import seed_home
from tests.cluster import ADDRESS, BIN, Cluster, ray_cluster, served
from tests.pg import free_port
from tests.test_distributed_cluster import REQUEST

MODES = {
    "one agent": ({"scheme": "allreduce", "workers": 2}, ["lab-a"]),
    "two agents": ({"scheme": "allreduce", "workers": 2, "systems": 2}, ["lab-a", "lab-b"]),
    "two agents, ddp": ({"scheme": "ddp", "workers": 2, "systems": 2}, ["lab-a", "lab-b"]),
}


def _lock(cluster: Cluster, root: Path, name: str, epochs: int, distributed: Any) -> Path:
    training = {k: v for k, v in REQUEST["training"].items() if k != "target_top1"}
    request = {**REQUEST, "training": {**training, "epochs": epochs}, "distributed": distributed}
    source, path = root / f"{name}.yaml", root / f"{name}.lock"
    source.write_text(yaml.safe_dump(request))
    done = cluster.pinbench("lock", str(source), "-o", str(path))
    if done.returncode != 0:
        raise RuntimeError(f"lock {name}: {done.stderr}")
    return path


def _run(cluster: Cluster, url: str, token: str, lock: Path, systems: list[str]) -> str:
    env = dict(cluster.env, PINBENCH_URL=url, PINBENCH_TOKEN=token)
    command = [str(BIN / "pinbench"), "run", str(lock), "--runner", "local", "--json"]
    for system in systems:
        command += ["--on", system]
    done = cluster.ns.run(command, env, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"run on {systems}: {done.stderr[-2000:]}")
    (info,) = json.loads(done.stdout)
    return str(info["id"])


def main(argv: list[str] | None = None) -> int:
    from pinbench import catalog

    p = parser(__doc__ or "")
    p.add_argument("--epochs", type=int, default=4)
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="distributed training: two ranks on one agent vs spread over two",
        command=command_line("bench.bench_spread_training", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "pinbench-bench-spread") as root:
        log("building the digits CNN catalog")
        folder = root / "catalog"
        catalog.build(folder, ["digits", "cnn"])
        home, url = root / "home", f"sqlite:///{root / 'pinbench.db'}"
        tokens, _ = seed_home(home, url, folder)
        caches = {"lab-a": root / "cache-a", "lab-b": root / "cache-b"}
        with (
            ray_cluster(home, url, caches) as cluster,
            served(
                cluster,
                free_port(),
                "--cluster",
                ADDRESS,
                "--allow-spread",
                agent_token=tokens["reader"],
            ) as at,
        ):
            locks = {
                mode: _lock(cluster, root, f"m{i}", args.epochs, distributed)
                for i, (mode, (distributed, _)) in enumerate(MODES.items())
            }
            log("untimed: one training of each mode (blobs fetched, fork servers started)")
            for mode, (_, systems) in MODES.items():
                _run(cluster, at, tokens["owner"], locks[mode], systems)
            ws = Workspace(Settings(home=home, database_url=url))
            try:
                for run in range(runs):
                    one, two, ddp = MODES
                    order = [one, two, ddp] if run % 2 == 0 else [two, one, ddp]
                    seen: dict[str, dict[str, Any]] = {}
                    for mode in order:
                        log(f"run {run + 1}/{runs}: {mode}")
                        run_id = _run(cluster, at, tokens["owner"], locks[mode], MODES[mode][1])
                        seen[mode] = show_run(ws, run_id, nested=True)
                    _measure(report, seen)
            finally:
                ws.close()
    report.notes += [
        f"digits CNN, allreduce, 2 workers, {args.epochs} epochs of 32 samples per worker per "
        "step, Adam 0.01, deterministic, no target; the runner local, in each agent's sandbox",
        "both agents are network namespaces of this machine: the spread ranks cross veth pairs "
        "and a bridge, not a physical network",
    ]
    report.emit(args.json)
    return 0


def _measure(report: Report, seen: dict[str, dict[str, Any]]) -> None:
    step: dict[str, float] = {}
    for mode, shown in seen.items():
        if shown["status"] != "succeeded":
            raise RuntimeError(f"{mode}: {shown['status']}: {shown.get('error')}")
        record = shown["details"]["distributed"]
        step[mode] = float(record["step_time_s"])
        report.metric(f"[{mode}] step time", "ms").values.append(step[mode] * 1e3)
        if record["collective_share"] is not None:
            report.metric(f"[{mode}] share of a step in collectives", "%").values.append(
                record["collective_share"] * 100
            )
    report.metric("ratio two agents / one agent step time", "x").values.append(
        step["two agents"] / step["one agent"]
    )
    weights = {m: s["details"]["training"]["weights_sha256"] for m, s in seen.items()}
    report.metric("same final weights in the three modes", "bool").values.append(
        float(len(set(weights.values())) == 1)
    )


if __name__ == "__main__":
    raise SystemExit(main())
