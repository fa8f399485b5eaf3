"""A series' name: the six things its runs share, joined by ``:`` (decision 250).

``MODEL:DATASET:SCENARIO:MODE:bBATCH:SYSTEM``, e.g.
``vision/lenet-digits:sklearn-digits:SingleStream:performance:b1:-``. MODEL and DATASET are
artifact names (no ``:``, no ``@``: their versions are free to move along the series), SYSTEM
is the cluster system the runs ran on, or ``-`` for runs on the registry's own machine (a
system name starts with a letter or digit, so ``-`` names no system). Every field has a bounded
length, so a name is at most ``MAX_LENGTH`` characters.

A name given by a user may stop after any field (``vision/lenet-digits`` or
``vision/lenet-digits:sklearn-digits``): it names the one series whose leading fields are those;
where several series have them it is refused as ambiguous (``pinbench.series.members.resolve``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pinbench.registry.names import NAME_MAX_LENGTH, NAME_PATTERN
from pinbench.series.series_errors import BadSeriesName
from pinbench.specs.system_names import NAME as SYSTEM_NAME

SCENARIOS = ("SingleStream", "MultiStream", "Server", "Offline")
MODES = ("performance", "accuracy")
THIS_MACHINE = "-"
FIELDS = ("model", "dataset", "scenario", "mode", "batch", "system")
_ARTIFACT = re.compile(NAME_PATTERN)
_BATCH = re.compile(r"b([1-9][0-9]{0,8})")
MAX_LENGTH = 2 * NAME_MAX_LENGTH + len("MultiStream:performance:b999999999:") + 63 + 2
"""The longest name: two artifact names, the longest scenario, mode and batch, a system."""


@dataclass(frozen=True, slots=True)
class SeriesKey:
    """What a series' runs share; ``str()`` is its name, ``parse`` reads it back."""

    model: str
    dataset: str
    scenario: str
    mode: str
    batch_size: int
    system: str | None
    """The cluster system; None: the registry's own machine (``-`` in the name)."""

    def __str__(self) -> str:
        system = self.system if self.system is not None else THIS_MACHINE
        return (
            f"{self.model}:{self.dataset}:{self.scenario}:{self.mode}:b{self.batch_size}:{system}"
        )

    @classmethod
    def parse(cls, text: str) -> SeriesKey:
        """A whole name (all six fields), else ``BadSeriesName``."""
        fields = parse_fields(text)
        if len(fields) != len(FIELDS):
            raise BadSeriesName(
                text=text,
                reason=f"a series name has {len(FIELDS)} fields ({':'.join(FIELDS).upper()}), "
                f"got {len(fields)}",
            )
        model, dataset, scenario, mode, batch, system = fields
        return cls(
            model, dataset, scenario, mode, int(batch[1:]), None if system == "-" else system
        )

    def starts_with(self, fields: tuple[str, ...]) -> bool:
        """True when ``fields`` (a parsed leading part of a name) are this key's first ones."""
        return str(self).split(":")[: len(fields)] == list(fields)


def parse_fields(text: str) -> tuple[str, ...]:
    """The fields of a name or of a leading part of one, each checked; ``BadSeriesName``
    naming the first field that is wrong."""
    if not text:
        raise BadSeriesName(text=text, reason="empty")
    if len(text) > MAX_LENGTH:
        raise BadSeriesName(
            text=text[:60] + "...", reason=f"{len(text)} characters: at most {MAX_LENGTH}"
        )
    fields = tuple(text.split(":"))
    if len(fields) > len(FIELDS):
        raise BadSeriesName(
            text=text,
            reason=f"{len(fields)} fields: a series name has {len(FIELDS)} "
            f"({':'.join(FIELDS).upper()})",
        )
    for field, value in zip(FIELDS, fields, strict=False):
        problem = _field_problem(field, value)
        if problem is not None:
            raise BadSeriesName(text=text, reason=f"{field.upper()} {value!r}: {problem}")
    return fields


def _field_problem(field: str, value: str) -> str | None:
    if field in ("model", "dataset"):
        if len(value) > NAME_MAX_LENGTH or not _ARTIFACT.fullmatch(value):
            return (
                "an artifact name (lowercase letters, digits, '.', '_', '-', one '/'), "
                "without a version"
            )
    elif field == "scenario":
        if value not in SCENARIOS:
            return f"one of {', '.join(SCENARIOS)}"
    elif field == "mode":
        if value not in MODES:
            return f"one of {', '.join(MODES)}"
    elif field == "batch":
        if not _BATCH.fullmatch(value):
            return "b and the batch size, e.g. b1"
    elif value != THIS_MACHINE and not SYSTEM_NAME.fullmatch(value):
        return "a cluster system's name, or - for the registry's own machine"
    return None
