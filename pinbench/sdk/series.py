"""``Registry.series()``: series, their thresholds, the gate and alerts, on a local registry
or through a server's REST API, with one set of methods for both (decision 250)."""

from __future__ import annotations

import builtins
import getpass
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from pinbench.registry.lockfile import Lockfile as LockfileBody
    from pinbench.sdk.registry import Registry
    from pinbench.workspace import Workspace


def most_candidates() -> int:
    """The most runs of one candidate a gate judges together (``bounds.GATE_CANDIDATES``)."""
    from pinbench.bounds import GATE_CANDIDATES

    return int(GATE_CANDIDATES.high)


def check_candidates(count: int, field: str, *, user: bool = True) -> None:
    """Refuse ``count`` candidate runs outside the gate's bound, naming ``field``: an
    ``InvalidCandidates`` (a user error), or with ``user=False`` the ``ValueError`` a request
    schema turns into a validation error naming the place."""
    from pinbench.bounds import GATE_CANDIDATES
    from pinbench.series.errors import InvalidCandidates

    if not GATE_CANDIDATES.holds(count):
        if not user:
            raise ValueError(GATE_CANDIDATES.refusal(field, count))
        raise InvalidCandidates(count=count, field=field)


def _path(name: str) -> str:
    return quote(name, safe="/:@")


