"""``pinbench runs delete`` and ``pinbench runs prune`` (decision 149): a dry run listing the
runs that would go until ``--yes``; both call ``Registry.admin()``, which refuses a server URL
(``LocalOnly``): an operator deletes where the server's database is."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from pinbench.cli.common import registry
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

if TYPE_CHECKING:
    from pinbench.evaluator.records.retention import Deleted

yes_option = click.option(
    "--yes", "yes", is_flag=True, default=False, help="Delete them (without it: a dry run)."
)


@click.command("delete")
@click.argument("runs", nargs=-1, required=True, type=str)
@yes_option
@json_option
def runs_delete(runs: tuple[str, ...], yes: bool = False, as_json: bool = False) -> None:
    """Delete recorded runs (ids or unique prefixes): their rows, results and attestations.

    A dry run listing them until --yes; all or none: an unknown or a queued or running run
    refuses them all (exit 1). Their blobs are left for `pinbench gc --blobs`. On this
    machine's PINBENCH_HOME / PINBENCH_DATABASE_URL only (not through PINBENCH_URL).
    """
    with registry() as reg:
        done = reg.admin().delete_runs(runs, delete=yes)
    _print(done, as_json, prune=False)


@click.command("prune")
@click.option(
    "--keep-days",
    "keep_days",
    type=click.FloatRange(min=0, max=36_500),
    required=True,
    help="Keep every run that started less than this many days ago.",
)
@click.option(
    "--keep-last",
    "keep_last",
    type=click.IntRange(min=0, max=1_000_000),
    required=True,
    help="Keep the most recent this many finished runs of each lockfile.",
)
@yes_option
@json_option
def runs_prune(keep_days: float, keep_last: int, yes: bool = False, as_json: bool = False) -> None:
    """Delete finished runs older than --keep-days, but the --keep-last newest of each lockfile.

    Queued and running runs are never deleted.

    A dry run listing them until --yes. Their blobs are left for `pinbench gc --blobs`. On
    this machine's PINBENCH_HOME / PINBENCH_DATABASE_URL only (not through PINBENCH_URL).
    """
    with registry() as reg:
        done = reg.admin().prune_runs(keep_days=keep_days, keep_last=keep_last, delete=yes)
    _print(done, as_json, prune=True)


def _print(done: Deleted, as_json: bool, *, prune: bool) -> None:
    if as_json:
        _print_json(done.to_json())
        return
    verb = "deleted" if done.deleted else "would delete"
    for r in done.runs:
        started = r.to_json()["started_at"]
        _out().print(f"{verb} run {r.id} {r.status} started {started} {r.model or ''}".rstrip())
    count = len(done.runs)
    kept = f"; kept {done.kept} finished" if prune else ""
    _out().print(f"{verb} {count} run{'s' if count != 1 else ''}{kept}")
    if not done.deleted and done.runs:
        _out().print("dry run: nothing deleted; run again with --yes to delete them")
