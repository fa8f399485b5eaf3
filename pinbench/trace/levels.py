"""Trace levels: what each records, and which frameworks can provide them.

Every level but ``none`` records the model-level spans (their timestamps are taken anyway);
``framework`` adds the framework profiler's operator events, ``system`` adds CPU, memory and
GPU samples, ``full`` has all three.
"""

from __future__ import annotations

from pinbench.errors import UserError

LEVELS = ("none", "model", "framework", "system", "full")
PARTS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "model": frozenset({"model"}),
    "framework": frozenset({"model", "framework"}),
    "system": frozenset({"model", "system"}),
    "full": frozenset({"model", "framework", "system"}),
}
PROFILERS = {
    "onnxruntime": "ONNX Runtime's session profiler",
    "torch": "torch.profiler",
    "tensorflow": "the TensorFlow profiler",
}
"""Frameworks whose predictor reads the framework's own profiler (the ``framework`` part)."""


class UnknownTraceLevel(UserError):
    def __init__(self, *, level: str) -> None:
        super().__init__(f"no trace level {level!r}; levels: {', '.join(LEVELS)}")
        self.level = level


class TraceUnsupported(UserError):
    def __init__(self, *, framework: str, level: str, offers: list[str], reason: str) -> None:
        super().__init__(
            f"trace level {level!r} is not available for {framework}: {reason}; "
            f"{framework} offers {', '.join(offers)}"
        )
        self.framework = framework
        self.level = level
        self.offers = offers
        self.reason = reason


def parts(level: str) -> frozenset[str]:
    """What ``level`` records; raise ``UnknownTraceLevel`` for a name that is not a level."""
    found = PARTS.get(level)
    if found is None:
        raise UnknownTraceLevel(level=level)
    return found


def offers(framework: str) -> list[str]:
    """The levels ``framework`` can provide."""
    return [lvl for lvl in LEVELS if "framework" not in PARTS[lvl] or framework in PROFILERS]


def check_level(level: str, framework: str) -> str:
    """``level`` if ``framework`` can provide it; else ``TraceUnsupported`` naming its offer."""
    if "framework" in parts(level) and framework not in PROFILERS:
        raise TraceUnsupported(
            framework=framework,
            level=level,
            offers=offers(framework),
            reason="pinbench reads no operator profiler for it "
            f"(profilers: {', '.join(f'{k} ({v})' for k, v in sorted(PROFILERS.items()))})",
        )
    return level
