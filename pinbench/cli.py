"""The ``pinbench`` command: a thin layer over the library.

Every command is a few lines calling ``pinbench.registry`` / ``pinbench.db``. Errors are turned
into a message and an exit code in one place (``main``): 0 success, 1 user error (bad input,
not found, conflict), 2 usage error, 3 failure of the system.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, TypeVar

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn
from rich.table import Table
from rich.text import Text
from sqlalchemy.engine import make_url

from pinbench import accounts, reports
from pinbench.artifacts.digest import Progress as ProgressCallback
from pinbench.cli_catalog import catalog_app
from pinbench.cli_lockfile import lockfile_app
from pinbench.cli_manifest import manifest_app
from pinbench.cli_mlmodelscope import import_mlmodelscope
from pinbench.console import JsonOpt
from pinbench.console import err as _err
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.db import schema as db_schema
from pinbench.demo import run_demo
from pinbench.errors import PinbenchError, UserError
from pinbench.evaluator.history import COMPARED, compare_runs, list_runs, show_run
from pinbench.evaluator.parity import parity
from pinbench.evaluator.rerun import REPEAT, rerun
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.stop import Stop, stop_on_signals
from pinbench.evaluator.verdict import BAND
from pinbench.registry import catalog, service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import json_schemas, load_manifest
from pinbench.registry.names import ArtifactRef, Spec, parse_kind
from pinbench.registry.publish import publish as publish_artifact
from pinbench.registry.ranges import Range, parse_version, satisfying
from pinbench.registry.request import load_request, read_request_data
from pinbench.registry.verify import VerificationFailed, verify_lockfile
from pinbench.remote import Remote, remote_from_env
from pinbench.tables import fmt_ns, parity_table, print_categories, print_trace
from pinbench.trace.analysis import TraceView
from pinbench.trace.analysis import compare as compare_traces
from pinbench.trace.levels import parts
from pinbench.trace.summary import trace_of
from pinbench.workspace import Workspace

PROGRESS_MIN_BYTES = 64 * 1024 * 1024
T = TypeVar("T")

app = typer.Typer(
    name="pinbench",
    help="Reproducible artifact registry and evaluation store for deep-learning benchmarks.\n\n"
    "State lives in PINBENCH_HOME (default ~/.local/share/pinbench); the database is "
    "PINBENCH_DATABASE_URL (default SQLite in the home; PostgreSQL via postgresql+psycopg://).\n\n"
    "With PINBENCH_URL set (and PINBENCH_TOKEN for writes), publish, yank, list, show, resolve, "
    "lock, run and runs list|show|compare talk to that `pinbench serve` instead.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database schema migrations.", no_args_is_help=True)
app.add_typer(db_app, name="db")
images_app = typer.Typer(
    help="Framework images for --runner docker: build (and publish), push, pull.",
    no_args_is_help=True,
)
app.add_typer(images_app, name="images")
user_app = typer.Typer(
    help="Users and namespace members of this server's database (for admins; run where the "
    "server's PINBENCH_HOME / PINBENCH_DATABASE_URL are).",
    no_args_is_help=True,
)
app.add_typer(user_app, name="user")
token_app = typer.Typer(
    help="API tokens: create (shown once), list, revoke. With PINBENCH_URL: through the "
    "server, for the caller's own user; without: in this database, for --user.",
    no_args_is_help=True,
)
app.add_typer(token_app, name="token")
runs_app = typer.Typer(help="Recorded runs: list, show, compare, parity.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")
app.add_typer(catalog_app, name="catalog")
app.command("import-mlmodelscope")(import_mlmodelscope)
app.add_typer(lockfile_app, name="lockfile")
app.add_typer(manifest_app, name="manifest")

AllowPickleOpt = Annotated[
    bool,
    typer.Option(
        "--allow-pickle",
        help="This run may unpickle a torch-pickle model whose manifest says `trusted: true` "
        "(unpickling runs the publisher's code: only for publishers you trust).",
    ),
]
RUNNER_HELP = (
    "Where to run: auto (docker if the lockfile pins an image and a Docker Engine answers, "
    "else venv), local (this interpreter, as installed), venv (a uv environment from the "
    "framework's hash-pinned requirements, cached by digest), docker (the pinned image)."
)
RERUN_DEFAULT = " Default: the original run's runner."
WORKER_HEALTHCHECK_S = 60
"""How long ``serve --workers N`` lets a worker take to answer uvicorn's health check."""


@contextmanager
def _workspace() -> Iterator[Workspace]:
    ws = Workspace.from_env()
    try:
        yield ws
    finally:
        ws.close()


def _remote_or_here(there: Callable[[Remote], T], here: Callable[[Workspace], T]) -> T:
    """Through the server named by PINBENCH_URL when it is set, else on this workspace."""
    with remote_from_env() as remote:
        if remote is not None:
            return there(remote)
    with _workspace() as ws:
        return here(ws)


def _local_user(user: str | None) -> str:
    if user is None:
        raise UserError("--user NAME is needed without PINBENCH_URL")
    return user


@contextmanager
def _progress() -> Iterator[Callable[[str, int], ProgressCallback]]:
    """A progress bar on stderr for files of 64 MiB or more; small files stay quiet."""
    bar = Progress(
        "{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=_err(),
        transient=True,
    )

    def factory(label: str, total: int) -> ProgressCallback:
        if total < PROGRESS_MIN_BYTES:
            return lambda n: None
        task = bar.add_task(f"hashing {label}", total=total)
        return lambda n: bar.advance(task, n)

    with bar:
        yield factory


# ---------------------------------------------------------------- setup and schema


