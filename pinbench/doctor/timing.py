"""What makes timings noisy, as pyperf's ``system show`` reports it: CPU frequency scaling,
turbo, SMT, isolated CPUs and other load. None of these blocks a run (``warn`` at most): a run
measured on a noisy machine is marked by its own contention figures (``worker.contention``);
these say why before it is measured."""

from __future__ import annotations

import os
import time
from pathlib import Path

from pinbench.doctor.findings import Finding, Place

BUSY_WARN = 0.10
"""The share of the machine's CPU time others used while sampled, from which a finding warns."""
SAMPLE_S = 0.25


def cpus(place: Place) -> Path:
    return place.sys / "devices" / "system" / "cpu"


def frequency(place: Place) -> Finding:
    governors = sorted(
        {
            g
            for f in cpus(place).glob("cpu[0-9]*/cpufreq/scaling_governor")
            if (g := place.read(f)) is not None
        }
    )
    if not governors:
        return Finding(
            "cpu-frequency", "ok", "the kernel exposes no frequency scaling (a VM's host may)"
        )
    if governors == ["performance"]:
        return Finding("cpu-frequency", "ok", "every CPU's governor is performance")
    return Finding(
        "cpu-frequency",
        "warn",
        f"CPU frequency governors: {', '.join(governors)} (the clock changes under load)",
        "as root: cpupower frequency-set -g performance (or pyperf system tune)",
    )


def turbo(place: Place) -> Finding:
    no_turbo = place.read(cpus(place) / "intel_pstate" / "no_turbo")
    boost = place.read(cpus(place) / "cpufreq" / "boost")
    if no_turbo == "0":
        return Finding(
            "turbo",
            "warn",
            "Intel turbo boost is on (a core's clock depends on its neighbours' load)",
            "as root: echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo",
        )
    if boost == "1":
        return Finding(
            "turbo",
            "warn",
            "CPU boost is on (a core's clock depends on its neighbours' load)",
            "as root: echo 0 > /sys/devices/system/cpu/cpufreq/boost",
        )
    if no_turbo is None and boost is None:
        return Finding("turbo", "ok", "the kernel exposes no turbo setting")
    return Finding("turbo", "ok", "turbo is off")


def smt(place: Place) -> Finding:
    active = place.read(cpus(place) / "smt" / "active")
    if active == "1":
        return Finding(
            "smt",
            "warn",
            "SMT (hyper-threading) is active: two CPUs share one core's units",
            "as root: echo off > /sys/devices/system/cpu/smt/control, or pin runs to one "
            "thread of each core",
        )
    what = "SMT is off" if active == "0" else "the kernel exposes no SMT state"
    return Finding("smt", "ok", what)


def isolated(place: Place) -> Finding:
    found = place.read(cpus(place) / "isolated")
    if found:
        return Finding("isolated-cpus", "ok", f"CPUs {found} are isolated from the scheduler")
    return Finding(
        "isolated-cpus",
        "warn",
        "no CPU is isolated: the kernel schedules other work on the CPUs a run uses",
        "the kernel parameters isolcpus=LIST nohz_full=LIST rcu_nocbs=LIST (pyperf's advice)",
    )


def _idle_total(place: Place) -> tuple[int, int] | None:
    text = place.read(place.proc / "stat")
    if not text:
        return None
    fields = text.splitlines()[0].split()
    if fields[0] != "cpu" or len(fields) < 6:
        return None
    values = [int(v) for v in fields[1:9]]
    return values[3] + values[4], sum(values)  # idle + iowait, everything


def load(place: Place) -> Finding:
    """Others' share of the machine's CPU time over ``SAMPLE_S`` (``/proc/stat``; this process
    sleeps meanwhile)."""
    before = _idle_total(place)
    time.sleep(SAMPLE_S)
    after = _idle_total(place)
    if before is None or after is None or after[1] <= before[1]:
        return Finding("load", "ok", "/proc/stat could not be sampled; load unknown")
    busy = 1 - (after[0] - before[0]) / (after[1] - before[1])
    share = f"{busy:.0%} of the CPU time of {os.cpu_count()} CPUs went to other work"
    if busy >= BUSY_WARN:
        return Finding(
            "load",
            "warn",
            share,
            "stop other work while measuring (a run records its own contention figures)",
        )
    return Finding("load", "ok", share)


def check(place: Place) -> list[Finding]:
    return [frequency(place), turbo(place), smt(place), isolated(place), load(place)]