class Series:
    """Series of runs that measure the same thing (``pinbench.series``)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def list(self) -> list[dict[str, Any]]:
        """Every series: its name, fields, run count, first and last run, metrics."""
        from pinbench.series.members import list_series

        rows: list[dict[str, Any]] = self.registry.either(
            lambda remote: remote.pages("/api/v1/series", {}, lambda s: str(s["name"])),
            list_series,
        )
        return rows

    def show(self, name: str) -> dict[str, Any]:
        """One series (``name`` whole, or its leading fields when they name one series): every
        run's metrics, what moved before it, and the current thresholds."""
        from pinbench.series.members import detail, resolve
        from pinbench.series.thresholds import thresholds

        def here(ws: Workspace) -> dict[str, Any]:
            key, members = resolve(ws, name)
            shown = detail(key, members)
            shown["thresholds"] = [v.to_json() for v in thresholds(ws, key)]
            return shown

        info: dict[str, Any] = self.registry.either(
            lambda remote: remote.paged_object(
                f"/api/v1/series/{_path(name)}", {}, "points", lambda p: str(p["run"])
            ),
            here,
        )
        return info

    def thresholds(
        self, name: str, *, every_version: bool = False
    ) -> builtins.list[dict[str, Any]]:
        """The series' thresholds: each metric's current version, or every version."""
        from pinbench.series.members import resolve
        from pinbench.series.thresholds import thresholds

        def here(ws: Workspace) -> builtins.list[dict[str, Any]]:
            key, _ = resolve(ws, name)
            return [v.to_json() for v in thresholds(ws, key, every_version=every_version)]

        params = {"all": "true"} if every_version else {}
        rows: builtins.list[dict[str, Any]] = self.registry.either(
            lambda remote: remote.json(
                "GET", f"/api/v1/series-thresholds/{_path(name)}", params=params
            ),
            here,
        )
        return rows

    def set_threshold(
        self,
        name: str,
        metric: str,
        *,
        test: str,
        direction: str | None = None,
        max_change: float | None = None,
        alpha: float = 0.01,
        window: int = 10,
        min_runs: int = 3,
        tolerance: float | None = None,
        by: str | None = None,
    ) -> dict[str, Any]:
        """Store the next version of the series' threshold on ``metric`` (unchanged when equal
        to the current one: ``added`` says which). ``direction``: which way is better, by
        default ``lower`` for a metric ending ``_ns``/``_ms``/``_s``/``_bytes``, else
        ``higher``. ``by``: who sets it (a local registry's; default $USER; a server records
        its caller)."""
        from pinbench.series.thresholds import default_direction

        self._who(by)

        fields: dict[str, Any] = {
            "test": test,
            "direction": direction or default_direction(metric),
            "max_change": max_change,
            "alpha": alpha,
            "window": window,
            "min_runs": min_runs,
            "tolerance": tolerance,
        }

        def here(ws: Workspace) -> dict[str, Any]:
            from pinbench.series.members import resolve
            from pinbench.series.stats import Threshold
            from pinbench.series.thresholds import set_threshold

            key, members = resolve(ws, name)
            stored, added = set_threshold(
                ws, key, members, Threshold(metric=metric, **fields), by=by or getpass.getuser()
            )
            return {**stored.to_json(), "added": added}

        info: dict[str, Any] = self.registry.either(
            lambda remote: remote.json(
                "POST",
                f"/api/v1/series-thresholds/{_path(name)}",
                json={"metric": metric, **fields},
            ),
            here,
        )
        return info

    def retire_threshold(self, name: str, metric: str, *, by: str | None = None) -> dict[str, Any]:
        """Stop judging ``metric`` in the series: the next version of its threshold retires it
        (the earlier versions stay; setting one again adds the version after). ``by``: who
        retires it (a local registry's; default $USER; a server records its caller)."""
        self._who(by)

        def here(ws: Workspace) -> dict[str, Any]:
            from pinbench.series.members import resolve
            from pinbench.series.thresholds import retire_threshold

            key, _ = resolve(ws, name)
            return retire_threshold(ws, key, metric, by=by or getpass.getuser()).to_json()

        info: dict[str, Any] = self.registry.either(
            lambda remote: remote.json(
                "DELETE", f"/api/v1/series-thresholds/{_path(name)}", params={"metric": metric}
            ),
            here,
        )
        return info

    def check_gate_lockfile(self, lock: LockfileBody, series: str | None = None) -> str:
        """What a gate of ``lock``'s runs would refuse after running them, refused before: a
        lockfile that is no model evaluation, one whose runs belong to another series than
        ``series``, a series with no runs yet or no thresholds. The series' name."""
        from pinbench.errors import UserError
        from pinbench.series.members import key_of
        from pinbench.series.names import parse_fields

        key = key_of(lock, None)
        if key is None:
            raise UserError("the lockfile is not a model evaluation: its runs belong to no series")
        if series is not None and not key.starts_with(parse_fields(series)):
            raise UserError(f"the lockfile's runs belong to series {key}, not {series}")
        if not self.thresholds(str(key)):
            raise UserError(
                f"series {key} has no thresholds: set one with `pinbench series threshold set "
                f"{key} METRIC --test ...`; a gate that judged nothing would pass anything"
            )
        return str(key)

    def gate(
        self,
        run_id: str | Sequence[str],
        *,
        series: str | None = None,
        alert_past: Callable[[str], bool] | None = None,
        include_invalid: bool = False,
        include_unsandboxed: bool = False,
    ) -> dict[str, Any]:
        """Judge a recorded run — or several runs of one lockfile, judged together (at most
        20) — against their series' earlier runs under its thresholds: the gate's JSON object
        (``outcome``, ``exit_code``, ``runs``, one comparison per threshold). A regression is
        recorded as an alert when the newest candidate run is the newest of its series, or
        when ``alert_past(model)`` (a server's check of the caller's rights; local only).
        Runs LoadGen called INVALID are left out of the window (``invalid``) unless
        ``include_invalid``, and runs that ran UNSANDBOXED (``unsandboxed_left_out``) unless
        ``include_unsandboxed``."""
        from pinbench.series.gate import gate

        ids = [run_id] if isinstance(run_id, str) else builtins.list(run_id)
        body: dict[str, Any] = {"run": ids[0]} if len(ids) == 1 else {"runs": ids}
        if include_invalid:  # a server before this field refuses it rather than ignore it
            body["include_invalid"] = True
        if include_unsandboxed:
            body["include_unsandboxed"] = True
        info: dict[str, Any] = self.registry.either(
            lambda remote: remote.json("POST", "/api/v1/gate", json={**body, "series": series}),
            lambda ws: gate(
                ws,
                ids,
                series=series,
                alert_past=alert_past,
                include_invalid=include_invalid,
                include_unsandboxed=include_unsandboxed,
            ).to_json(),
        )
        return info

    def alerts(
        self, *, series: str | None = None, state: str | None = None, limit: int = 100
    ) -> builtins.list[dict[str, Any]]:
        """Alerts, newest first (of one series, in one state, when given)."""
        from pinbench.series.alerts import list_alerts

        params = {k: v for k, v in (("series", series), ("state", state)) if v is not None}
        rows: builtins.list[dict[str, Any]] = self.registry.either(
            lambda remote: remote.json(
                "GET", "/api/v1/alerts", params={**params, "limit": str(limit)}
            ),
            lambda ws: list_alerts(ws, series=series, state=state, limit=limit),
        )
        return rows

    def alert(self, alert_id: int) -> dict[str, Any]:
        """One alert."""
        from pinbench.series.alerts import alert_of

        info: dict[str, Any] = self.registry.either(
            lambda remote: remote.json("GET", f"/api/v1/alerts/{alert_id}"),
            lambda ws: alert_of(ws, alert_id),
        )
        return info

    def acknowledge(self, alert_id: int, *, by: str | None = None) -> dict[str, Any]:
        """Mark an alert acknowledged (alerts are never deleted). ``by``: as ``set_threshold``."""
        from pinbench.series.alerts import acknowledge

        self._who(by)
        info: dict[str, Any] = self.registry.either(
            lambda remote: remote.json("POST", f"/api/v1/alerts/{alert_id}/acknowledge"),
            lambda ws: acknowledge(ws, alert_id, by=by or getpass.getuser()),
        )
        return info

    def _who(self, by: str | None) -> None:
        if by is not None and self.registry.remote:
            from pinbench.errors import UserError

            raise UserError("by= names who acts on a local registry; a server records its caller")
