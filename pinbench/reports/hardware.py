"""Where a run ran, for people: its system (a cluster agent's name, or the machine that ran
it outside a cluster) and that machine's hardware as text, from the run's own host facts and,
for a run on a cluster system, that system's registered facts.

Facts come from agents and are untrusted: every value here is turned into plain text (never
markup) whatever its type, and the templates escape it.
"""

from __future__ import annotations

from typing import Any

LOCAL_MARK = " (local)"
"""Appended to the host name of a run made outside a cluster (the CLI's or the server's own
machine). A system name cannot contain a space or parentheses, so the two never collide."""

UNKNOWN = "unknown"
FACTS = (
    ("cpu", "CPU model"),
    ("cores", "cores"),
    ("memory", "memory"),
    ("gpu", "GPU model"),
    ("gpu_count", "GPU count"),
    ("driver", "GPU driver"),
    ("accelerator_libraries", "accelerator libraries"),
)
"""The hardware facts a report shows per run and names when they differ: (key, label)."""


def system_label(info: dict[str, Any]) -> str:
    """The run's system: its name on a cluster, else ``HOST (local)`` (``local`` alone when
    the run recorded no host, e.g. still queued)."""
    name = info.get("system")
    if name:
        return str(name)
    host = (info.get("host") or {}).get("hostname")
    return f"{text(host)}{LOCAL_MARK}" if host else LOCAL_MARK.strip(" ()")


def text(value: Any) -> str:
    """Any JSON value as one line of plain text."""
    if value is None:
        return UNKNOWN
    if isinstance(value, list):
        return ", ".join(text(v) for v in value) if value else "none"
    return " ".join(str(value).split())


def _gib(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return f"{value / 2**30:.1f} GiB"
    return text(value)


def _distinct(values: list[Any]) -> str:
    seen = list(dict.fromkeys(text(v) for v in values))
    return ", ".join(seen) if seen else "none"


def hardware(host: dict[str, Any] | None, system: dict[str, Any] | None) -> dict[str, str]:
    """``FACTS`` as text. The run's own host facts (what the machine was when it ran) come
    first; the system's registered facts fill what they lack (accelerator libraries). A fact
    neither has is ``unknown``; no GPU is ``none`` and a count of 0."""
    facts = {**(system or {}), **(host or {})}
    gpus = facts.get("gpus")
    listed = [g for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else None
    return {
        "cpu": text(facts.get("cpu")),
        "cores": text(facts.get("cores")),
        "memory": _gib(facts.get("memory_bytes")),
        "gpu": UNKNOWN if listed is None else _distinct([g.get("name") for g in listed]),
        "gpu_count": UNKNOWN if listed is None else str(len(listed)),
        "driver": UNKNOWN if listed is None else _distinct([g.get("driver") for g in listed]),
        "accelerator_libraries": text(facts.get("accelerator_libraries")),
    }
