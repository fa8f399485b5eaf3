"""The evaluation request: constraints on the artifacts plus scenario settings, from YAML."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec
import yaml

from pinbench.errors import InvalidDocument, UserError
from pinbench.registry.manifest import Platform
from pinbench.registry.names import Kind, Spec


class RequestError(InvalidDocument):
    what = "request"


class Scenario(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """MLPerf LoadGen settings; quick interactive defaults."""

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


class Request(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    model: str
    dataset: str
    framework: str | None = None
    image: str | None = None
    system: Platform = msgspec.field(default_factory=Platform)
    scenario: Scenario = msgspec.field(default_factory=Scenario)
    batch_size: int = 1

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        for kind in (Kind.MODEL, Kind.DATASET, Kind.FRAMEWORK, Kind.IMAGE):
            text = getattr(self, kind.value)
            if text is not None:
                try:
                    Spec.parse(text, kind=kind)
                except UserError as exc:
                    raise ValueError(f"{kind.value}: {exc}") from None

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
