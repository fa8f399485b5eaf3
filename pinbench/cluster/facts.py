"""What a system is: the hardware and software facts an agent reports when it joins.

The facts are what placement constraints are matched against and what cross-system reports
name when two systems' numbers differ, so each is read from the machine itself (``/proc``,
``platform``, ``nvidia-smi``), never taken from a flag.
"""

from __future__ import annotations

import os
import platform
import re
from typing import Any

from pinbench.hardware import (
    accelerator_libraries,
    cpu_flags,
    cpu_model,
    gpus,
    memory_bytes,
)


def default_name() -> str:
    """This host's name made into a system name (``Lab_A.example.org`` → ``lab-a``)."""
    host = platform.node().split(".")[0].lower()
    name = re.sub(r"[^a-z0-9-]+", "-", host).strip("-")[:63].strip("-")
    return name or "system"


def system_facts() -> dict[str, Any]:
    """This machine's facts, as an agent registers them."""
    return {
        "cpu": cpu_model(),
        "cpu_flags": cpu_flags(),
        "cores": os.cpu_count(),
        "memory_bytes": memory_bytes(),
        "gpus": gpus(),
        "arch": platform.machine(),
        "os": platform.platform(),
        "kernel": platform.release(),
        "accelerator_libraries": accelerator_libraries(),
        "hostname": platform.node(),
    }


MAX_FACTS_BYTES = 64 * 1024


def checked_facts(value: object) -> dict[str, Any] | None:
    """Facts as an agent reported them, if they have the shape ``system_facts`` gives (a
    mapping of plain JSON, at most ``MAX_FACTS_BYTES``, ``gpus`` a list of mappings,
    ``cpu_flags`` a list of text); None otherwise: the system is then treated as silent."""
    import json

    if not isinstance(value, dict):
        return None
    try:
        size = len(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return None
    gpus, flags = value.get("gpus", []), value.get("cpu_flags", [])
    if size > MAX_FACTS_BYTES or not isinstance(gpus, list) or not isinstance(flags, list):
        return None
    if not all(isinstance(g, dict) for g in gpus) or not all(isinstance(f, str) for f in flags):
        return None
    return value
