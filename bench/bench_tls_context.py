"""The CPU an HTTP client costs to make: each its own TLS context (httpx's default) against
the process's shared one (``pinbench.tls``, docs/benchmarks.md §15f).

An ``httpx.Client`` made without a context reads and parses the CA bundle; the baseline is
that, measured in the same run. Printed: the median CPU seconds of making one client in
``--rounds`` rounds of ``--clients`` each, both ways, and the ratio.

Run: ``.venv/bin/python -m bench.bench_tls_context``
"""

from __future__ import annotations

import argparse
import statistics
import time


def _cpu_per_client(clients: int, shared: bool) -> float:
    import httpx

    from pinbench.tls import http_client

    started = time.process_time()
    for _ in range(clients):
        client = http_client("http://127.0.0.1:9", {}, 5.0) if shared else httpx.Client()
        client.close()
    return (time.process_time() - started) / clients


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--clients", type=int, default=20)
    args = parser.parse_args()
    _cpu_per_client(1, True)  # imports and the shared context itself, outside the figures
    own = statistics.median(_cpu_per_client(args.clients, False) for _ in range(args.rounds))
    shared = statistics.median(_cpu_per_client(args.clients, True) for _ in range(args.rounds))
    print(f"a client with its own TLS context: {own * 1e3:.2f} ms of CPU (baseline)")
    print(f"a client with the shared context:  {shared * 1e3:.3f} ms of CPU")
    print(f"ratio: {shared / own:.4f} of the baseline ({own / shared:.0f} times less)")


if __name__ == "__main__":
    main()
