"""Reading a stored trace: the short summary a run's details keep, and the run's trace itself
(verified against its digest before it is read)."""

from __future__ import annotations

from typing import Any

import msgspec

from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.workspace import Workspace


class NoTrace(UserError):
    def __init__(self, *, run: str, level: str, status: str) -> None:
        why = (
            f"it ran at trace level {level!r}"
            if level == "none"
            else f"it {status} before its trace was stored"
        )
        super().__init__(
            f"run {run[:8]} has no trace: {why}; run it again with a trace "
            f"(`pinbench rerun {run[:8]} --trace full`)"
        )
        self.run = run
        self.level = level


def summarise(trace: dict[str, Any]) -> dict[str, Any]:
    """What a run's details keep of its trace: level, cold start, sizes, notes."""
    meta = trace["pinbench"]
    out = {k: meta[k] for k in ("level", "cold_start", "predictions") if k in meta}
    if "framework_trace" in meta:
        fw = meta["framework_trace"]
        out["framework"] = {k: fw[k] for k in ("source", "events", "in_spans") if k in fw}
        out["operators"] = len(meta.get("ops", []))
    if "system" in meta:
        out["system_notes"] = meta["system"].get("notes", [])
    return out


def trace_of(ws: Workspace, info: dict[str, Any]) -> dict[str, Any]:
    """A run's trace (``show_run``'s view of it), verified; ``NoTrace`` if it has none."""
    digest = info.get("trace_sha256")
    if not digest:
        raise NoTrace(run=info["id"], level=info.get("trace", "none"), status=info["status"])
    path = ws.store.verify(Digest(digest), label=f"trace {digest[:12]}")
    data: dict[str, Any] = msgspec.json.decode(path.read_bytes())
    return data
