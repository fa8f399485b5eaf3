"""LoadGen's orphaned loggers: a thread per test against one thread for every test (decision
265, docs/benchmarks.md §15e).

Each of ``--processes`` child processes loops LoadGen tests (the four scenarios in turn, a
numpy model of one matrix product, 20 ms and 50 queries each) for ``--seconds``, while
``--hogs`` busy loops keep the cores contended, as a full test suite does. ``thread-per-test``
calls ``StartTest`` on a new thread for each test, as pinbench did before decision 265;
``one-thread`` goes through ``run_scenario`` (``pinbench.worker.loadgen_thread``). Printed
per mode: how many children crashed (and with which signal), their tests, and the seconds
before the first crash.

``--wait``: the time of one short scenario (20 ms, 50 queries, SingleStream) through
``run_scenario``, on LoadGen's thread and handed over to the caller, against a bare
``StartTest`` on a thread joined at once (the baseline, measured in the same run): the median
of 30 each, and the ratio.

Run: ``.venv/bin/python -m bench.bench_loadgen_thread --seconds 300`` (``--mode`` one only;
``--wait`` for the scenario's own time).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

MODES = ("thread-per-test", "one-thread")
SCENARIOS: dict[str, dict[str, Any]] = {
    "SingleStream": {},
    "MultiStream": {"samples_per_query": 8},
    "Server": {"target_qps": 400.0},
    "Offline": {},
}


def child(mode: str, seconds: float) -> None:
    """Loop tests until ``seconds`` have passed; print how many ran."""
    import msgspec
    import numpy as np

    from pinbench.registry.request import Scenario
    from pinbench.worker import loadgen_test, scenarios

    rng = np.random.default_rng(5)
    x = rng.standard_normal((48, 16)).astype(np.float32)
    w = rng.standard_normal((16, 10)).astype(np.float32)

    def predict(batch: Any) -> dict[str, Any]:
        return {"y": np.asarray(batch, dtype=np.float32) @ w}

    def own_thread(*args: Any) -> dict[str, Any]:  # the way before decision 265
        got: list[dict[str, Any]] = []
        thread = threading.Thread(target=lambda: got.append(loadgen_test.start_test(*args)))
        thread.start()
        thread.join()
        return got[0]

    count = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        for name, extra in SCENARIOS.items():
            settings = {"name": name, "min_duration_ms": 20, "min_query_count": 50, "seed": 3}
            scenario = msgspec.convert(settings | extra, Scenario)
            batch = 4 if name == "Offline" else 1
            with tempfile.TemporaryDirectory() as folder:
                if mode == "one-thread":
                    scenarios.run_scenario(
                        predict, x, scenario, batch_size=batch,
                        expected_latency_ns=50_000, log_dir=Path(folder),
                    )  # fmt: skip
                else:
                    issue = _issue(predict, x, batch)
                    lg_settings = scenarios.settings_for(
                        scenario, expected_latency_ns=50_000, batch_size=batch
                    )
                    own_thread(issue, len(x), lg_settings, Path(folder))
            count += 1
    print(count, flush=True)


def _issue(predict: Any, x: Any, batch: int) -> Any:
    import mlperf_loadgen as lg

    def issue(queries: list[Any]) -> None:
        for start in range(0, len(queries), batch):
            chunk = queries[start : start + batch]
            predict(x[[q.index for q in chunk]])
            lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in chunk])

    return issue


def measure(mode: str, processes: int, hogs: int, seconds: float) -> dict[str, Any]:
    hog = "import time\nt=time.time()\nwhile time.time()-t<%f: pass" % (seconds + 5)
    busy = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(hogs)]
    started = time.monotonic()
    command = [sys.executable, "-m", "bench.bench_loadgen_thread", "--child", mode,
               "--seconds", str(seconds)]  # fmt: skip
    kids = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for _ in range(processes)
    ]
    crashes: list[tuple[int, float]] = []
    tests = 0
    pending = set(range(processes))
    while pending:
        for i in list(pending):
            code = kids[i].poll()
            if code is None:
                continue
            pending.discard(i)
            out, _ = kids[i].communicate()
            if code != 0:
                crashes.append((code, time.monotonic() - started))
            elif out.strip():
                tests += int(out.split()[-1])
        time.sleep(0.2)
    for proc in busy:
        proc.wait()
    first = min((t for _, t in crashes), default=None)
    return {"mode": mode, "processes": processes, "crashed": len(crashes),
            "signals": sorted({-c for c, _ in crashes}), "first_crash_s": first,
            "tests_of_survivors": tests, "seconds": seconds}  # fmt: skip


def wait_times(count: int = 30) -> dict[str, float]:
    """Median milliseconds per short scenario: bare, and ``run_scenario``'s two modes."""
    import statistics

    import msgspec
    import numpy as np

    from pinbench.registry.request import Scenario
    from pinbench.worker import loadgen_test, scenarios

    x = np.ones((48, 16), dtype=np.float32)
    scenario = msgspec.convert(
        {"name": "SingleStream", "min_duration_ms": 20, "min_query_count": 50}, Scenario
    )

    def predict(batch: Any) -> dict[str, Any]:
        return {"y": batch * 2}

    def bare(folder: Path) -> None:
        settings = scenarios.settings_for(scenario, expected_latency_ns=50_000, batch_size=1)
        thread = threading.Thread(
            target=loadgen_test.start_test, args=(_issue(predict, x, 1), len(x), settings, folder)
        )
        thread.start()
        thread.join()

    def ours(on_caller: bool) -> Any:
        return lambda folder: scenarios.run_scenario(
            predict, x, scenario, batch_size=1, expected_latency_ns=50_000, log_dir=folder,
            on_caller=on_caller,
        )  # fmt: skip

    times: dict[str, float] = {}
    calls = {"bare": bare, "loadgen-thread": ours(False), "handed-over": ours(True)}
    for name, call in calls.items():
        taken = []
        for _ in range(count):
            with tempfile.TemporaryDirectory() as folder:
                started = time.perf_counter()
                call(Path(folder))
                taken.append(time.perf_counter() - started)
        times[name] = statistics.median(taken) * 1000
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--hogs", type=int, default=2)
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--wait", action="store_true", help="a short scenario's own time")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seconds)
        return
    if args.wait:
        times = wait_times()
        for name, ms in times.items():
            print(f"{name:15} {ms:7.1f} ms per scenario (median of 30), "
                  f"{ms / times['bare']:.2f}x bare")  # fmt: skip
        return
    for mode in [args.mode] if args.mode else MODES:
        r = measure(mode, args.processes, args.hogs, args.seconds)
        first = "-" if r["first_crash_s"] is None else f"{r['first_crash_s']:.0f} s"
        print(f"{mode:16} {r['crashed']} of {r['processes']} crashed (signals {r['signals']}), "
              f"first after {first}; survivors ran {r['tests_of_survivors']} tests "
              f"in {r['seconds']:.0f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
