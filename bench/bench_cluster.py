"""Runs on a Ray cluster (issue 21): (a) dispatch overhead per run, cluster vs the local pool;
(b) ``--count`` short runs submitted at once over one agent and over two; (d) ``--count`` runs
with one of two agents stopped halfway, every record accounted for.

Everything runs on this machine, in a real Ray cluster inside a loopback-only network namespace
(``tests/cluster.py``: a head node without a system, then agents ``bench-a`` and, for (b) and
(d), ``bench-b``, each its own Ray node and blob cache). This process joins the namespace's
network (``setns``) to reach the servers there; nothing ever contacts the machine's outside
address. The database is SQLite; the model is the cluster tests' (digits logistic regression
on ONNX Runtime, 32 queries). A run's time is from its POST to its record's ``finished_at``
(stamped in the transaction that records it terminal), both on this machine's clock.

(a) ``pinbench serve --run-workers 1`` (the local pool) and ``pinbench serve --cluster
--run-workers 1`` with one agent, the same lockfile submitted one at a time through ``POST
/api/v1/runs`` and ``POST /api/v1/runs/on`` (``--dispatch`` runs per side, alternating), one
untimed run on each first. Overhead = that time minus the model time the run measured (the sum
of its query latencies); also split into the POST's answer and the rest. Three modes: the
``local`` runner (in the server's or the agent actor's own process: the dispatch path alone);
the ``venv`` runner cold; and warm (``serve --warm``, and ``bench-a`` restarted with ``agent
start --warm`` for this mode, measured after the other two), each run checked to be recorded
warm. The venv environment is
built once beforehand, outside the namespace (it installs packages), into a cache the servers
and agents share (``PINBENCH_CACHE``); ``--no-venv`` skips both venv modes. Target, per mode:
cluster p50 <= local p50 + 50 ms.

(b) ``serve --cluster --run-workers 8``, the ``local`` runner: ``--count`` runs POSTed at
once (8 at a time), each naming one system (all ``bench-a``; then ``bench-a`` and ``bench-b``
in turn); runs/s = count / (last ``finished_at`` - first POST); scaling = 2 agents / 1 agent.
The CPU seconds each kind of process used over the burst (from /proc) say what bounds it.

(d) once, after the rest: ``--count`` runs (POSTs naming both agents, ``retries`` 1); when half
are recorded, ``bench-b``'s agent is stopped with SIGTERM, by PID, as tests/test_cluster_runs.py
does (its Ray node stops with it); the records are then counted per chain of attempts
(``retry_of``): every logical run succeeded once, or failed with its reason; none lost, none
with two succeeded records.

    .venv/bin/python -m bench.bench_cluster --runs 3 [--count 100] [--dispatch 20] [--only a]

Needs root, ``unshare``/``nsenter`` (util-linux) and ``ip`` (iproute2), as the cluster tests.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from sqlalchemy import select

from bench._common import (
    Check,
    Report,
    check_runs,
    command_line,
    log,
    machine,
    parser,
    percentile,
    run_checked,
    scratch,
)
from pinbench import catalog
from pinbench.config import Settings
from pinbench.db.models import Run
from pinbench.evaluator.run import latencies_of
from pinbench.workspace import Workspace
from tests.apiserver import seed
from tests.cluster import ADDRESS, BIN, Agent, Cluster, Namespace, ray_cluster, served
from tests.pg import free_port

REQUEST = {
    "model": "vision/digits-logreg@^1",
    "framework": "onnxruntime@*",
    "dataset": "sklearn-digits-test@^1",
    "scenario": {"min_duration_ms": 0, "min_query_count": 32, "max_query_count": 32},
}
RUNNER = "local"
TARGET_S = 0.050
BURST_WORKERS = 8
"""``--run-workers`` of the server in (b) and (d): enough threads that a run waiting for a busy
agent rarely leaves the other agent idle (each agent runs one evaluation at a time)."""
SUBMITTERS = 8
"""Concurrent POSTs in (b) and (d): "submitted at once" (one POST /runs/on takes a few tenths of
a second: it asks every agent for its facts)."""
TERMINAL = {"succeeded", "failed", "interrupted", "cancelled"}
POLL_S = 0.05
CLONE_NEWNET = 0x40000000
AGENTS = ("bench-a", "bench-b")


def _join_network(ns: Namespace) -> None:
    """Move this thread (the benchmark's only one) into the namespace's network."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/proc/{ns.inner}/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into the cluster's network: {os.strerror(err)}")
    finally:
        os.close(fd)