@app.command()
def init(as_json: JsonOpt = False) -> None:
    """Create PINBENCH_HOME: the blob store and a database migrated to the current schema."""
    with _workspace() as ws:
        revision = ws.init()
        info = {"home": str(ws.settings.home), "database": _safe_url(ws), "revision": revision}
    if as_json:
        _print_json(info)
    else:
        _out().print(f"initialised {info['home']} (database {info['database']}, schema {revision})")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the database to the newest schema revision."""
    with _workspace() as ws:
        ws.settings.home.mkdir(parents=True, exist_ok=True)
        before = db_schema.current_revision(ws.engine)
        _migrate().upgrade(ws.engine)
        after = db_schema.current_revision(ws.engine)
    _out().print(f"database schema: {before or 'empty'} -> {after}")


@db_app.command("current")
def db_current(as_json: JsonOpt = False) -> None:
    """Print the database's schema revision and the one this pinbench needs."""
    with _workspace() as ws:
        info = {"current": db_schema.current_revision(ws.engine), "head": db_schema.HEAD_REVISION}
    if as_json:
        _print_json(info)
    else:
        _out().print(f"current: {info['current'] or 'none'}  head: {info['head']}")


@db_app.command("check")
def db_check() -> None:
    """Exit 0 if the database is at the head revision and matches the models, else 1."""
    with _workspace() as ws:
        db_schema.ensure_current(ws.engine)
        diff = _migrate().schema_diff(ws.engine)
    if diff:
        raise UserError(f"the database schema differs from the models: {diff}")
    _out().print("database schema is current")


@app.command()
def schema(
    out_dir: Annotated[Path, typer.Argument(help="Directory to write KIND.schema.json into.")],
) -> None:
    """Write the JSON Schema of each manifest kind (for editors)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for kind, doc in json_schemas().items():
        (out_dir / f"{kind}.schema.json").write_text(json.dumps(doc, indent=2) + "\n")
        _out().print(f"wrote {out_dir / f'{kind}.schema.json'}")


# ---------------------------------------------------------------- registry


@app.command()
def publish(
    manifest: Annotated[Path, typer.Argument(help="The artifact's manifest (YAML).")],
    files: Annotated[
        Path | None,
        typer.Option("--files", help="Directory holding the files (default: the manifest's)."),
    ] = None,
    publisher: Annotated[str | None, typer.Option(help="Who publishes (default: $USER).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Publish one artifact: validate, hash and store its files, record it.

    Files with a remote source (https://, hf://ORG/REPO@REV/PATH, dvc://REPO@REV/PATH) are
    fetched and hashed on the way in; a branch or tag is pinned to its commit and the published
    manifest records the commit and each file's sha256 (checked against any md5 or sha256 the
    manifest gives). A published version never changes: the same manifest again is a no-op,
    another one is refused.
    """
    info = _remote_or_here(
        lambda remote: remote.publish(manifest, files, say=_err().print),
        lambda ws: _publish_here(ws, manifest, files, publisher),
    )
    if as_json:
        _print_json(info)
    elif info["created"]:
        _out().print(
            f"published {info['ref']} ({info['files']} file(s), {info['bytes']} bytes, "
            f"manifest sha256 {info['manifest_digest'][:12]})"
        )
    else:
        _out().print(f"{info['ref']} is already published with this manifest: nothing to do")


def _publish_here(
    ws: Workspace, manifest: Path, files: Path | None, publisher: str | None
) -> dict[str, Any]:
    parsed = load_manifest(manifest)
    with _progress() as progress:
        result = publish_artifact(
            ws,
            parsed,
            manifest_dir=manifest.parent,
            files_dir=files,
            publisher=publisher,
            progress=progress,
            say=_err().print,
        )
    return {
        "ref": str(result.ref),
        "manifest_digest": result.manifest_digest.hex,
        "created": result.created,
        "files": result.files,
        "bytes": result.bytes,
        "new_blobs": result.new_blobs,
    }


@app.command()
def yank(
    ref: Annotated[str, typer.Argument(help="KIND/NAME@VERSION")],
    reason: Annotated[str, typer.Option("--reason", help="Why (shown to users).")],
) -> None:
    """Mark a version yanked: ranges skip it, exact pins still resolve it."""
    parsed = ArtifactRef.parse(ref)
    _remote_or_here(
        lambda remote: remote.yank(str(parsed), reason),
        lambda ws: catalog.yank(ws, parsed, reason),
    )
    _out().print(f"yanked {parsed}: {reason}")


