"""``pinbench ops``: operator benchmarks (Deep500's level 0) locked, run and recorded like
model runs: one lockfile per framework, each run in the environment its lockfile pins.

The operator library (and NumPy) is imported when a command runs, not for ``--help``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from pinbench.cli.common import registry
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.sdk.registry import Registry

ops_app = click.Group(
    "ops",
    help="Operator benchmarks: one operator timed on each framework on the same inputs.\n\n"
    "An operator (conv2d, matmul, softmax, ...) is timed on each framework on the same seeded "
    "inputs and validated against a float64 NumPy reference. "
    "Each framework gets its own lockfile and run record; `pinbench rerun RUN` repeats one.",
    no_args_is_help=True,
)

FRAMEWORKS_DEFAULT = "onnxruntime,torch,tensorflow"
SWEEPS = ("resnet50", "matmul")
MATMUL_SWEEP = (128, 256, 512, 1024, 2048)
"""Square matmul sizes of ``ops sweep matmul``: the machine's measured compute peak (the roof
of a report's roofline) is the fastest of them."""


@ops_app.command("list")
@json_option
def list_ops(
    as_json: bool = False,
) -> None:
    """The operators and their parameters (what --shape takes)."""
    from rich.table import Table
    from rich.text import Text

    from pinbench.specs.operators.schema import OPS, REQUIRED
    from pinbench.tables import tick

    rows: list[dict[str, Any]] = [
        {
            "op": info.name,
            "summary": info.summary,
            "backward": bool(info.grads),
            "params": [
                {
                    "name": p.name,
                    "kind": p.kind,
                    "default": None if p.default is REQUIRED else p.default,
                    "required": p.default is REQUIRED,
                    "help": p.help,
                }
                for p in info.params
            ],
        }
        for info in OPS.values()
    ]
    if as_json:
        _print_json(rows)
        return
    table = Table("operator", "parameters (* required)", "backward", box=None)
    for row in rows:
        params = ", ".join(
            p["name"] + ("*" if p["required"] else f"={_plain(p['default'])}")
            for p in row["params"]
        )
        name = Text.assemble(row["op"], "\n", (row["summary"], "dim"))
        table.add_row(name, params, tick(row["backward"]))
    _out().print(table)


_runner_option = click.option(
    "--runner",
    "runner",
    type=str,
    default="auto",
    help=(
        "local | venv | docker | auto: where each framework runs "
        "(auto: here if the pinned version is installed, else an "
        "isolated environment)."
    ),
)

_threads_option = click.option(
    "--threads", "threads", type=int, help="Intra-op threads of the framework (default: its own)."
)

_seed_option = click.option(
    "--seed", "seed", type=int, default=0, help="Seed of the input tensors (recorded)."
)

_direction_option = click.option(
    "--direction",
    "direction",
    type=str,
    default="forward",
    help=("forward, or backward (PyTorch and TensorFlow: forward plus gradients)."),
)

_dtype_option = click.option(
    "--dtype", "dtype", type=str, default="float32", help="float32, float16 or bfloat16."
)

_frameworks_option = click.option(
    "--frameworks",
    "frameworks",
    type=str,
    default=FRAMEWORKS_DEFAULT,
    help=(
        "Comma-separated frameworks, each NAME or NAME@RANGE as "
        "published in the registry (onnxruntime, torch, tensorflow)."
    ),
)


@ops_app.command("run")
@click.argument("op", type=str, help="The operator (see `pinbench ops list`).")
@click.option(
    "--shape",
    "shape",
    type=str,
    default="",
    help=(
        "Its parameters as NAME=VALUE,... (dimensions as 8x1024), "
        "e.g. "
        "n=1,c=64,h=56,w=56,out_channels=64,kernel_h=3,kernel_w=3,padding=1"
    ),
)
@_frameworks_option
@_dtype_option
@_direction_option
@_seed_option
@click.option(
    "--samples", "samples", type=int, default=100, help="Timed calls (raw latencies are kept)."
)
@click.option(
    "--warmup", "warmup", type=int, default=10, help="Untimed calls before the timed ones."
)
@_threads_option
@_runner_option
@json_option
def run_op(
    op: str,
    shape: str = "",
    frameworks: str = FRAMEWORKS_DEFAULT,
    dtype: str = "float32",
    direction: str = "forward",
    seed: int = 0,
    samples: int = 100,
    warmup: int = 10,
    threads: int | None = None,
    runner: str = "auto",
    as_json: bool = False,
) -> None:
    """Lock the operator once per framework, run each lockfile, record the runs, print a table.

    The table gives median and p90 latency, GFLOP/s and GB/s from the operator's analytical
    counts, the largest error against the float64 reference, and whether it is within
    tolerance.

    A framework outside tolerance is a failed run marked invalid, never a speed; one that
    cannot run the operator (a dtype its CPU kernels lack) is a failed run with its reason.
    The exit status is 1 when any run failed.
    """
    from pinbench.operators.shape_text import parse_shape

    section = _section(op, parse_shape(op, shape), dtype, direction, seed, samples, warmup)
    requests = [(section["op"], _request(section, fw, threads)) for fw in _frameworks(frameworks)]
    _run_and_print(requests, runner, as_json, title=None)