# ---------------------------------------------------------------- records


@dataclass(frozen=True)
class Record:
    id: str
    status: str
    system: str | None
    retry_of: str | None
    error: str | None
    finished: float | None
    """``finished_at`` as a Unix time."""
    latencies: str | None
    warm: bool
    """``details.environment.warm``: a warm evaluator that had served runs before ran it."""


def _unix(at: datetime | None) -> float | None:
    if at is None:
        return None
    return (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).timestamp()


def records(ws: Workspace, ids: Sequence[str]) -> dict[str, Record]:
    """The runs ``ids`` and every retry descended from them."""
    found: dict[str, Record] = {}
    wanted = list(ids)
    with ws.transaction() as session:
        while wanted:
            rows = session.scalars(
                select(Run).where(Run.id.in_(wanted) | Run.retry_of.in_(wanted))
            ).all()
            fresh = [r for r in rows if r.id not in found]
            for r in fresh:
                found[r.id] = Record(
                    r.id,
                    r.status,
                    r.system,
                    r.retry_of,
                    r.error,
                    _unix(r.finished_at),
                    r.latencies_sha256,
                    bool(((r.details or {}).get("environment") or {}).get("warm")),
                )
            wanted = [r.id for r in fresh]
    return found


def settled(ws: Workspace, ids: Sequence[str], *, timeout: float = 1800) -> dict[str, Record]:
    """Wait until ``ids`` and their retries are all terminal, twice in a row (a lost run is
    recorded failed a moment before its retry is queued)."""
    deadline = time.monotonic() + timeout
    calm = 0
    while time.monotonic() < deadline:
        found = records(ws, ids)
        done = len(found) >= len(ids) and all(r.status in TERMINAL for r in found.values())
        calm = calm + 1 if done else 0
        if calm >= 2:
            return found
        time.sleep(POLL_S if len(ids) == 1 else 0.5)
    raise RuntimeError(f"runs not finished within {timeout:.0f} s")


# ---------------------------------------------------------------- the API


@dataclass
class Api:
    url: str
    token: str

    def post(self, path: str, body: dict[str, Any]) -> Any:
        answer = httpx.post(
            self.url + path,
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=60,
        )
        if answer.status_code >= 400:
            raise RuntimeError(f"POST {path}: {answer.status_code} {answer.text[:2000]}")
        return answer.json()

    def lock(self) -> str:
        return str(self.post("/api/v1/lockfiles", REQUEST)["points"][0]["digest"])

    def submit(
        self, lock: str, on: Sequence[str] | None, *, runner: str = RUNNER, retries: int = 1
    ) -> list[str]:
        """Queue a run (on the server's own machine, or one per system ``on``); the ids."""
        if on is None:
            return [str(self.post("/api/v1/runs", {"lockfile": lock, "runner": runner})["id"])]
        body = {"lockfile": lock, "on": list(on), "runner": runner, "retries": retries}
        return [str(v["id"]) for v in self.post("/api/v1/runs/on", body)]


def one_run(ws: Workspace, side: Side, lock: str) -> tuple[float, float, float, bool]:
    """Submit one run and wait for it: (POST to record, POST answered, model time) in seconds,
    and whether it was recorded warm."""
    started = time.time()
    (run_id,) = side.api.submit(lock, side.on, runner=side.runner)
    answered = time.time() - started
    record = settled(ws, [run_id])[run_id]
    if record.status != "succeeded" or record.finished is None or record.latencies is None:
        raise RuntimeError(f"run {run_id} {record.status}: {record.error}")
    model = float(latencies_of(ws, record.latencies).sum()) / 1e9
    return record.finished - started, answered, model, record.warm


