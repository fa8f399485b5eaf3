"""What every request leaves behind: a line in the access log and a count in the metrics.

``Observe`` is the outermost ASGI middleware: it times each HTTP request, reads the status it
answered, names it by its route template (``/api/v1/runs/{run_id:str}``, never the raw path:
the label's values are the app's routes, ``unmatched`` for the rest) and the caller's user
and the id of the token it used (``note_user``, from the principal dependency; never the
token's secret), and hands it to
``RequestStats`` (the ``/metrics`` counters and latency histograms) and to the access log
(``pinbench.api.access``; the probes ``/api/v1/health``, ``/api/v1/ready`` and ``/metrics`` at
DEBUG, the rest at INFO).

A request the server refused because it is draining (``note_refused``: a run submitted after
SIGTERM, readiness saying so) is expected, not an error: it is counted in
``pinbench_http_refused_total`` by its reason, not in ``pinbench_http_requests_total``, whose
5xx the documented alert watches.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from pinbench.api.logs import event

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]
"""An ASGI app (Litestar types its arguments more narrowly than this middleware needs)."""

log = logging.getLogger("pinbench.api.access")

BUCKETS_S: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds of the request latency histogram's buckets, in seconds (and +Inf)."""
METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED: Final = "unmatched"
PROBES: Final = frozenset({"/api/v1/health", "/api/v1/ready", "/metrics"})
_USER: Final = "pinbench.user"
"""Where ``note_user`` leaves the caller's name in the request's scope state."""
_REFUSED: Final = "pinbench.refused"
"""Where ``note_refused`` leaves why the server refused a request it expected to refuse."""
DRAINING: Final = "draining"


def note_user(state: dict[str, Any], user: str | None, token_id: str | None) -> None:
    """Remember the authenticated caller of this request and the id of the token it used
    (``scope["state"]``) for its access log line."""
    state[_USER] = (user, token_id)


def note_refused(state: dict[str, Any], reason: str) -> None:
    """This request's answer is an expected refusal (``DRAINING``), not an error: count it
    apart (``scope["state"]``)."""
    state[_REFUSED] = reason


def label(value: str) -> str:
    """A Prometheus label value, escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class RequestStats:
    """Requests by method, route template and status; latency histograms by method and route.
    Thread-safe; one per server process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, int], int] = {}
        self._hist: dict[tuple[str, str], list[float]] = {}
        """Per (method, route): a count per bucket (not cumulative), then +Inf, sum, count."""
        self._refused: dict[tuple[str, str, str], int] = {}
        """Expected refusals by method, route and reason (``note_refused``)."""

    def observe(
        self, method: str, route: str, status: int, seconds: float, refused: str | None = None
    ) -> None:
        """Count a request answered with ``status``, or, when ``refused`` names why, as an
        expected refusal; its latency either way."""
        with self._lock:
            if refused is None:
                key = (method, route, status)
                self._counts[key] = self._counts.get(key, 0) + 1
            else:
                why = (method, route, refused)
                self._refused[why] = self._refused.get(why, 0) + 1
            hist = self._hist.setdefault((method, route), [0.0] * (len(BUCKETS_S) + 3))
            slot = next((i for i, b in enumerate(BUCKETS_S) if seconds <= b), len(BUCKETS_S))
            hist[slot] += 1
            hist[-2] += seconds
            hist[-1] += 1

    def snapshot(self) -> dict[str, Any]:
        """The counts and histograms as plain data (``worker_metrics`` shares them)."""
        with self._lock:
            return {
                "counts": [[m, r, st, n] for (m, r, st), n in self._counts.items()],
                "hist": [[m, r, list(v)] for (m, r), v in self._hist.items()],
                "refused": [[m, r, why, n] for (m, r, why), n in self._refused.items()],
            }

    def lines(self) -> list[str]:
        """The Prometheus text exposition of this process's counters and histograms."""
        return render([self.snapshot()])


def render(snapshots: list[dict[str, Any]]) -> list[str]:
    """The Prometheus text of the counters and histograms of ``snapshots`` summed (the
    workers of one server)."""
    counts: dict[tuple[str, str, int], int] = {}
    refused: dict[tuple[str, str, str], int] = {}
    hists: dict[tuple[str, str], list[float]] = {}
    width = len(BUCKETS_S) + 3
    for snap in snapshots:
        for method, route, status, n in snap.get("counts", []):
            key = (str(method), str(route), int(status))
            counts[key] = counts.get(key, 0) + int(n)
        for method, route, why, n in snap.get("refused", []):
            reason = (str(method), str(route), str(why))
            refused[reason] = refused.get(reason, 0) + int(n)
        for method, route, values in snap.get("hist", []):
            if len(values) != width:
                continue  # written by another version's bucket layout
            into = hists.setdefault((str(method), str(route)), [0.0] * width)
            for i, v in enumerate(values):
                into[i] += float(v)
    out = [
        "# HELP pinbench_http_requests_total HTTP requests answered, by method, route "
        "template and status.",
        "# TYPE pinbench_http_requests_total counter",
    ]
    for (method, route, status), n in sorted(counts.items()):
        out.append(
            f'pinbench_http_requests_total{{method="{method}",route="{label(route)}",'
            f'status="{status}"}} {n}'
        )
    out += [
        "# HELP pinbench_http_refused_total HTTP requests refused as expected (by a draining "
        "server), by method, route template and reason; not in pinbench_http_requests_total.",
        "# TYPE pinbench_http_refused_total counter",
    ]
    for (method, route, why), n in sorted(refused.items()):
        out.append(
            f'pinbench_http_refused_total{{method="{method}",route="{label(route)}",'
            f'reason="{label(why)}"}} {n}'
        )
    name = "pinbench_http_request_duration_seconds"
    out += [
        f"# HELP {name} Time from a request's arrival to its response's last byte.",
        f"# TYPE {name} histogram",
    ]
    for (method, route), hist in sorted(hists.items()):
        labels = f'method="{method}",route="{label(route)}"'
        total = 0
        for i, in_bucket in enumerate(hist[:-2]):
            total += int(in_bucket)
            le = repr(BUCKETS_S[i]) if i < len(BUCKETS_S) else "+Inf"
            out.append(f'{name}_bucket{{{labels},le="{le}"}} {total}')
        out.append(f"{name}_sum{{{labels}}} {hist[-2]!r}")
        out.append(f"{name}_count{{{labels}}} {hist[-1]:.0f}")
    return out


class Observe:
    """ASGI middleware: time, count and log each HTTP request (see the module's text)."""

    def __init__(self, app: ASGIApp, stats: RequestStats) -> None:
        self.app = app
        self.stats = stats

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # what the server answers if the app raises before it starts one
        state: dict[str, Any] = scope.setdefault("state", {})

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            seconds = time.perf_counter() - start
            method = scope["method"] if scope["method"] in METHODS else "OTHER"
            route = scope.get("path_template") or UNMATCHED
            refused = state.get(_REFUSED)
            self.stats.observe(method, route, status, seconds, refused)
            client = scope.get("client")
            caller = state.get(_USER) or (None, None)
            event(
                log,
                logging.DEBUG if route in PROBES else logging.INFO,
                f"{method} {route} {status} {seconds * 1000:.1f} ms",
                in_msg=("method", "route", "status", "duration_ms"),
                method=method,
                route=route,
                status=status,
                duration_ms=round(seconds * 1000, 3),
                user=caller[0],
                token_id=caller[1],
                client=client[0] if client else None,
                **({"refused": refused} if refused else {}),
            )