@ops_app.command("sweep")
@click.argument(
    "table",
    type=str,
    help=(
        "resnet50: the distinct conv2d shapes of ResNet-50 v1.5 "
        "(224x224); matmul: square GEMMs 128..2048, whose fastest "
        "gives the machine's compute peak."
    ),
)
@_frameworks_option
@click.option("--batch", "batch", type=int, default=1, help="resnet50: the batch size n.")
@_dtype_option
@_direction_option
@_seed_option
@click.option(
    "--samples", "samples", type=int, default=20, help="Timed calls (raw latencies are kept)."
)
@click.option(
    "--warmup", "warmup", type=int, default=3, help="Untimed calls before the timed ones."
)
@_threads_option
@_runner_option
@json_option
def sweep_ops(
    table: str,
    frameworks: str = FRAMEWORKS_DEFAULT,
    batch: int = 1,
    dtype: str = "float32",
    direction: str = "forward",
    seed: int = 0,
    samples: int = 20,
    warmup: int = 3,
    threads: int | None = None,
    runner: str = "auto",
    as_json: bool = False,
) -> None:
    """Run a table of operator shapes on each framework, and print one table of them all.

    Each shape on each framework is a lockfile and a run of its own."""
    import msgspec

    from pinbench.operators.resnet50 import resnet50_conv_specs

    if table not in SWEEPS:
        raise UserError(f"unknown sweep {table!r}; sweeps: {', '.join(SWEEPS)}")
    if table == "resnet50":
        shapes = [
            (name, msgspec.to_builtins(spec.params))
            for name, spec, _ in resnet50_conv_specs(batch=batch)
        ]
        op = "conv2d"
    else:
        shapes = [(f"{s}^3", {"m": s, "n": s, "k": s}) for s in MATMUL_SWEEP]
        op = "matmul"
    names = _frameworks(frameworks)
    requests = []
    for name, params in shapes:
        section = _section(op, params, dtype, direction, seed, samples, warmup)
        requests += [(name, _request(section, fw, threads)) for fw in names]
    _run_and_print(requests, runner, as_json, title=table)


def _section(
    op: str,
    params: dict[str, Any],
    dtype: str,
    direction: str,
    seed: int,
    samples: int,
    warmup: int,
) -> dict[str, Any]:
    """The request's operator section, checked now (a bad shape runs nothing)."""
    import msgspec

    from pinbench.specs.operators.section import OperatorRun

    section = {
        "op": op,
        "params": params,
        "dtype": dtype,
        "direction": direction,
        "seed": seed,
        "samples": samples,
        "warmup": warmup,
    }
    try:
        checked = msgspec.convert(section, OperatorRun)
    except msgspec.ValidationError as exc:
        raise UserError(f"{op}: {exc}") from None
    data: dict[str, Any] = msgspec.to_builtins(checked)
    return data


def _frameworks(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise UserError("--frameworks names at least one framework")
    if len(set(names)) != len(names):
        raise UserError(f"--frameworks {text!r} names a framework twice")
    return [n if "@" in n else f"{n}@*" for n in names]


def _request(section: dict[str, Any], framework: str, threads: int | None) -> dict[str, Any]:
    request: dict[str, Any] = {"operator": section, "framework": framework}
    if threads is not None:
        request["threads"] = threads
    return request


def _run_and_print(
    requests: list[tuple[str, dict[str, Any]]], runner: str, as_json: bool, title: str | None
) -> None:
    from pinbench.cli.common import progress_lines

    say = progress_lines(quiet=as_json)
    with registry() as reg:
        infos = _run_all(reg, requests, runner, say)
    if as_json:
        _print_json(infos)
    else:
        from pinbench.tables import operator_table

        _out().print(operator_table(infos, title))
    failed = [i for i in infos if i["status"] != "succeeded"]
    if failed:
        raise UserError(f"{len(failed)} of {len(infos)} runs did not succeed (see the table)")


def _run_all(
    reg: Registry,
    requests: list[tuple[str, dict[str, Any]]],
    runner: str,
    say: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Lock every request first (a framework that is not published runs nothing; through a
    server, its registry decides), then run each lockfile; a failed run is recorded and the
    next one runs."""
    from pinbench.cli.stopping import stopped_safely

    locks = [(name, reg.lock(data, source=f"{name} request")[0]) for name, data in requests]
    infos = []
    for name, lock in locks:
        if reg.remote:  # the server's record as it answers it (metrics flat)
            infos.append({"name": name, **lock.run(runner=runner, say=say, check=False).info})
            continue
        with stopped_safely() as stop:
            done = lock.run(runner=runner, say=say, stop=stop, check=False)
        infos.append({"name": name, **done.view()})
    return infos


def _plain(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return "x".join(map(str, value))
    return str(value)
