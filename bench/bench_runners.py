"""Per-run overhead of each runner on the digits model: wall time of `pinbench run` minus the
model time it measured (the sum of its timed query latencies).

Runs `pinbench run LOCKFILE --runner R` as a command, as a user would, for local, venv (its
environment already cached) and docker (image already built), in turn within each run. The
docker runner needs a Docker Engine at DOCKER_HOST; the image is built once first (not timed).
Also reports the framework images' sizes. Targets (issue 4): venv < 1.5 s, docker < 4 s on
the vfs storage driver. Every runner's overhead includes the same 0.5 s warm-up, Python start
and pinbench's imports; "beyond local" subtracts the local runner's overhead measured in the
same run.

Then the same lockfile through a server (issue 21): ``pinbench serve`` cold and ``pinbench
serve --warm``, each run submitted with ``POST /api/v1/runs`` and timed until its record says
succeeded (polled every 10 ms); overhead = that wall time minus the model time. The first run
on each server is untimed (it builds nothing, but on ``--warm`` it starts the evaluator).
Targets with ``--warm`` (issue 21): venv < 1.5 s, docker < 4 s.

    .venv/bin/python -m bench.bench_runners --runs 5
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from bench._common import (
    VENV_BIN,
    Check,
    Report,
    check_runs,
    command_line,
    log,
    machine,
    parser,
    scratch,
)
from pinbench import catalog
from pinbench.config import Settings
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import latencies_of
from pinbench.workspace import Workspace

RUNNERS = ("local", "venv", "docker")
TARGETS = {"venv": 1.5, "docker": 4.0}
SERVED = ("venv", "docker")
"""The runners a warm evaluator serves."""
POLL_S = 0.01
REQUEST = {
    "model": "vision/digits-logreg@1.2.0",
    "dataset": "sklearn-digits-test@1",
    "threads": 1,
    "scenario": {"name": "SingleStream", "min_duration_ms": 1000, "min_query_count": 100},
}


def published_digits(
    root: Path, parts: tuple[str, ...] = ("digits",)
) -> tuple[dict[str, str], Path]:
    """A fresh home under ``root`` with the digits catalog (and the other catalog ``parts``)
    published and ``REQUEST`` locked: the environment that points the CLI at it, and the
    lockfile's path."""
    env = {**os.environ, "PINBENCH_HOME": str(root / "home"), "PINBENCH_CACHE": str(root / "cache")}
    for name in ("PINBENCH_DATABASE_URL", "PINBENCH_URL", "PINBENCH_TOKEN"):
        env.pop(name, None)
    log("building the digits catalog and publishing it")
    _cli(env, "init")
    for manifest in catalog.build(root / "catalog", list(parts)).manifests:
        _cli(env, "publish", str(manifest))
    (root / "request.yaml").write_text(yaml.safe_dump(REQUEST))
    lock = root / "digits.lock"
    _cli(env, "lock", str(root / "request.yaml"), "-o", str(lock))
    return env, lock