# ---------------------------------------------------------------- CPU


def _cpu_by_process() -> dict[int, tuple[str, float]]:
    """Every process's (kind, CPU seconds so far)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[str, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        out[int(entry.name)] = (_kind(cmdline), (int(fields[11]) + int(fields[12])) / tick)
    return out


def _kind(cmdline: str) -> str:
    if "pinbench serve" in cmdline:
        return "server"
    if cmdline.startswith("ray::"):
        return "Ray workers (agent actors)"
    for name in ("raylet", "gcs_server"):
        if name in cmdline:
            return name
    if "pinbench agent" in cmdline:
        return "pinbench agent"
    if "ray" in cmdline:
        return "other Ray"
    if "bench.bench_cluster" in cmdline:
        return "this benchmark"
    return "rest of the machine"


def _busy_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


@dataclass
class CpuSample:
    processes: dict[int, tuple[str, float]]
    jiffies: tuple[int, int]

    @classmethod
    def now(cls) -> CpuSample:
        return cls(_cpu_by_process(), _busy_jiffies())

    def since(self, before: CpuSample) -> tuple[float, dict[str, float]]:
        """Busy fraction of the machine's CPUs, and CPU seconds per kind of process."""
        busy = self.jiffies[0] - before.jiffies[0]
        total = self.jiffies[1] - before.jiffies[1]
        kinds: dict[str, float] = {}
        for pid, (kind, seconds) in self.processes.items():
            used = seconds - before.processes.get(pid, (kind, 0.0))[1]
            kinds[kind] = kinds.get(kind, 0.0) + used
        return busy / total if total else 0.0, kinds


# ---------------------------------------------------------------- the benchmarks


def submit_all(api: Api, lock: str, on: Sequence[list[str]]) -> list[str]:
    """POST one request per entry of ``on``, ``SUBMITTERS`` at a time (threads created here
    share this thread's network namespace); the run ids, in order."""
    with ThreadPoolExecutor(SUBMITTERS, thread_name_prefix="submit") as pool:
        answers = list(pool.map(lambda systems: api.submit(lock, systems), on))
    return [run_id for ids in answers for run_id in ids]


@dataclass(frozen=True)
class Side:
    """Where (a) sends a run: a server, the systems named (None: the server's own pool), the
    runner."""

    api: Api
    on: list[str] | None
    runner: str


def dispatch(
    report: Report,
    ws: Workspace,
    modes: dict[str, dict[str, Side]],
    lock: str,
    runs: int,
    count: int,
) -> None:
    """(a): per benchmark run and mode, ``count`` runs on each side, one at a time,
    alternating which side goes first."""
    log("(a) one untimed run on each side of each mode (imports, environments, warm processes)")
    for sides in modes.values():
        for side in sides.values():
            one_run(ws, side, lock)
    for run in range(runs):
        for mode, sides in modes.items():
            overhead: dict[str, list[float]] = {name: [] for name in sides}
            answered: dict[str, list[float]] = {name: [] for name in sides}
            after: dict[str, list[float]] = {name: [] for name in sides}
            warm: dict[str, int] = {name: 0 for name in sides}
            for i in range(count):
                order = list(sides) if (run + i) % 2 == 0 else list(reversed(sides))
                for name in order:
                    wall, post, model, was_warm = one_run(ws, sides[name], lock)
                    overhead[name].append(wall - model)
                    answered[name].append(post)
                    after[name].append(wall - model - post)
                    warm[name] += was_warm
                    report.metric(f"[a] {mode}, {name}: model time", "s").values.append(model)
            p50 = {name: percentile(values, 50) for name, values in overhead.items()}
            log(
                f"(a) run {run + 1}/{runs}, {mode}: p50 overhead "
                + ", ".join(f"{k} {v:.4f} s" for k, v in p50.items())
            )
            for name, value in p50.items():
                report.metric(f"[a] {mode}, {name}: overhead p50", "s").values.append(value)
                report.metric(f"[a] {mode}, {name}: POST answered p50", "s").values.append(
                    percentile(answered[name], 50)
                )
                report.metric(f"[a] {mode}, {name}: after the POST p50", "s").values.append(
                    percentile(after[name], 50)
                )
                if mode.endswith("warm"):
                    report.metric(
                        f"[a] {mode}, {name}: runs recorded warm", "fraction"
                    ).values.append(warm[name] / count)
            report.metric(f"[a] {mode}: cluster p50 - local p50", "s").values.append(
                p50["cluster"] - p50["local pool"]
            )


