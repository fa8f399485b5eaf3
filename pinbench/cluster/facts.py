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
