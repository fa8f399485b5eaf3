"""Per-run overhead of each runner on the digits model: wall time of `pinbench run` minus the
model time it measured (the sum of its timed query latencies).

Runs `pinbench run LOCKFILE --runner R` as a command, as a user would, for local, venv (its
environment already cached) and docker (image already built), in turn within each run. The
docker runner needs a Docker Engine at DOCKER_HOST; the image is built once first (not timed).
Also reports the framework images' sizes. Targets (issue 4): venv < 1.5 s, docker < 4 s on
the vfs storage driver. Every runner's overhead includes the same 0.5 s warm-up, Python start
and pinbench's imports; "beyond local" subtracts the local runner's overhead measured in the
same run.

    .venv/bin/python -m bench.bench_runners --runs 5
"""

from __future__ import annotations

import json
import os
import subprocess
import time

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
from pinbench.evaluator.run import latencies_of
from pinbench.workspace import Workspace

RUNNERS = ("local", "venv", "docker")
TARGETS = {"venv": 1.5, "docker": 4.0}
REQUEST = {
    "model": "vision/digits-logreg@1.2.0",
    "dataset": "sklearn-digits-test@1",
    "threads": 1,
    "scenario": {"name": "SingleStream", "min_duration_ms": 1000, "min_query_count": 100},
}


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
        ws.close()
    for runner, target in TARGETS.items():
        value = report.metric(f"[{runner}] overhead", "s").median
        report.checks.append(
            Check(f"{runner} overhead", value, "s", f"< {target} s", value < target)
        )
    for image in sizes:
        report.notes.append(f"image {image['artifact']}: {image['size_bytes'] / 2**20:,.0f} MiB")
    report.notes.append(f"storage driver: {_driver()}")
    report.emit(args.json)
    return 0


def _driver() -> str:
    from pinbench.images.engine import connect

    return str(connect().info().get("Driver"))


if __name__ == "__main__":
    raise SystemExit(main())
