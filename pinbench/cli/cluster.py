"""``pinbench agent`` and ``pinbench systems``: machines joining a Ray cluster as systems.

Ray is imported only by the commands that talk to a cluster (``pinbench.cluster.ray_agent``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from pinbench.cli.common import local_registry
from pinbench.console import columns, json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

agent_app = click.Group(
    "agent",
    help="Join a Ray cluster as an evaluation agent.",
    no_args_is_help=True,
)
systems_app = click.Group(
    "systems",
    help="The systems (agents) of the cluster and their hardware.",
    no_args_is_help=True,
)


@agent_app.command("start")
@click.option(
    "--cluster",
    "cluster",
    type=str,
    help="The Ray cluster's address HOST:PORT (or PINBENCH_CLUSTER).",
)
@click.option("--name", "name", type=str, help="The system's name (default: this host's name).")
@click.option(
    "--cache",
    "cache",
    type=click.Path(path_type=Path),
    help="The agent's own blob cache (default: PINBENCH_HOME/agent).",
)
@click.option(
    "--node-ip", "node_ip", type=str, help="The address this node is reached at (ray's default)."
)
@click.option(
    "--warm",
    "warm",
    is_flag=True,
    default=False,
    help=(
        "Keep one evaluator process per environment between runs "
        "(each run records whether it was warm; pickled models always "
        "run cold)."
    ),
)
@click.option(
    "--price-per-hour",
    "price_per_hour",
    type=float,
    help=(
        "What this machine costs, in US dollars per hour: each run "
        "records it and reports show $ per 1,000 inferences from the "
        "run's throughput."
    ),
)
def agent_start(
    cluster: str | None = None,
    name: str | None = None,
    cache: Path | None = None,
    node_ip: str | None = None,
    warm: bool = False,
    price_per_hour: float | None = None,
) -> None:
    """Join the cluster as a Ray node and register this machine as a system.

    It stays in the foreground until stopped (Ctrl-C), which takes the system out of the
    cluster."""
    from pinbench.cluster.facts import default_name
    from pinbench.cluster.ray_agent import start_agent
    from pinbench.config import Settings
    from pinbench.energy.price import parse_price

    if price_per_hour is not None:  # refused before the machine joins
        parse_price(price_per_hour, "--price-per-hour")
    address = _address(cluster, required=True)
    assert address is not None
    folder = cache if cache is not None else Settings.from_env().home / "agent"
    code = start_agent(
        address,
        name or default_name(),
        folder,
        node_ip=node_ip,
        warm=warm,
        price_per_hour=price_per_hour,
        say=_out().print,
    )
    raise click.exceptions.Exit(code)


_cluster_option = click.option(
    "--cluster",
    "cluster",
    type=str,
    help=(
        "The Ray cluster's address HOST:PORT (default: "
        "PINBENCH_CLUSTER; without either, the systems recorded in "
        "the database, alive unknown)."
    ),
)


@systems_app.command("list")
@_cluster_option
@json_option
def systems_list(
    cluster: str | None = None,
    as_json: bool = False,
) -> None:
    """Every system: its hardware, whether it is alive (asked of the cluster) and its runs."""
    with local_registry() as reg:
        rows = reg.systems(_address(cluster))
    if as_json:
        _print_json(rows)
        return
    if not rows:
        _out().print("no systems yet: start an agent with `pinbench agent start --cluster ADDR`")
        return
    table = [
        (
            r["name"],
            _alive(r["alive"]),
            str(r["facts"].get("arch", "?")),
            str(r["facts"].get("cpu", "?")),
            str(r["facts"].get("cores", "?")),
            _gpus(r["facts"]),
            str(r["runs"]),
        )
        for r in rows
    ]
    sys.stdout.write(columns(("NAME", "ALIVE", "ARCH", "CPU", "CORES", "GPUS", "RUNS"), table))


@systems_app.command("show")
@click.argument("name", type=str, help="The system's name")
@_cluster_option
@json_option
def systems_show(
    name: str,
    cluster: str | None = None,
    as_json: bool = False,
) -> None:
    """One system's facts as its agent reported them."""
    with local_registry() as reg:
        row = reg.system(name, _address(cluster))
    if as_json:
        _print_json(row)
        return
    facts = dict(row["facts"])
    flags = facts.pop("cpu_flags", [])
    lines = [
        f"system {row['name']} ({_alive(row['alive'])}), Ray node {row['node_id'] or '?'}",
        f"registered {row['registered_at']}, last seen {row['seen_at']}",
        f"runs: {row['runs']}",
        *(f"{key}: {value}" for key, value in facts.items()),
        f"cpu_flags: {' '.join(flags)}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


def _address(cluster: str | None, *, required: bool = False) -> str | None:
    address = cluster or os.environ.get("PINBENCH_CLUSTER") or None
    if address is None and required:
        from pinbench.errors import UserError

        raise UserError("which cluster? give --cluster HOST:PORT or set PINBENCH_CLUSTER")
    return address


def _alive(alive: bool | None) -> str:
    return {True: "alive", False: "gone", None: "unknown"}[alive]


def _gpus(facts: dict[str, Any]) -> str:
    gpus = facts.get("gpus") or []
    return ", ".join(str(g.get("name", "?")) for g in gpus) if gpus else "-"
