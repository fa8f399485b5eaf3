"""The evaluation request: constraints on the artifacts plus scenario settings, from YAML."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from pinbench.errors import InvalidDocument, UserError
from pinbench.registry.manifest import Platform
from pinbench.registry.names import Kind, Spec


class RequestError(InvalidDocument):
    what = "request"


# MLPerf Inference rules: ten-minute runs, query counts and tail percentiles per scenario.
MLPERF_PRESET: dict[str, dict[str, Any]] = {
    "SingleStream": {"min_duration_ms": 600_000, "min_query_count": 1024, "percentile": 90.0},
    "MultiStream": {
        "min_duration_ms": 600_000,
        "min_query_count": 270_336,
        "percentile": 99.0,
        "samples_per_query": 8,
    },
    "Server": {"min_duration_ms": 600_000, "min_query_count": 270_336, "percentile": 99.0},
    "Offline": {"min_duration_ms": 600_000, "min_query_count": 1},
}


class Scenario(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """MLPerf LoadGen settings: quick interactive defaults, or ``preset: mlperf`` for
    MLPerf's own values (settings written out explicitly still win)."""

    preset: Literal["quick", "mlperf"] = "quick"
    name: Literal["SingleStream", "MultiStream", "Server", "Offline"] = "SingleStream"
    mode: Literal["performance", "accuracy"] = "performance"
    min_duration_ms: int = 1000
    min_query_count: int = 100
    max_query_count: int | None = None
    target_qps: float | None = None
    target_latency_ms: float | None = None
    percentile: float = 90.0
    samples_per_query: int = 8
    sample_count: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.name == "Server" and (self.target_qps is None or self.target_qps <= 0):
            raise ValueError("scenario Server needs target_qps > 0")
        if self.min_duration_ms < 0 or self.min_query_count < 1:
            raise ValueError("min_duration_ms must be >= 0 and min_query_count >= 1")
        if not 0 < self.percentile < 100:
            raise ValueError("percentile must be between 0 and 100")


class Limits(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Resources an isolated runner (docker) grants a run; the local and venv runners
    record them but cannot enforce memory or CPU."""

    memory_mb: int = 4096
    cpus: float | None = None
    """CPUs the container may use (fractions allowed); None: all of the host's."""
    timeout_s: int = 1800
    """Wall-clock limit for the whole evaluation, model loading included."""

    def __post_init__(self) -> None:
        if self.memory_mb < 64:
            raise ValueError("limits.memory_mb must be >= 64")
        if self.cpus is not None and self.cpus <= 0:
            raise ValueError("limits.cpus must be > 0")
        if self.timeout_s < 1:
            raise ValueError("limits.timeout_s must be >= 1")


class Request(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    model: str
    dataset: str
    framework: str | None = None
    image: str | None = None
    system: Platform = msgspec.field(default_factory=Platform)
    scenario: Scenario = msgspec.field(default_factory=Scenario)
    batch_size: int | list[int] = 1
    """One batch size, or a sweep: one lockfile per batch size, grouped."""
    threads: int | None = None
    """Intra-op threads for the framework; None lets it decide."""
    limits: Limits | None = None
    """Resource limits for isolated runners; None: ``Limits()``'s defaults. Left out of the
    lockfile's bytes when unset, so lockfiles made before limits existed keep their digest."""

    def __post_init__(self) -> None:
        sizes = self.batch_sizes()
        if not sizes or any(b < 1 for b in sizes):
            raise ValueError("batch_size must be >= 1 (or a non-empty list of them)")
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"batch_size lists {sizes}: each size at most once")
        if self.threads is not None and self.threads < 1:
            raise ValueError("threads must be >= 1")
        for kind in (Kind.MODEL, Kind.DATASET, Kind.FRAMEWORK, Kind.IMAGE):
            text = getattr(self, kind.value)
            if text is not None:
                try:
                    Spec.parse(text, kind=kind)
                except UserError as exc:
                    raise ValueError(f"{kind.value}: {exc}") from None

    def batch_sizes(self) -> list[int]:
        return list(self.batch_size) if isinstance(self.batch_size, list) else [self.batch_size]

    @property
    def is_sweep(self) -> bool:
        return isinstance(self.batch_size, list)

    def specs(self) -> list[Spec]:
        out = []
        for kind in (Kind.MODEL, Kind.FRAMEWORK, Kind.DATASET, Kind.IMAGE):
            text = getattr(self, kind.value)
            if text is not None:
                out.append(Spec.parse(text, kind=kind))
        return out


def parse_request(data: object, *, source: str = "<request>") -> Request:
    if not isinstance(data, dict):
        raise RequestError(source=source, reason="expected a mapping at the top level")
    scenario = data.get("scenario")
    if isinstance(scenario, dict) and scenario.get("preset") == "mlperf":
        preset = MLPERF_PRESET.get(str(scenario.get("name", "SingleStream")), {})
        data = {**data, "scenario": {**preset, **scenario}}
    try:
        return msgspec.convert(data, type=Request, strict=True)
    except msgspec.ValidationError as exc:
        raise RequestError(source=source, reason=str(exc)) from None


def load_request(path: Path) -> Request:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RequestError(source=str(path), reason=f"cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise RequestError(source=str(path), reason=f"malformed YAML: {exc}") from None
    return parse_request(data, source=str(path))
