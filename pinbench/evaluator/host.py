"""Host facts for a run record: what this machine and environment actually are."""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

from pinbench.hardware import cpu_model, gpus, memory_bytes


def host_facts(frameworks: dict[str, str]) -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": memory_bytes(),
        "gpus": gpus(),
        "os": platform.platform(),
        "arch": platform.machine(),
        "python": sys.version.split()[0],
        "hostname": platform.node(),
        "frameworks": frameworks,
    }