@app.command("list")
def list_(
    kind: Annotated[str | None, typer.Argument(help="model, framework, dataset or image")] = None,
    name: Annotated[str | None, typer.Argument(help="Artifact name")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List published artifacts and versions."""
    parsed_kind = parse_kind(kind) if kind else None
    params = {k: v for k, v in (("kind", kind), ("name", name)) if v}
    rows: list[dict[str, Any]] = _remote_or_here(
        lambda remote: remote.json("GET", "/api/v1/artifacts", params=params),
        lambda ws: [r.to_json() for r in catalog.list_artifacts(ws, parsed_kind, name)],
    )
    if as_json:
        _print_json(rows)
        return
    table = Table("kind", "name", "version", "published", "manifest", box=None)
    for r in rows:
        version = f"{r['version']} [yellow](yanked)[/]" if r["yanked"] else r["version"]
        published = r["published_at"][:16].replace("T", " ")
        table.add_row(r["kind"], r["name"], version, published, r["manifest_digest"][:12])
    _out().print(table if rows else "no artifacts published")


@app.command()
def show(
    ref: Annotated[str, typer.Argument(help="KIND/NAME@VERSION")], as_json: JsonOpt = False
) -> None:
    """Show one artifact version: manifest, files with digests, yank state."""
    parsed = ArtifactRef.parse(ref)
    info: dict[str, Any] = _remote_or_here(
        lambda remote: remote.json("GET", f"/api/v1/artifacts/{parsed}"),
        lambda ws: catalog.show(ws, parsed),
    )
    if as_json:
        _print_json(info)
        return
    out = _out()
    out.print(Text(info["ref"], style="bold"))
    if info["yanked"]:
        out.print(Text(f"yanked: {info['yank_reason']}", style="yellow"))
    out.print(f"manifest sha256 {info['manifest_digest']}")
    out.print(f"published {info['published_at']} by {info['publisher']}")
    desc = info["manifest"].get("description")
    if desc:
        out.print(desc)
    for f in info["files"]:
        source = f.get("source") or ""
        pinned = f"  from {source}" if "://" in source else ""
        out.print(f"  {f['sha256']}  {f['size']:>12}  {f['path']}{pinned}", soft_wrap=True)


@app.command("resolve")
def resolve_cmd(
    specs: Annotated[
        list[str], typer.Argument(help="KIND/NAME@RANGE, e.g. 'model/vision/lenet@^1'")
    ],
    arch: Annotated[str, typer.Option(help="Target architecture.")] = "amd64",
    device: Annotated[str, typer.Option(help="Target device.")] = "cpu",
    as_json: JsonOpt = False,
) -> None:
    """Pick the highest version of each artifact so that every constraint holds."""
    parsed = [Spec.parse(s) for s in specs]

    def here(ws: Workspace) -> list[dict[str, str]]:
        resolution = service.resolve_specs(ws, parsed, platform=f"{arch}/{device}")
        return [
            {"kind": r.kind.value, "name": r.name, "version": str(r.version)}
            for r in resolution.refs
        ]

    refs = _remote_or_here(lambda remote: remote.resolve(specs, arch=arch, device=device), here)
    if as_json:
        _print_json(refs)
    else:
        for r in refs:
            _out().print(f"{r['kind']}/{r['name']}@{r['version']}")


@app.command("range")
def range_cmd(
    range_text: Annotated[str, typer.Argument(metavar="RANGE", help="An npm-style range.")],
    versions: Annotated[list[str] | None, typer.Argument(metavar="VERSION...")] = None,
    include_prerelease: Annotated[
        bool, typer.Option("--include-prerelease", "-p", help="Let prereleases match any range.")
    ] = False,
) -> None:
    """Print the given versions that satisfy RANGE, one a line (like node-semver's `semver -r`).

    With no versions, print the range in normalised form. Exits 1 when no version satisfies.
    """
    rng = Range.parse(range_text)
    if not versions:
        _out().print(str(rng))
        return
    matching = satisfying(
        [parse_version(v) for v in versions], rng, include_prerelease=include_prerelease
    )
    for v in matching:
        sys.stdout.write(f"{v}\n")
    if not matching:
        raise SystemExit(1)


# ---------------------------------------------------------------- lockfiles


@app.command("lock")
def lock_cmd(
    request: Annotated[Path, typer.Argument(help="An evaluation request (YAML).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the lockfile.")],
    as_json: JsonOpt = False,
) -> None:
    """Resolve a request and write its lockfile (canonical JSON; its sha256 is its id).

    A request whose batch_size is a list is a sweep: one lockfile per batch size, written
    next to OUTPUT as NAME.bsN.lock and grouped by the request's sha256.
    """
    parsed = load_request(request)

    def there(remote: Remote) -> list[tuple[Lockfile, bool]]:
        locked = remote.lock(read_request_data(request))
        return [(remote.lockfile(p["digest"]), p["new"]) for p in locked["points"]]

    points = _remote_or_here(there, lambda ws: service.lock_points(ws, parsed))
    written = []
    for lockfile, created in points:
        path = output
        if parsed.is_sweep:
            path = output.with_name(f"{output.stem}.bs{lockfile.body.batch_size}{output.suffix}")
        lockfile.write(path)
        written.append({"digest": lockfile.digest.hex, "path": str(path), "new": created})
    pinned = [a.ref for a in points[0][0].body.artifacts]
    if as_json:
        if parsed.is_sweep:
            sweep = points[0][0].body.sweep
            _print_json({"sweep": sweep, "points": written, "artifacts": pinned})
        else:
            _print_json({**written[0], "artifacts": pinned})
        return
    out = _out()
    for ref in pinned:
        out.print(f"pinned {ref}")
    for point in written:
        out.print(f"wrote {point['path']} (lockfile sha256 {point['digest']})")


@app.command()
def verify(
    lockfile: Annotated[Path, typer.Argument(help="A lockfile written by `pinbench lock`.")],
    rehash: Annotated[
        bool,
        typer.Option(
            "--rehash", help="Read every file's bytes again, ignoring the verified-state cache."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check every byte the lockfile pins against its sha256 (unchanged files are not re-read;
    --rehash reads them all).

    First the lockfile itself is checked against this registry: every section is re-derived
    from the manifests it pins and must be identical (a field that differs is named); an
    artifact not published here is refused (adopt it deliberately with `pinbench lockfile
    import LOCKFILE --from URL`). A file missing from the store is fetched from its pinned
    source (https://, or hf:// and dvc:// at the commit the lockfile names) and kept only if
    it matches the pin.
    """
    lock = Lockfile.read(lockfile)
    with _workspace() as ws, _progress() as progress:
        try:
            checks = verify_lockfile(ws, lock, progress=progress, say=_err().print, rehash=rehash)
        except VerificationFailed as exc:
            if as_json:
                _print_json(
                    {
                        "digest": lock.digest.hex,
                        "ok": False,
                        "failures": [c.error for c in exc.failures],
                    }
                )
            raise
    if as_json:
        _print_json({"digest": lock.digest.hex, "ok": True, "checked": len(checks)})
    else:
        nbytes = sum(c.size for c in checks)
        _out().print(
            f"verified lockfile {lock.digest.short}: "
            f"{len(checks)} item(s), {nbytes} bytes, all match"
        )


TRACE_HELP = (
    "Trace level: none; model (pipeline spans: load, preprocess, cold first predict, warm-up, "
    "each timed predict, postprocess); framework (model + the framework profiler's operators); "
    "system (model + CPU, memory and, with NVML, GPU samples); full (all). A traced run's "
    "latencies include the profilers' overhead and are marked traced. "
    "See `pinbench runs trace`."
)


def _progress_lines(*, quiet: bool) -> Callable[[str], None]:
    """Progress messages on stderr (none with --json)."""
    if quiet:
        return lambda text: None
    return lambda text: _err().print(Text(text, style="dim"))


@app.command("run")
def run_cmd(
    lockfile: Annotated[Path, typer.Argument(help="A lockfile written by `pinbench lock`.")],
    runner: Annotated[str, typer.Option(help=RUNNER_HELP)] = "auto",
    trace: Annotated[str, typer.Option(help=TRACE_HELP)] = "none",
    allow_pickle: AllowPickleOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Check the lockfile against this registry, verify every pinned byte, run the lockfile's
    scenario, and record the run.

    The run is recorded whatever happens: succeeded, failed with its reason, or interrupted.
    A lockfile this registry would not make (an artifact not published here, a field that
    differs from its manifest) is refused and nothing is recorded.
    """
    parts(trace)
    lock = Lockfile.read(lockfile)
    say = _progress_lines(quiet=as_json)

    def there(remote: Remote) -> dict[str, Any]:
        if allow_pickle:
            raise UserError(
                "--allow-pickle is a local decision: a server runs pickles only when its "
                "operator started it with `pinbench serve --allow-pickle`"
            )
        queued = remote.submit(lock, runner, trace)
        say(f"queued run {queued['id']} on {remote.url}")
        info = remote.wait(queued["id"], say)
        if info["status"] != "succeeded":
            raise UserError(f"run {info['id']} {info['status']}: {info['error']}")
        return info

    def here(ws: Workspace) -> dict[str, Any]:
        # Ctrl-C / SIGTERM stop the evaluation safely and record it interrupted (exit 130 / 143)
        with _stopped_safely() as stop:
            outcome = run_lockfile(
                ws,
                lock,
                runner=runner,
                say=say,
                trace=trace,
                allow_pickle=allow_pickle,
                stop=stop,
            )
        return show_run(ws, outcome.id)

    info = _remote_or_here(there, here)
    if as_json:
        _print_json(info)
        return
    _print_run(info)


METRIC_ROWS = [
    ("latency p50", "latency_p50_ns"),
    ("latency p90", "latency_p90_ns"),
    ("latency p99", "latency_p99_ns"),
    ("latency p99.9", "latency_p99_9_ns"),
    ("latency mean", "latency_mean_ns"),
]


def _print_run(info: dict[str, Any]) -> None:
    out = _out()
    out.print(Text(f"run {info['id']}  {info['status']}", style="bold"))
    out.print(
        f"{info['model']} on {info['framework']}, {info['dataset']}, "
        f"{info['scenario']} {info['mode']}, batch {info['batch_size']}"
    )
    table = Table("metric", "value", box=None)
    for label, key in METRIC_ROWS:
        if key in info:
            table.add_row(label, fmt_ns(info[key]))
    if "throughput_sps" in info:
        table.add_row("throughput", f"{info['throughput_sps']:,.0f} samples/s")
    for key in ("top1", "top5"):
        if key in info:
            table.add_row(key, f"{info[key]:.4f}")
    if "loadgen_valid_bool" in info:
        table.add_row("LoadGen verdict", "VALID" if info["loadgen_valid_bool"] else "INVALID")
    out.print(table)
    loadgen = (info.get("details") or {}).get("loadgen") or {}
    for reason in loadgen.get("invalid_reasons") or []:
        out.print(Text(f"  INVALID because {reason}", style="yellow"))
    rows = (info.get("details") or {}).get("samples") or []
    if rows:
        out.print(_predictions_table(rows))
    if info.get("trace", "none") != "none":
        out.print(
            f"traced at level {info['trace']}: latencies include the profilers' overhead; "
            f"`pinbench runs trace {info['id'][:8]}` shows the trace"
        )


SHOWN_PREDICTIONS = 10


def _predictions_table(rows: list[dict[str, Any]]) -> Table:
    """The first predictions of an accuracy run: file, true class, top-1 (by name if given)."""

    def cls(row: dict[str, Any], key: str) -> str:
        name = row.get(f"{key}_name")
        return f"{row[key]} {name}" if name else str(row[key])

    table = Table(
        "sample",
        "truth",
        "top-1",
        "score",
        box=None,
        title=f"first {min(len(rows), SHOWN_PREDICTIONS)} predictions (of {len(rows)} recorded)",
    )
    for row in rows[:SHOWN_PREDICTIONS]:
        mark = "" if row["truth"] == row["top1"] else " x"
        table.add_row(
            str(row["sample"]),
            cls(row, "truth"),
            cls(row, "top1") + mark,
            "-" if row["score"] is None else f"{row['score']:.4g}",
        )
    return table


@runs_app.command("list")
def runs_list(
    limit: Annotated[int | None, typer.Option(help="Show at most this many.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recorded runs, newest first."""
    rows = _remote_or_here(lambda remote: remote.runs(limit), lambda ws: list_runs(ws, limit))
    if as_json:
        _print_json(rows)
        return
    table = Table("run", "status", "model", "framework", "scenario", "p50", "top1", box=None)
    for r in rows:
        p50 = fmt_ns(r["latency_p50_ns"]) if "latency_p50_ns" in r else ""
        if p50 and r.get("trace", "none") != "none":
            p50 += f" (traced: {r['trace']})"
        top1 = f"{r['top1']:.4f}" if "top1" in r else ""
        table.add_row(
            r["id"][:8],
            r["status"],
            r["model"],
            r["framework"] or "",
            f"{r['scenario']} {r['mode']}",
            p50,
            top1,
        )
    _out().print(table if rows else "no runs recorded")


@runs_app.command("cancel")
def runs_cancel(
    run: Annotated[str, typer.Argument(help="A run id (or a unique prefix).")],
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Wait until the run has stopped.")
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Cancel a queued run (it never starts) or a running one (its server stops it).

    Recorded `cancelled` with who asked; a finished run cannot be cancelled (exit 1). With
    PINBENCH_URL: through that server, for runs your token's user submitted (admins: any).
    """
    say = _progress_lines(quiet=as_json)

    def there(remote: Remote) -> dict[str, Any]:
        info = remote.cancel(run)
        return remote.wait(info["id"], say) if wait else info

    def here(ws: Workspace) -> dict[str, Any]:
        from pinbench.evaluator.cancel import Canceller, request_cancel, wait_finished

        run_id, _ = request_cancel(ws, run, Canceller(None))
        return wait_finished(ws, run_id, say) if wait else show_run(ws, run_id)

    info = _remote_or_here(there, here)
    if as_json:
        _print_json(info)
        return
    error = f": {info['error']}" if info["error"] else ""
    _out().print(f"run {info['id']} {info['status']}{error}")


@runs_app.command("show")
def runs_show(
    run: Annotated[str, typer.Argument(help="A run id (or a unique prefix).")],
    as_json: JsonOpt = False,
) -> None:
    """One run: metrics, host facts, the lockfile it ran."""
    info = _remote_or_here(lambda remote: remote.run(run), lambda ws: show_run(ws, run))
    if as_json:
        _print_json(info)
        return
    _print_run(info)
    if info["error"]:
        _out().print(Text(f"error: {info['error']}", style="red"))
    host = info["host"]
    _out().print(f"host: {host.get('cpu')}, {host.get('cores')} cores, {host.get('os')}")
    _out().print(f"lockfile: {info['lockfile']}")


@app.command("rerun")
def rerun_cmd(
    run: Annotated[str, typer.Argument(help="A run id (or a unique prefix).")],
    runner: Annotated[str | None, typer.Option(help=RUNNER_HELP + RERUN_DEFAULT)] = None,
    trace: Annotated[
        str | None, typer.Option(help=TRACE_HELP + " Default: the original run's level.")
    ] = None,
    repeat: Annotated[
        int, typer.Option(help="Performance runs: how many times to rerun (run-to-run noise).")
    ] = REPEAT,
    band: Annotated[
        float,
        typer.Option(
            help="How much the reruns' median latencies may disagree with each other "
            "(largest / smallest - 1) for latency to count as reproduced; more is inconclusive."
        ),
    ] = BAND,
    allow_pickle: AllowPickleOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a recorded run's lockfile again and print a verdict: inputs, accuracy, latency.

    The original's median latency is judged against a 99% prediction interval built from
    the reruns' medians (run-to-run noise), and the Mann-Whitney U test on the raw per-query
    latencies: a change counts when the original is outside the interval, p < 0.01 and the
    medians differ by 5% or more. Accuracy must be identical. When the reruns' medians disagree
    with each other by more than --band, latency is inconclusive rather than reproduced.

    Exit codes: 0 reproduced, 1 not reproduced (or a user error), 4 inconclusive (inputs and
    accuracy reproduced, latency undecided).
    """
    if not 0 < band < 10:
        raise typer.BadParameter(f"--band must be between 0 and 10, got {band}")
    if trace is not None:
        parts(trace)
    say = _progress_lines(quiet=as_json)
    with _workspace() as ws, _stopped_safely() as stop:
        verdict = rerun(
            ws,
            run,
            repeat=repeat,
            runner=runner,
            say=say,
            trace=trace,
            allow_pickle=allow_pickle,
            stop=stop,
            band=band,
        )
    if as_json:
        _print_json(verdict.to_json())
    else:
        out = _out()
        ids = ", ".join(r["id"][:8] for r in verdict.reruns)
        out.print(f"reran {verdict.original['id'][:8]} as {ids}")
        styles = {"reproduced": "bold green", "not reproduced": "bold red"}
        for line in verdict.lines:
            style = styles.get(line.split(":")[0], "")
            out.print(Text(line, style="bold yellow" if line.startswith("inconclusive") else style))
    if verdict.outcome != "reproduced":
        raise typer.Exit(4 if verdict.outcome == "inconclusive" else 1)


@runs_app.command("compare")
def runs_compare(
    runs: Annotated[list[str], typer.Argument(help="Two or more run ids (or unique prefixes).")],
    as_json: JsonOpt = False,
) -> None:
    """Metrics of several runs side by side; what differs in their inputs is named."""
    data = _remote_or_here(lambda remote: remote.compare(runs), lambda ws: compare_runs(ws, runs))
    _print_comparison(data, as_json=as_json)


def _print_comparison(data: dict[str, Any], *, as_json: bool) -> None:
    infos, differs = data.pop("infos"), data["differs"]
    if as_json:
        _print_json(data)
        return
    table = Table("", *[i["id"][:8] for i in infos], box=None)
    for k in COMPARED:
        table.add_row(k + (" *" if k in differs else ""), *[str(i[k]) for i in infos])
    for m, values in data["metrics"].items():
        table.add_row(m, *["" if v is None else f"{v:,.4g}" for v in values])
    out = _out()
    out.print(table)
    if differs:
        out.print(f"* differs between the runs: {', '.join(differs)}")


@runs_app.command("report")
def runs_report(
    runs: Annotated[
        list[str] | None, typer.Argument(help="Run ids (or unique prefixes), one or more.")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML page here.")
    ] = None,
    md: Annotated[Path | None, typer.Option("--md", help="Write a Markdown report here.")] = None,
    csv: Annotated[
        Path | None, typer.Option("--csv", help="Write the raw per-query latencies as CSV.")
    ] = None,
    parquet: Annotated[
        Path | None,
        typer.Option("--parquet", help="Write the raw per-query latencies as Parquet."),
    ] = None,
) -> None:
    """A report over recorded runs: HTML (opens with no network), Markdown, CSV, Parquet.

    The HTML page holds the lockfile summary, the environment, the metric tables, the latency
    distribution (CDF and histogram) per run, latency vs throughput across a batch-size sweep,
    accuracy vs latency across models and frameworks, and a diff of the runs' lockfiles and
    environments. CSV and Parquet hold one row per query. Runs of different models or
    scenarios may be reported together; the report names what differs.
    """
    wanted = {f: p for f, p in (("html", html), ("md", md), ("csv", csv), ("parquet", parquet))}
    outputs = {f: p for f, p in wanted.items() if p is not None}
    if not outputs:
        raise UserError(
            "name at least one output: --html FILE, --md FILE, --csv FILE or --parquet FILE"
        )
    ids = runs or []

    def here(ws: Workspace) -> dict[str, bytes]:
        report = reports.gather(ws, ids)
        return {f: reports.render(report, f)[1] for f in outputs}

    made = _remote_or_here(lambda remote: {f: remote.report(ids, f) for f in outputs}, here)
    for fmt, path in outputs.items():
        _write_atomic(path, made[fmt])
        _err().print(f"wrote {fmt} report to {path} ({len(made[fmt]):,} bytes)")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


@runs_app.command("trace")
def runs_trace(
    runs: Annotated[
        list[str], typer.Argument(help="A traced run; several to compare their breakdowns.")
    ],
    top: Annotated[int, typer.Option(help="Show the slowest N operators.", min=1)] = 15,
    chrome: Annotated[
        Path | None,
        typer.Option(
            help="Write the (first) run's Chrome trace JSON here (Perfetto, chrome://tracing)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """A traced run's inspection: cold start, phases, and the per-layer/operator table (count,
    total, mean, share of model time), slowest first. With several runs (e.g. the same model
    on ONNX Runtime and PyTorch) their operator time per prediction is compared by category.
    """

    def there(remote: Remote) -> list[TraceView]:
        infos = [remote.run(r) for r in runs]
        return [TraceView(i, remote.trace(i)) for i in infos]

    def here(ws: Workspace) -> list[TraceView]:
        infos = [show_run(ws, r) for r in runs]
        return [TraceView(i, trace_of(ws, i)) for i in infos]

    views = _remote_or_here(there, here)
    if chrome is not None:
        _write_atomic(chrome, json.dumps(views[0].trace).encode())
    categories = compare_traces(views) if len(views) > 1 else []
    if as_json:
        _print_json(
            {
                "runs": [v.to_json(top) for v in views],
                "categories": [
                    {
                        "category": c.category,
                        "per_prediction_ns": c.per_prediction_ns,
                        "shares": c.shares,
                    }
                    for c in categories
                ],
            }
        )
        return
    out = _out()
    for view in views:
        print_trace(out, view, top)
    if categories:
        print_categories(out, views, categories)
    if chrome is not None:
        _err().print(f"wrote {chrome} (open it in https://ui.perfetto.dev or chrome://tracing)")


@runs_app.command("parity")
def runs_parity(
    reference: Annotated[str, typer.Argument(help="The reference accuracy run.")],
    others: Annotated[list[str], typer.Argument(help="Accuracy runs to compare with it.")],
    as_json: JsonOpt = False,
) -> None:
    """Cross-framework parity: outputs of accuracy runs compared sample by sample.

    Prints the max absolute and relative difference from the reference's outputs and how
    many samples have the same top-1 class.
    """
    with _workspace() as ws:
        rows = parity(ws, reference, others)
    if as_json:
        _print_json([r.to_json() for r in rows])
        return
    _out().print(parity_table(rows))


@app.command()
def digest(files: Annotated[list[Path], typer.Argument(help="Files to hash.")]) -> None:
    """Print the sha256 and size of files (for writing manifests)."""
    with _workspace() as ws, _progress() as progress:
        for f in files:
            if not f.is_file():
                raise UserError(f"{f}: not a file")
            d, size, _ = ws.store.cache.digest(f, progress=progress(str(f), f.stat().st_size))
            sys.stdout.write(f"{d.hex}  {size}  {f}\n")


@app.command()
def demo(
    workdir: Annotated[
        Path | None, typer.Option(help="Where to write the catalog (default: HOME/demo).")
    ] = None,
) -> None:
    """The whole flow on the built-in catalog: train, publish, resolve, lock, verify, run."""
    with _workspace() as ws:
        run_demo(ws, workdir or ws.settings.home / "demo", _out())


def _migrate() -> ModuleType:
    """Alembic is imported only by the commands that need it (a tenth of a second saved)."""
    return importlib.import_module("pinbench.db.migrate")


def _safe_url(ws: Workspace) -> str:
    return make_url(ws.settings.database_url).render_as_string(hide_password=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the app and map errors to exit codes (usage errors exit 2 inside Typer)."""
    try:
        app(args=list(argv) if argv is not None else None, prog_name="pinbench")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except PinbenchError as exc:
        _err().print(Text.assemble(("error: ", "bold red"), str(exc)))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return 0


@contextmanager
def _stopped_safely() -> Iterator[Stop]:
    """Ctrl-C / SIGTERM stop the evaluation safely and record it interrupted (exit 130 /
    143); a LoadGen test left running on its thread ends the process without teardown."""
    with stop_on_signals(Stop()) as stop:
        try:
            yield stop
        except PinbenchError as exc:
            if stop.left_running:  # recorded; LoadGen's thread must not see a teardown
                _exit_now(exc)
            raise


def _exit_now(exc: PinbenchError) -> None:
    """Print the error and end the process at once, skipping interpreter teardown: a stopped
    LoadGen test still running on its thread would crash in it (``pinbench.evaluator.stop``)."""
    _err().print(Text.assemble(("error: ", "bold red"), str(exc)))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exc.exit_code)


def entrypoint() -> None:
    sys.exit(main())


@images_app.command("build")
def images_build(
    frameworks: Annotated[
        list[str] | None,
        typer.Argument(help="Frameworks to build: onnxruntime, torch, tensorflow (default: all)."),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            help="Base image with CPython 3.11 (e.g. python:3.11-slim@sha256:...). Default: "
            "Debian bookworm built here with debootstrap and imported (needs root)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Build each framework's evaluation image and publish it as an image artifact.

    Needs a Docker Engine (DOCKER_HOST). The wheels are downloaded on the host by pip from the
    framework's hash-pinned lock; the build itself has no network. An image already published
    for the same requirements, evaluator code and base is reused. Lock requests again after
    building: new lockfiles pin the image's digest.
    """
    from pinbench.catalog.frameworks import VERSIONS
    from pinbench.images.base import ensure_base
    from pinbench.images.build import build_image
    from pinbench.images.engine import connect

    say = _progress_lines(quiet=as_json)
    client = connect()
    built = []
    with _workspace() as ws:
        (ws.settings.home / "tmp").mkdir(parents=True, exist_ok=True)
        base_id = base or ensure_base(client, ws.settings.home / "cache" / "images", say)
        for framework in frameworks or list(VERSIONS):
            built.append(build_image(ws, client, framework, base_id, say))
    if as_json:
        _print_json(
            [
                {
                    "framework": b.framework,
                    "artifact": b.ref,
                    "digest": b.digest,
                    "size_bytes": b.size,
                    "reused": b.reused,
                }
                for b in built
            ]
        )
        return
    table = Table("framework", "image artifact", "digest", "size", "")
    for b in built:
        table.add_row(
            b.framework,
            b.ref,
            b.digest[7:19],
            f"{b.size / 2**20:,.0f} MiB",
            "reused" if b.reused else "built",
        )
    _out().print(table)


def _image_ref(text: str) -> ArtifactRef:
    if not text.startswith("image/"):
        text = f"image/{text}"
    return ArtifactRef.parse(text)


RegistryOpt = Annotated[
    str, typer.Option(help="Registry HOST:PORT, e.g. 127.0.0.1:5000.", show_default=False)
]


@images_app.command("push")
def images_push(
    image: Annotated[str, typer.Argument(help="An image artifact, image/NAME@VERSION.")],
    registry: RegistryOpt,
    as_json: JsonOpt = False,
) -> None:
    """Push an image artifact to a registry as REGISTRY/NAME:VERSION; print its digest there."""
    from pinbench.images.distribution import push
    from pinbench.images.engine import connect

    with _workspace() as ws:
        done = push(ws, connect(), _image_ref(image), registry)
    if as_json:
        _print_json({"reference": done.reference, "image_id": done.image_id})
        return
    _out().print(f"pushed {done.reference} (image {done.image_id[7:19]})")


@images_app.command("pull")
def images_pull(
    image: Annotated[str, typer.Argument(help="An image artifact, image/NAME@VERSION.")],
    registry: RegistryOpt,
    as_json: JsonOpt = False,
) -> None:
    """Pull an image artifact from a registry by digest; refuse it unless its image ID is the
    artifact's pinned digest."""
    from pinbench.images.distribution import pull
    from pinbench.images.engine import connect

    with _workspace() as ws:
        done = pull(ws, connect(), _image_ref(image), registry)
    if as_json:
        _print_json({"reference": done.reference, "image_id": done.image_id})
        return
    _out().print(f"pulled {done.reference} (image {done.image_id[7:19]}, as pinned)")


# ---------------------------------------------------------------- server and accounts


@app.command("gc")
def gc_cmd(as_json: JsonOpt = False) -> None:
    """Remove scratch in PINBENCH_HOME/tmp (staged publishes, uploads, fetches, run folders)
    left by processes that died, and print what it reclaimed.

    A live process's scratch is never touched, whichever process or host owns it (each holds
    a lock on its scratch while it lives); `pinbench serve` does the same when it starts.
    """
    from pinbench.artifacts.scratch import reclaim

    with _workspace() as ws:
        done = reclaim(ws.store.tmp)
    if as_json:
        _print_json(
            {
                "removed": [{"name": name, "bytes": size} for name, size in done.removed],
                "bytes": done.bytes,
                "kept": done.kept,
            }
        )
        return
    for name, size in done.removed:
        _out().print(f"removed {name} ({size:,} bytes)")
    _out().print(done.summary())


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[
        int, typer.Option(help="Server processes (uvicorn workers); runs execute in each.")
    ] = 1,
    run_workers: Annotated[int, typer.Option(help="Runs executed at once per process.")] = 1,
    run_queue: Annotated[int, typer.Option(help="Runs that may wait; more are refused.")] = 16,
    max_upload_mb: Annotated[int, typer.Option(help="Largest publish upload, in MiB.")] = 2048,
    private: Annotated[
        bool, typer.Option("--private", help="Reads need a token with the 'read' scope too.")
    ] = False,
    allow_pickle: Annotated[
        bool,
        typer.Option(
            "--allow-pickle",
            help="Let models of format torch-pickle whose manifest says `trusted: true` run, "
            "in the docker runner only (unpickling runs the publisher's code). Off: never.",
        ),
    ] = False,
    runners: Annotated[
        str,
        typer.Option(
            "--runners",
            help="Comma-separated runners queued runs may use. A model's own code (TorchScript "
            "ops, SavedModel graphs) runs in the runner: where publishers are not all trusted, "
            "allow only docker.",
        ),
    ] = "local,venv,docker",
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A Host name the server answers to besides loopback and --host (repeat it; "
            "*.DOMAIN for subdomains; also PINBENCH_ALLOWED_HOSTS, comma-separated). Behind a "
            "reverse proxy: the public name the proxy forwards in Host.",
        ),
    ] = None,
) -> None:
    """Serve the REST API (OpenAPI at /schema/openapi.json, docs page at /schema/swagger).

    Reads are public unless --private; publishing needs a token with the 'publish' scope
    whose user is a member of the name's namespace; locking and running need 'run'. Create
    users and tokens with `pinbench user add` and `pinbench token create`.
    """
    import uvicorn

    from pinbench.api import hosts
    from pinbench.api.runpool import STOPPED
    from pinbench.api.server import SETTINGS_ENV, settings_to_env
    from pinbench.artifacts.scratch import reclaim
    from pinbench.evaluator.instances import abandon_expired
    from pinbench.evaluator.runners import RUNNERS, UnknownRunner

    allowed_hosts = hosts.for_serve(host, allowed_host or [])
    allowed_runners = tuple(r.strip() for r in runners.split(",") if r.strip())
    for name in allowed_runners or ("",):
        if name not in RUNNERS:  # refused before the server starts
            raise UnknownRunner(runner=name)
    with _workspace() as ws:
        ws.settings.home.mkdir(parents=True, exist_ok=True)
        db_schema.ensure_current(ws.engine)
        abandoned = abandon_expired(ws, STOPPED)  # never a live server's runs
        reclaimed = reclaim(ws.store.tmp)  # never a live process's scratch
    if abandoned:
        _err().print(f"marked {abandoned} run(s) of servers that stopped interrupted")
    if reclaimed.removed:
        _err().print(reclaimed.summary())
    os.environ[SETTINGS_ENV] = settings_to_env(
        public_read=not private,
        max_upload_bytes=max_upload_mb * 1024 * 1024,
        run_workers=run_workers,
        run_queue=run_queue,
        allow_pickle=allow_pickle,
        runners=allowed_runners,
        allowed_hosts=allowed_hosts,
    )
    _err().print(
        f"pinbench serving on http://{host}:{port} (docs: http://{host}:{port}/schema/swagger)"
    )
    _err().print(f"answering to Host {', '.join(allowed_hosts)}")
    uvicorn.run(
        "pinbench.api.server:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        # uvicorn kills a worker whose health-check thread does not answer in time; runs in
        # a worker (local runner, preprocessing) may hold the GIL for seconds on a busy host
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
        log_level="warning",
        access_log=False,
    )


@user_app.command("add")
def user_add(
    name: Annotated[str, typer.Argument(help="The user's name (lowercase).")],
    admin: Annotated[
        bool, typer.Option("--admin", help="May manage users and namespaces.")
    ] = False,
    namespace: Annotated[
        list[str] | None, typer.Option("--namespace", "-n", help="Namespaces to publish in.")
    ] = None,
) -> None:
    """Add a user, optionally a member of namespaces."""
    with _workspace() as ws, ws.transaction() as session:
        accounts.add_user(session, name, admin=admin)
        for ns in namespace or []:
            accounts.grant(session, name, ns)
    _out().print(f"added user {name}" + (" (admin)" if admin else ""))


@user_app.command("grant")
def user_grant(
    name: Annotated[str, typer.Argument(help="The user.")],
    namespace: Annotated[str, typer.Argument(help="The namespace they may publish in.")],
) -> None:
    """Make a user a member of a namespace."""
    with _workspace() as ws, ws.transaction() as session:
        accounts.grant(session, name, namespace)
    _out().print(f"{name} may publish in {namespace}")


@user_app.command("list")
def user_list(as_json: JsonOpt = False) -> None:
    """Users, whether admin, and their namespaces."""
    with _workspace() as ws, ws.transaction() as session:
        rows = accounts.list_users(session)
    if as_json:
        _print_json(rows)
        return
    table = Table("user", "admin", "namespaces", box=None)
    for r in rows:
        table.add_row(r["name"], "yes" if r["admin"] else "", ", ".join(r["namespaces"]))
    _out().print(table if rows else "no users")


SCOPES_HELP = (
    "Scopes: read, publish, run, admin (repeat the option). Default: read, publish, run; "
    "with PINBENCH_URL: the scopes of PINBENCH_TOKEN, which a new token never exceeds."
)


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Option("--name", help="What the token is for.")] = "cli",
    user: Annotated[
        str | None, typer.Option("--user", help="Whose token (local database only).")
    ] = None,
    scope: Annotated[list[str] | None, typer.Option("--scope", help=SCOPES_HELP)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an API token and print it; it is shown only this once."""
    scopes = scope or list(accounts.DEFAULT_SCOPES)

    def here(ws: Workspace) -> dict[str, Any]:
        owner = _local_user(user)
        with ws.transaction() as session:
            row, text = accounts.create_token(session, owner, name=name, scopes=scopes)
            return {"id": row.id, "token": text, "user": owner, "scopes": list(row.scopes)}

    body = {"name": name, "scopes": scope} if scope else {"name": name}
    info = _remote_or_here(lambda remote: remote.json("POST", "/api/v1/tokens", json=body), here)
    if as_json:
        _print_json(info)
        return
    _out().print(info["token"])
    _err().print(
        f"token {info['id']} for {info['user']} ({', '.join(info['scopes'])}): "
        "store it now, it cannot be shown again"
    )


@token_app.command("list")
def token_list(
    user: Annotated[
        str | None, typer.Option("--user", help="Whose tokens (local database only).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """A user's tokens: id, name, scopes, revoked (never the secrets)."""

    def here(ws: Workspace) -> list[dict[str, Any]]:
        with ws.transaction() as session:
            return accounts.list_tokens(session, _local_user(user))

    rows = _remote_or_here(lambda remote: remote.json("GET", "/api/v1/tokens"), here)
    if as_json:
        _print_json(rows)
        return
    table = Table("id", "name", "scopes", "created", "", box=None)
    for t in rows:
        table.add_row(
            t["id"],
            t["name"],
            ", ".join(t["scopes"]),
            t["created_at"][:16],
            "revoked" if t["revoked"] else "",
        )
    _out().print(table if rows else "no tokens")


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (pbt_<ID>_...).")],
) -> None:
    """Revoke a token: requests with it are refused from now on."""

    def here(ws: Workspace) -> None:
        with ws.transaction() as session:
            accounts.revoke_token(session, token_id)

    _remote_or_here(lambda remote: remote.call("DELETE", f"/api/v1/tokens/{token_id}"), here)
    _out().print(f"revoked token {token_id}")
