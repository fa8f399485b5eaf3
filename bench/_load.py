"""HTTP load with ``wrk``, and MLflow's model-registry REST server as the baseline to load.

``run_wrk`` drives one URL with Debian's ``wrk`` and parses its ``--latency`` report.
``ensure_mlflow_venv`` keeps MLflow in a venv of its own (it does not fit the project's
dependencies), ``mlflow_server`` runs ``mlflow server`` with its defaults on SQLite or PostgreSQL,
and ``register_model_version`` makes the model version whose ``model-versions/get`` is loaded.

Try it: ``python -m bench._load --backend sqlite --seconds 30 --connections 64``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from bench._common import REPO, load_average, log, run_checked

DEFAULT_ROOT = REPO / ".bench"
MLFLOW_VERSION = "3.17.2"
# psycopg 3 (``psycopg[binary]``): SQLAlchemy 2.1, which MLflow 3.17 installs, makes it the driver
# of a bare ``postgresql://`` URL; the URLs here name it, ``postgresql+psycopg://``, anyway.
MLFLOW_REQUIREMENTS = (f"mlflow=={MLFLOW_VERSION}", "psycopg==3.3.9", "psycopg-binary==3.3.9")
UV = Path(sys.executable).parent / "uv"
WRK = "/usr/bin/wrk"
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
QUIET_TIMEOUT_S = 120.0

Backend = Literal["sqlite", "postgresql"]


# ---------------------------------------------------------------- wrk


@dataclass(frozen=True)
class WrkResult:
    """One ``wrk`` run. Latencies in milliseconds, from wrk's ``--latency`` distribution.

    ``non_2xx_3xx`` counts error responses. A run with any, or with socket errors, is not ``ok``:
    it measured errors rather than the service, and ``check`` refuses it. Responses slower than
    wrk's 2 s timeout count in ``socket_timeout`` and are left out of the latency distribution.
    """

    url: str
    threads: int
    connections: int
    seconds: int
    requests: int
    requests_per_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    non_2xx_3xx: int
    socket_connect: int
    socket_read: int
    socket_write: int
    socket_timeout: int
    output: str = field(repr=False, compare=False)

    @property
    def socket_errors(self) -> int:
        return self.socket_connect + self.socket_read + self.socket_write + self.socket_timeout

    @property
    def ok(self) -> bool:
        """Every request answered 2xx/3xx, none lost to a socket error."""
        return self.requests > 0 and self.non_2xx_3xx == 0 and self.socket_errors == 0

    def check(self) -> WrkResult:
        """Return self, or raise if the run measured errors instead of the service."""
        if not self.ok:
            raise RuntimeError(
                f"wrk on {self.url}: {self.requests} requests, {self.non_2xx_3xx} non-2xx/3xx, "
                f"{self.socket_errors} socket errors (connect {self.socket_connect}, read "
                f"{self.socket_read}, write {self.socket_write}, timeout {self.socket_timeout})"
                f"; refusing the result\n{self.output}"
            )
        return self

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["output"]
        data["socket_errors"] = self.socket_errors
        data["ok"] = self.ok
        return data


_TIME_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text)
    if match is None:
        raise ValueError(f"unrecognised wrk duration {text!r}")
    return round(float(match[1]) * _TIME_UNITS_MS[match[2]], 6)


def parse_wrk(output: str, *, url: str, threads: int, connections: int, seconds: int) -> WrkResult:
    """Parse the report of ``wrk --latency``; raise naming the line that is missing."""

    def find(pattern: str, what: str) -> re.Match[str]:
        match = re.search(pattern, output, re.MULTILINE)
        if match is None:
            raise RuntimeError(f"wrk output has no {what} line:\n{output}")
        return match

    percentiles = {p: _ms(find(rf"^\s*{p}%\s+(\S+)\s*$", f"{p}% latency")[1]) for p in (50, 90, 99)}
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    connect, read, write, timeout = (int(n) for n in sockets.groups()) if sockets else (0,) * 4
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return WrkResult(
        url=url,
        threads=threads,
        connections=connections,
        seconds=seconds,
        requests=int(find(r"^\s*(\d+) requests in ", "'N requests in'")[1]),
        requests_per_s=float(find(r"^Requests/sec:\s+([0-9.]+)", "Requests/sec")[1]),
        p50_ms=percentiles[50],
        p90_ms=percentiles[90],
        p99_ms=percentiles[99],
        non_2xx_3xx=int(non_2xx[1]) if non_2xx else 0,
        socket_connect=connect,
        socket_read=read,
        socket_write=write,
        socket_timeout=timeout,
        output=output,
    )


WRK_TIMEOUT_S = 30


def run_wrk(url: str, *, connections: int = 64, seconds: int = 30, threads: int = 2) -> WrkResult:
    """``wrk -t{threads} -c{connections} -d{seconds}s --timeout 30s --latency URL``, parsed.

    wrk's own 2 s timeout drops slow answers from the latency figures (a slow server would
    look faster); 30 s keeps them in."""
    cmd = [WRK, f"-t{threads}", f"-c{connections}", f"-d{seconds}s",
           f"--timeout={WRK_TIMEOUT_S}s", "--latency", url]  # fmt: skip
    output = run_checked(cmd)
    return parse_wrk(output, url=url, threads=threads, connections=connections, seconds=seconds)


# ---------------------------------------------------------------- MLflow's venv


def _pip_index_args() -> list[str]:
    """pip's configured indexes (``pip config list``) as uv arguments: uv does not read them."""
    listing = run_checked([sys.executable, "-m", "pip", "config", "list"])
    config: dict[str, str] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            config[key.split(".", 1)[-1]] = value.strip().strip("'\"")
    args = ["--index-url", config.get("index-url", "https://pypi.org/simple")]
    for url in config.get("extra-index-url", "").split():
        args += ["--extra-index-url", url]
    for url in config.get("find-links", "").split():
        args += ["--find-links", url]
    return [*args, "--index-strategy", "unsafe-best-match"]