def _cli(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [str(VENV_BIN / "pinbench"), *args], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pinbench {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="runner overhead: wall time of `pinbench run` minus measured model time (digits)",
        command=command_line("bench.bench_runners", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "runners", keep=args.keep) as root:
        home = root / "home"
        env = {**os.environ, "PINBENCH_HOME": str(home), "PINBENCH_CACHE": str(root / "cache")}
        env.pop("PINBENCH_DATABASE_URL", None)
        log("building the digits catalog and publishing it")
        _cli(env, "init")
        for manifest in catalog.build(root / "catalog", ["digits"]).manifests:
            _cli(env, "publish", str(manifest))
        log("building the onnxruntime image (not timed)")
        sizes = json.loads(_cli(env, "images", "build", "onnxruntime", "--json"))
        (root / "request.yaml").write_text(yaml.safe_dump(REQUEST))
        _cli(env, "lock", str(root / "request.yaml"), "-o", str(root / "digits.lock"))
        log("one untimed run per runner (builds the venv, warms the page cache)")
        for runner in RUNNERS:
            _cli(env, "run", str(root / "digits.lock"), "--runner", runner, "--json")
        ws = Workspace(Settings(home=home, database_url=f"sqlite:///{home / 'pinbench.db'}"))
        for run in range(runs):
            order = RUNNERS if run % 2 == 0 else tuple(reversed(RUNNERS))
            overhead: dict[str, float] = {}
            for runner in order:
                log(f"run {run + 1}/{runs}: {runner}")
                started = time.perf_counter()
                out = _cli(env, "run", str(root / "digits.lock"), "--runner", runner, "--json")
                wall = time.perf_counter() - started
                info = json.loads(out)
                model = float(latencies_of(ws, info["latencies_sha256"]).sum()) / 1e9
                overhead[runner] = wall - model
                report.metric(f"[{runner}] wall time", "s").values.append(wall)
                report.metric(f"[{runner}] model time (sum of latencies)", "s").values.append(model)
            for runner in RUNNERS:
                report.metric(f"[{runner}] overhead", "s").values.append(overhead[runner])
                if runner != "local":
                    report.metric(f"[{runner}] overhead beyond local", "s").values.append(
                        overhead[runner] - overhead["local"]
                    )
        _cli(env, "user", "add", "bench")
        token = json.loads(
            _cli(env, "token", "create", "--user", "bench", "--scope", "run", "--json")
        )["token"]
        os.environ["PINBENCH_CACHE"] = env["PINBENCH_CACHE"]  # the servers' venvs: the same
        for warm in (False, True):
            _served(report, token, home, ws, runs, warm=warm)
        ws.close()
    for runner, target in TARGETS.items():
        value = report.metric(f"[{runner}] overhead", "s").median
        report.checks.append(
            Check(f"{runner} overhead", value, "s", f"< {target} s", value < target)
        )
        value = report.metric(f"[{runner}, serve --warm] overhead", "s").median
        report.checks.append(
            Check(f"{runner} overhead, warm", value, "s", f"< {target} s", value < target)
        )
    for image in sizes:
        report.notes.append(f"image {image['artifact']}: {image['size_bytes'] / 2**20:,.0f} MiB")
    report.notes.append(f"storage driver: {_driver()}")
    report.emit(args.json)
    return 0


def _served(
    report: Report, token: str, home: Path, ws: Workspace, runs: int, *, warm: bool
) -> None:
    """Time runs submitted to ``pinbench serve`` (``--warm`` or not) through its API."""
    import httpx

    from tests.apiserver import serve

    label = "serve --warm" if warm else "serve"
    headers = {"Authorization": f"Bearer {token}"}
    args = ("--run-workers", "1", *(["--warm"] if warm else []))
    log(f"starting pinbench {label}")
    with (
        serve(home, ws.settings.database_url, *args) as url,
        httpx.Client(base_url=url, headers=headers, timeout=120) as c,
    ):
        points = c.post("/api/v1/lockfiles", json=REQUEST)
        points.raise_for_status()
        digest = points.json()["points"][0]["digest"]
        for runner in SERVED:
            _submit(c, digest, runner)  # untimed: on --warm it starts the evaluator
        for run in range(runs):
            for runner in SERVED if run % 2 == 0 else tuple(reversed(SERVED)):
                log(f"{label}, run {run + 1}/{runs}: {runner}")
                wall, answered = _submit(c, digest, runner)
                info = show_run(ws, answered["id"])  # as recorded, the latencies' digest too
                environment = info["details"]["environment"]
                if warm and not environment.get("warm"):
                    raise RuntimeError(f"a {label} run was not warm: {environment}")
                model = float(latencies_of(ws, info["latencies_sha256"]).sum()) / 1e9
                report.metric(f"[{runner}, {label}] wall time", "s").values.append(wall)
                report.metric(f"[{runner}, {label}] overhead", "s").values.append(wall - model)


def _submit(c: Any, digest: str, runner: str) -> tuple[float, dict[str, Any]]:
    """Submit one run and wait for its record: the wall time and the run."""
    started = time.perf_counter()
    queued = c.post("/api/v1/runs", json={"lockfile": digest, "runner": runner})
    queued.raise_for_status()
    run_id = queued.json()["id"]
    while True:
        info: dict[str, Any] = c.get(f"/api/v1/runs/{run_id}").json()
        if info["status"] not in ("queued", "running"):
            break
        time.sleep(POLL_S)
    wall = time.perf_counter() - started
    if info["status"] != "succeeded":
        raise RuntimeError(f"run {run_id} {info['status']}: {info.get('error')}")
    return wall, info


def _driver() -> str:
    from pinbench.images.engine import connect

    return str(connect().info().get("Driver"))


if __name__ == "__main__":
    raise SystemExit(main())