def burst(
    report: Report, ws: Workspace, api: Api, lock: str, agents: Sequence[str], count: int
) -> None:
    """(b): ``count`` runs POSTed at once, spread over ``agents`` in turn."""
    label = f"[b] {len(agents)} agent{'s' if len(agents) > 1 else ''}"
    before = CpuSample.now()
    started = time.time()
    ids = submit_all(api, lock, [[agents[n % len(agents)]] for n in range(count)])
    posted = time.time() - started
    found = settled(ws, ids)
    after = CpuSample.now()
    failed = [r for r in found.values() if r.status != "succeeded"]
    if failed:
        raise RuntimeError(f"{len(failed)} runs did not succeed: {failed[0].error}")
    elapsed = max(r.finished or 0.0 for r in found.values()) - started
    busy, kinds = after.since(before)
    log(f"{label}: {count} runs in {elapsed:.2f} s (POSTs took {posted:.2f} s), CPU {busy:.0%}")
    report.metric(f"{label}: runs/s", "runs/s", better="higher").values.append(count / elapsed)
    report.metric(f"{label}: time to submit all", "s").values.append(posted)
    report.metric(f"{label}: machine CPU busy", "fraction").values.append(busy)
    for kind, seconds in sorted(kinds.items()):
        report.metric(f"{label}: CPU s per run, {kind}", "s").values.append(seconds / count)