def ensure_mlflow_venv(root: Path = DEFAULT_ROOT) -> Path:
    """``root/mlflow-venv`` with ``MLFLOW_REQUIREMENTS`` installed; reused when it has them."""
    venv = root / "mlflow-venv"
    python = venv / "bin" / "python"
    check = (
        "import importlib.metadata as m; "
        "print(' '.join(f'{d}=={m.version(d)}' for d in ('mlflow', 'psycopg', 'psycopg-binary')))"
    )
    if python.exists():
        found = subprocess.run([python, "-c", check], capture_output=True, text=True, check=False)
        if found.stdout.split() == list(MLFLOW_REQUIREMENTS):
            return venv
    log(f"creating {venv} with {' '.join(MLFLOW_REQUIREMENTS)}")
    root.mkdir(parents=True, exist_ok=True)
    run_checked([str(UV), "venv", "--clear", "--python", sys.executable, str(venv)])
    install = [str(UV), "pip", "install", "--python", str(python), *_pip_index_args()]
    run_checked([*install, *MLFLOW_REQUIREMENTS])
    return venv


def mlflow_version(venv: Path) -> str:
    code = "import mlflow, sqlalchemy; print(mlflow.__version__, sqlalchemy.__version__)"
    mlflow, sqlalchemy = run_checked([str(venv / "bin" / "python"), "-c", code]).split()
    return f"mlflow {mlflow} (sqlalchemy {sqlalchemy})"


# ---------------------------------------------------------------- MLflow's server


def _free_port() -> int:
    from tests.pg import free_port

    return free_port()


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


def _get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _group(pgid: int) -> list[Path]:
    """``/proc/PID`` of each live process in process group ``pgid``."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:  # after the name: state, ppid, pgrp
            found.append(proc)
    return found


def _group_cpu_s(pgid: int) -> float:
    """CPU seconds used so far by the live processes of process group ``pgid``."""
    ticks = 0
    for proc in _group(pgid):
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def _server_command(pgid: int) -> str:
    """The HTTP server ``mlflow server`` started (uvicorn or gunicorn, with its worker count)."""
    for proc in _group(pgid):
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(server in argv for server in ("uvicorn", "gunicorn")):
            return shlex.join(arg for arg in argv if arg)
    return "(no uvicorn or gunicorn process found)"


def _wait_quiet(pgid: int, *, window_s: float = 2.0, limit_s: float = QUIET_TIMEOUT_S) -> None:
    """Wait until the group's processes stop starting up (under 5 % of a core for a window).

    ``/health`` answers while MLflow's job runner is still importing its consumers; load
    generated then would compete with that start-up for the CPU.
    """
    deadline = time.monotonic() + limit_s
    before = _group_cpu_s(pgid)
    while time.monotonic() < deadline:
        time.sleep(window_s)
        after = _group_cpu_s(pgid)
        if after - before < 0.05 * window_s:
            return
        before = after
    log(f"MLflow's processes still busy after {limit_s:.0f} s; measuring anyway")


def _gone(proc: subprocess.Popen[bytes], wait_s: float) -> bool:
    """Whether the process group led by ``proc`` has ended within ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader; its orphans go to init, which reaps them
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group; SIGKILL what is left of it after ``STOP_TIMEOUT_S``."""
    for sig, wait_s in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        if _gone(proc, wait_s):
            break
    proc.wait()


@contextmanager
def mlflow_server(venv: Path, backend_uri: str, port: int, workdir: Path) -> Iterator[str]:
    """Run ``mlflow server`` (its defaults otherwise) until exit; yield its base URL.

    Ready once ``GET /health`` answers 200 and its processes have gone quiet (``_wait_quiet``).
    Its log is ``workdir/mlflow.log``; a server that exits or does not answer ``GET /health``
    within ``START_TIMEOUT_S`` raises with the log's tail. At exit its process group is stopped.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "mlflow.log"
    cmd = [
        str(venv / "bin" / "mlflow"),
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--backend-store-uri",
        backend_uri,
        "--default-artifact-root",
        f"file://{workdir / 'artifacts'}",
    ]
    base = f"http://127.0.0.1:{port}"
    log(f"starting {shlex.join(cmd)}")
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=workdir, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"MLflow server exited {proc.returncode} before answering {base}/health; "
                    f"log {log_path}:\n{_tail(log_path)}"
                )
            try:
                status, _ = _get(f"{base}/health", timeout=2.0)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"MLflow server did not answer {base}/health within {START_TIMEOUT_S:.0f} s; "
                    f"log {log_path}:\n{_tail(log_path)}"
                )
            time.sleep(0.5)
        log(f"MLflow answers {base}/health; waiting for its processes to go quiet")
        _wait_quiet(proc.pid)
        log(f"MLflow's server: {_server_command(proc.pid)}; {len(_group(proc.pid))} processes")
        yield base
    finally:
        _stop(proc)


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            answer: dict[str, Any] = json.loads(response.read() or b"{}")
            return answer
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"POST {url} {body}: HTTP {exc.code}: {exc.read()!r}") from exc


