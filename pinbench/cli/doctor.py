"""``pinbench doctor``: what this machine gives pinbench, each finding with its fix
(``pinbench.doctor``)."""

from __future__ import annotations

import click

from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

GROUPS = ("sandbox", "storage", "engines", "timing")


@click.command("doctor")
@click.option(
    "--only",
    "only",
    multiple=True,
    type=click.Choice(GROUPS),
    help="Check only this group (repeatable): sandbox, storage (free space, database), engines "
    "(Docker Engine, GPUs), timing (what makes timings noisy).",
)
@json_option
def doctor(only: tuple[str, ...] = (), as_json: bool = False) -> None:
    """What this machine gives pinbench: the sandbox, space, the database, Docker, GPUs, noise.

    Each finding comes with its fix: the sandbox (bubblewrap's path and version, user
    namespaces, a sandbox started as a run's is), free space of the home, cache and scratch,
    the configured database, the Docker Engine, GPUs (NVML), and what makes timings noisy as
    pyperf's `system show` reports it (CPU frequency scaling, turbo, SMT, isolated CPUs, other
    load).

    Exits 0 where runs can be made (warnings say what a figure or a runner loses), 1 naming
    the findings that block them."""
    from pinbench.sdk.doctor import blocking, examine, refuse_blocked

    findings = examine(only=only)
    if as_json:
        _print_json([f.as_dict() for f in findings])
    else:
        console = _out()
        width = max(len(f.check) for f in findings)
        for f in findings:
            console.print(f"{f.status:<4}  {f.check:<{width}}  {f.detail}")
            if f.fix:
                console.print(f"{'':<4}  {'':<{width}}  fix: {f.fix}")
    refuse_blocked(findings)
    if not as_json and not blocking(findings):
        _out().print("runs can be made here")
