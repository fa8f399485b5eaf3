"""What this machine's hardware is, read from the machine itself (``/proc``, ``platform``,
``nvidia-smi``, the dynamic loader): for run records (``evaluator.host``) and for the facts a
cluster agent registers (``cluster.facts``)."""

from __future__ import annotations

import ctypes.util
import platform
import subprocess
from pathlib import Path

ACCELERATOR_LIBRARIES = ("cuda", "cudart", "cudnn", "nvinfer", "nccl", "amdhip64", "rocblas")
"""Shared libraries whose presence is reported (found by the dynamic loader's search)."""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def gpus() -> list[dict[str, str]]:
    from pinbench.programs import ProgramUnavailable, clean_environment, system_program

    try:
        smi = system_program("nvidia-smi")
    except ProgramUnavailable:
        return []
    try:
        out = subprocess.run(
            [str(smi), "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
            env=clean_environment(),
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    gpus = []
    for line in out.strip().splitlines():
        name, driver, memory = (part.strip() for part in line.split(","))
        gpus.append({"name": name, "driver": driver, "memory": memory})
    return gpus


def cpu_flags() -> list[str]:
    """The CPU's feature flags (``/proc/cpuinfo``: ``flags`` on x86, ``Features`` on Arm)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return sorted(set(value.split()))
    return []


def accelerator_libraries() -> list[str]:
    return [lib for lib in ACCELERATOR_LIBRARIES if ctypes.util.find_library(lib) is not None]