def register_model_version(base_url: str, name: str) -> str:
    """Create registered model ``name`` and its version 1; return that version's GET URL.

    The source is a remote URI that is never fetched: MLflow refuses a local path as a source
    unless it lies inside the artifact directory of a run named by ``run_id``.
    """
    api = f"{base_url}/api/2.0/mlflow"
    _post(f"{api}/registered-models/create", {"name": name})
    source = f"s3://pinbench-bench/models/{name}"
    created = _post(f"{api}/model-versions/create", {"name": name, "source": source})
    version = created["model_version"]["version"]
    if str(version) != "1":
        raise RuntimeError(f"model {name!r}: expected version 1, MLflow created {version!r}")
    url = f"{api}/model-versions/get?" + urllib.parse.urlencode({"name": name, "version": 1})
    status, answer = _get(url)
    if status != 200:
        raise RuntimeError(f"GET {url}: HTTP {status}: {answer!r}")
    return url


# ---------------------------------------------------------------- the baseline


@contextmanager
def _backend_uri(kind: Backend, workdir: Path) -> Iterator[str]:
    """A fresh, empty MLflow backend store: a SQLite file, or a ``mlflow`` PostgreSQL database."""
    if kind == "sqlite":
        yield f"sqlite:///{workdir / 'mlflow.db'}"
        return
    import psycopg

    from tests.pg import postgres_server

    with postgres_server() as url:  # postgresql+psycopg://pinbench@127.0.0.1:PORT/postgres
        server = url.rsplit("/", 1)[0]
        libpq = server.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(f"{libpq}/postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE mlflow")
        yield f"{server}/mlflow"


def measure_mlflow(
    kind: Backend,
    *,
    seconds: int = 30,
    connections: int = 64,
    threads: int = 2,
    warmup: int = 3,
    root: Path = DEFAULT_ROOT,
) -> WrkResult:
    """Load ``model-versions/get`` of a fresh MLflow server on ``kind``; raise on any error.

    A ``warmup``-second wrk run at the same load precedes the measured one (0: none).
    """
    venv = ensure_mlflow_venv(root)
    workdir = Path(tempfile.mkdtemp(prefix=f"mlflow-{kind}-", dir=root))
    try:
        with (
            _backend_uri(kind, workdir) as backend,
            mlflow_server(venv, backend, _free_port(), workdir) as base,
        ):
            url = register_model_version(base, "pinbench-model")
            log(f"wrk on {url}: {warmup} s warm-up, {seconds} s measured; load {load_average()}")
            if warmup > 0:  # not checked: the first requests of a cold server may time out
                cold = run_wrk(url, connections=connections, seconds=warmup, threads=threads)
                log(f"warm-up: {cold.requests} requests, {cold.socket_errors} socket errors")
            return run_wrk(url, connections=connections, seconds=seconds, threads=threads).check()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="MLflow model-registry REST baseline under wrk")
    p.add_argument("--backend", choices=["sqlite", "postgresql"], action="append")
    p.add_argument("--seconds", type=int, default=30)
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    args = p.parse_args(argv)
    venv = ensure_mlflow_venv(args.root)
    version = mlflow_version(venv)
    for kind in args.backend or ["sqlite", "postgresql"]:
        result = measure_mlflow(
            kind,
            seconds=args.seconds,
            connections=args.connections,
            threads=args.threads,
            warmup=args.warmup,
            root=args.root,
        )
        print(json.dumps({"backend": kind, "version": version, **result.to_json()}))
        print(result.output, file=sys.stderr)


if __name__ == "__main__":
    main()
