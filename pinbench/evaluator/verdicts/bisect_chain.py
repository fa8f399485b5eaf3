"""Bisect's pure part: the pins two runs differ in, the chain of states between them, the
binary search over it, and which side of the change a state's run falls on."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from pinbench.errors import UserError
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import Request
from pinbench.registry.versions import parse_version, precedence_key

REPEAT = 3
ROUNDS = 2
"""A step the latency statistics leave inconclusive gets another ``repeat`` runs (all its runs
judged together), up to this many rounds, before the bisect stops there."""
LATENCY_METRICS = {"p50": "latency_p50_ns", "throughput": "throughput_sps"}
"""The performance ``--metric`` choices and the recorded metric each one reads."""
ACCURACY = "accuracy"
"""The accuracy ``--metric`` choice: the headline metric of GOOD's task
(``pinbench.tasks.registry.headline``), judged exactly, as ``rerun`` judges accuracy."""
METRICS = (*LATENCY_METRICS, ACCURACY)
"""``--metric`` choices."""
ARTIFACT_PINS = ("model", "framework", "dataset", "image")
SETTING_PINS = ("scenario", "batch_size", "threads", "system", "limits")

Side = Literal["same-as-good", "unlike-bad", "same-as-bad", "changed", "inconclusive"]
"""A state's verdict (``side_of``): like GOOD, unlike BAD (no difference from GOOD shown),
like BAD, unlike both (the metric has left GOOD's), or not decided by the statistics."""


# ---- the pins and the chain (pure) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pin:
    """One pin that differs: its field and the values it takes along the chain, GOOD's first
    and BAD's last (an artifact's value is ``NAME@VERSION``; ``None``: not pinned)."""

    field: str
    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class State:
    """One point of the chain: every differing pin's value, and the change that led here."""

    index: int
    values: dict[str, Any]
    pin: str | None = None
    before: Any = None
    after: Any = None

    def change(self) -> str:
        if self.pin is None:
            return "-"
        return f"{self.pin} {show_value(self.before)} -> {show_value(self.after)}"


def show_value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(msgspec.to_builtins(value), sort_keys=True, separators=(",", ":"))


def chain(pins: Sequence[Pin]) -> list[State]:
    """States from GOOD's pins (index 0) to BAD's (the last), one pin one step at a time, in
    the order of ``pins``."""
    values = {p.field: p.values[0] for p in pins}
    states = [State(0, dict(values))]
    for pin in pins:
        for before, after in zip(pin.values, pin.values[1:], strict=False):
            values[pin.field] = after
            states.append(State(len(states), dict(values), pin.field, before, after))
    return states


@dataclass(frozen=True, slots=True)
class Found:
    """Where the search stopped: ``good`` is the last state judged like GOOD, ``bad`` the first
    judged changed; ``undecided`` the state the statistics could not judge (then the change
    lies somewhere in ``good + 1 .. bad``)."""

    good: int
    bad: int
    undecided: int | None = None


def search(n: int, judge: Callable[[int], Side]) -> Found:
    """Binary search over states ``0 .. n - 1`` (0 like GOOD, ``n - 1`` like BAD) for the first
    state whose metric has changed; ``judge`` evaluates one state. Stops at the first state it
    cannot judge."""
    good, bad = 0, n - 1
    while bad - good > 1:
        mid = (good + bad) // 2
        side = judge(mid)
        if side in GOOD_SIDE:
            good = mid
        elif side in BAD_SIDE:
            bad = mid
        else:
            return Found(good, bad, mid)
    return Found(good, bad)


def side_of(vs_good: str, vs_bad: str) -> Side:
    """A state's side from its two comparisons' outcomes (``reproduced``, ``changed``,
    ``inconclusive``, as ``LatencyComparison.outcome``): a difference from GOOD shown puts it
    on BAD's side (``same-as-bad``, or ``changed`` when it differs from BAD too); a difference
    from BAD shown, and none from GOOD, on GOOD's (``same-as-good``, or ``unlike-bad`` when
    the statistics do not vouch for it being like GOOD); no difference from either shown is
    ``inconclusive``."""
    if vs_good == "changed":
        return "same-as-bad" if vs_bad == "reproduced" else "changed"
    if vs_bad == "changed":
        return "same-as-good" if vs_good == "reproduced" else "unlike-bad"
    return "inconclusive"


GOOD_SIDE = ("same-as-good", "unlike-bad")
BAD_SIDE = ("same-as-bad", "changed")


def versions_between(published: Sequence[tuple[str, bool]], good: str, bad: str) -> list[str]:
    """``good``, the published non-yanked versions strictly between it and ``bad`` in
    precedence order (from ``good`` towards ``bad``), and ``bad``; prereleases only when an
    end is one. ``published``: (version, yanked)."""
    lo, hi = sorted((good, bad), key=lambda v: precedence_key(parse_version(v)))
    klo, khi = precedence_key(parse_version(lo)), precedence_key(parse_version(hi))
    pre = bool(parse_version(lo).prerelease or parse_version(hi).prerelease)
    inside = sorted(
        (
            v
            for v, yanked in published
            if not yanked
            and klo < precedence_key(parse_version(v)) < khi
            and (pre or not parse_version(v).prerelease)
        ),
        key=lambda v: precedence_key(parse_version(v)),
    )
    middle = inside if good == lo else inside[::-1]
    return [good, *middle, bad]


# ---- a recorded run's pins ------------------------------------------------------------------


def artifact_pins(lock: Lockfile) -> dict[str, str | None]:
    """The lockfile's artifacts as ``NAME@VERSION`` by kind (None: that kind not pinned)."""
    out: dict[str, str | None] = dict.fromkeys(ARTIFACT_PINS)
    for art in lock.body.artifacts:
        if out[art.kind] is not None:
            raise UserError(f"the lockfile pins two {art.kind}s: bisect pins one of each")
        out[art.kind] = f"{art.name}@{art.version}"
    return out


def setting_pins(lock: Lockfile) -> dict[str, Any]:
    body = lock.body
    return {
        "scenario": body.scenario,
        "batch_size": body.batch_size,
        "threads": body.threads,
        "system": body.system,
        "limits": body.request.limits,
    }


def request_for(base: Request, state: dict[str, Any]) -> Request:
    """``base`` (GOOD's request) with every pin set to ``state``'s value: artifacts as exact
    pins (``NAME@=VERSION``), so that nothing published since resolves in their place."""
    changes: dict[str, Any] = {}
    for kind in ARTIFACT_PINS:
        ref = state[kind]
        if ref is None:
            changes[kind] = None
        else:
            name, _, version = ref.rpartition("@")
            changes[kind] = f"{name}@={version}"
    for setting in SETTING_PINS:
        changes[setting] = state[setting]
    return msgspec.structs.replace(base, **changes)