def killed(
    report: Report, ws: Workspace, api: Api, lock: str, cluster: Cluster, count: int
) -> bool:
    """(d): ``count`` runs over two agents; the second stopped when half are recorded."""
    on = [list(AGENTS) if n + 1 < count else [AGENTS[0]] for n in range(0, count, 2)]
    roots = submit_all(api, lock, on)
    log(f"(d) {len(roots)} runs queued; waiting for half to be recorded")
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        found = records(ws, roots)
        if sum(found[r].status in TERMINAL for r in roots if r in found) >= count // 2:
            break
        time.sleep(0.2)
    log(f"(d) stopping agent {AGENTS[1]} (SIGTERM to its PID)")
    cluster.agents[AGENTS[1]].stop(signal.SIGTERM)
    found = settled(ws, roots)
    children: dict[str, list[Record]] = {}
    for r in found.values():
        if r.retry_of is not None:
            children.setdefault(r.retry_of, []).append(r)
    accounted = lost = doubled = ended_failed = 0
    for root in roots:
        chain: list[Record] = []
        here = found.get(root)
        while here is not None:
            chain.append(here)
            nxt = children.get(here.id, [])
            if len(nxt) > 1:
                doubled += 1  # two retries of one attempt
            here = nxt[0] if nxt else None
        wins = sum(r.status == "succeeded" for r in chain)
        last = chain[-1] if chain else None
        if wins > 1:
            doubled += 1
        if last is not None and last.status == "succeeded" and wins == 1:
            accounted += 1
        elif last is not None and last.status == "failed" and last.error and wins == 0:
            accounted += 1
            ended_failed += 1
        else:
            lost += 1
    counts = {
        "records": len(found),
        "logical runs submitted": len(roots),
        "logical runs accounted for": accounted,
        "succeeded records": sum(r.status == "succeeded" for r in found.values()),
        "failed: system lost during the run": sum(
            r.status == "failed" and "lost during the run" in (r.error or "")
            for r in found.values()
        ),
        "retry records": sum(r.retry_of is not None for r in found.values()),
        "logical runs ending failed (with a reason)": ended_failed,
        "lost": lost,
        "doubled": doubled,
    }
    for name, value in counts.items():
        report.metric(f"[d] {name}", "count").values.append(float(value))
    log("(d) " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return accounted == len(roots) == count and lost == 0 and doubled == 0


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--count", type=int, default=100, help="runs in (b) and (d) (default 100)")
    p.add_argument("--dispatch", type=int, default=20, help="runs per side per mode in (a)")
    p.add_argument("--no-venv", action="store_true", help="(a) with the local runner only")
    p.add_argument("--only", choices=["a", "b", "d"], action="append", help="repeatable")
    args = p.parse_args(argv)
    runs = check_runs(args)
    if args.count < 2 or args.dispatch < 1:
        raise SystemExit("--count must be at least 2 and --dispatch at least 1")
    only = set(args.only or ["a", "b", "d"])
    report = Report(
        title="runs on a Ray cluster: dispatch overhead, burst throughput, an agent lost",
        command=command_line("bench.bench_cluster", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "cluster", keep=args.keep) as root:
        log("building the digits catalog and publishing it")
        home, url = root / "home", f"sqlite:///{root / 'pinbench.db'}"
        catalog.build(root / "catalog", ["digits"])
        ws = Workspace(Settings(home=home, database_url=url))
        try:
            tokens, _ = seed(ws, root / "catalog")
            venv = "a" in only and not args.no_venv
            env = {**os.environ, "PINBENCH_HOME": str(home), "PINBENCH_DATABASE_URL": url}
            env["PINBENCH_CACHE"] = str(root / "environments")
            if venv:
                _build_environment(root, env)
            log("starting a Ray head in a loopback-only namespace")
            with ray_cluster(home, url, {}) as cluster:
                cluster.env["PINBENCH_CACHE"] = env["PINBENCH_CACHE"]  # the environment built
                _join_network(cluster.ns)
                start_agent(cluster, AGENTS[0], root / "cache-a")
                if "a" in only:
                    _dispatch(report, ws, cluster, tokens, root, runs, args.dispatch, venv=venv)
                if only & {"b", "d"}:
                    start_agent(cluster, AGENTS[1], root / "cache-b")
                    _burst_and_kill(report, ws, cluster, tokens, only, runs, args.count)
        finally:
            ws.close()
    report.notes.append(
        "(a) cluster runs on agents named in the POST; the local runner evaluates in the "
        f"server's (or agent actor's) own process; (b) and (d): runner {RUNNER}, server "
        f"--run-workers {BURST_WORKERS}"
    )
    report.emit(args.json)
    return 0


def _build_environment(root: Path, env: dict[str, str]) -> None:
    """Build the venv runner's environment outside the namespace (it installs packages),
    into the cache the servers and agents then use: one CLI run, not timed."""
    log("building the venv runner's environment (one `pinbench run --runner venv`, untimed)")
    (root / "request.yaml").write_text(yaml.safe_dump(REQUEST))
    lock = root / "digits.lock"
    run_checked(
        [str(BIN / "pinbench"), "lock", str(root / "request.yaml"), "-o", str(lock)], env=env
    )
    run_checked([str(BIN / "pinbench"), "run", str(lock), "--runner", "venv"], env=env)


def start_agent(cluster: Cluster, name: str, cache: Path, *extra: str) -> Agent:
    log(f"starting agent {name} {' '.join(extra)}".rstrip())
    return cluster.start_agent(name, cache, *extra)


def _dispatch(
    report: Report,
    ws: Workspace,
    cluster: Cluster,
    tokens: dict[str, str],
    root: Path,
    runs: int,
    count: int,
    *,
    venv: bool,
) -> None:
    """(a), with its servers; for the warm mode, agent ``bench-a`` is restarted with ``--warm``
    (and afterwards without), so that the cluster has one agent throughout."""
    owner, reader = tokens["owner"], tokens["reader"]
    cache = root / "cache-a"
    with (
        served(cluster, free_port(), "--run-workers", "1") as plain,
        served(
            cluster, free_port(), "--run-workers", "1", "--cluster", ADDRESS, agent_token=reader
        ) as remote,
    ):
        local, on_cluster = Api(plain, owner), Api(remote, owner)
        lock = local.lock()
        modes = (
            {"local runner": "local", "venv cold": "venv"} if venv else {"local runner": "local"}
        )
        dispatch(
            report,
            ws,
            {
                mode: {
                    "local pool": Side(local, None, runner),
                    "cluster": Side(on_cluster, [AGENTS[0]], runner),
                }
                for mode, runner in modes.items()
            },
            lock,
            runs,
            count,
        )
        if venv:
            cluster.agents[AGENTS[0]].stop()
            start_agent(cluster, AGENTS[0], cache, "--warm")
            with served(cluster, free_port(), "--run-workers", "1", "--warm") as hot:
                warm = {
                    "local pool": Side(Api(hot, owner), None, "venv"),
                    "cluster": Side(on_cluster, [AGENTS[0]], "venv"),
                }
                dispatch(report, ws, {"venv warm": warm}, lock, runs, count)
            cluster.agents[AGENTS[0]].stop()
            start_agent(cluster, AGENTS[0], cache)
    for mode in [*modes, *(["venv warm"] if venv else [])]:
        gap = report.metric(f"[a] {mode}: cluster p50 - local p50", "s").median
        report.checks.append(
            Check(
                f"(a) {mode}: cluster p50 - local p50",
                gap,
                "s",
                f"<= {TARGET_S:.3f} s",
                gap <= TARGET_S,
            )
        )


def _burst_and_kill(
    report: Report,
    ws: Workspace,
    cluster: Cluster,
    tokens: dict[str, str],
    only: set[str],
    runs: int,
    count: int,
) -> None:
    """(b) and (d), on one server with both agents."""
    with served(
        cluster,
        free_port(),
        *("--run-workers", str(BURST_WORKERS), "--cluster", ADDRESS),
        *("--run-queue", str(2 * count + 16)),
        agent_token=tokens["reader"],
    ) as on_cluster:
        api = Api(on_cluster, tokens["owner"])
        lock = api.lock()
        log("one untimed run on each agent")
        settled(ws, api.submit(lock, list(AGENTS)))
        if "b" in only:
            _bursts(report, ws, api, lock, runs, count)
        if "d" in only:
            ok = killed(report, ws, api, lock, cluster, count)
            report.checks.append(
                Check(
                    "(d) every run accounted for once",
                    report.metric("[d] logical runs accounted for", "count").median,
                    "runs",
                    f"{count}, none lost, none doubled",
                    ok,
                )
            )


def _bursts(report: Report, ws: Workspace, api: Api, lock: str, runs: int, count: int) -> None:
    for run in range(runs):
        configs = [AGENTS[:1], AGENTS] if run % 2 == 0 else [AGENTS, AGENTS[:1]]
        for agents in configs:
            log(f"(b) run {run + 1}/{runs}: {count} runs over {len(agents)} agent(s)")
            burst(report, ws, api, lock, agents, count)
        one = report.metric("[b] 1 agent: runs/s", "runs/s", better="higher").values[-1]
        two = report.metric("[b] 2 agents: runs/s", "runs/s", better="higher").values[-1]
        report.metric("[b] scaling: 2 agents / 1 agent", "x", better="higher").values.append(
            two / one
        )


if __name__ == "__main__":
    raise SystemExit(main())
