"""The evaluation form: its fields as the browser sends them, turned into one evaluation
request per model (each may be a batch-size sweep). Every refusal names the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pinbench.errors import UserError
from pinbench.registry.request import Request, Scenario, parse_request

SCENARIOS = ("SingleStream", "MultiStream", "Server", "Offline")
MODES = ("performance", "accuracy")
RUNNERS = ("auto", "local", "venv", "docker")
MAX_MODELS = 8
DEFAULT = Scenario()


class FormError(UserError):
    def __init__(self, *, field_name: str, reason: str) -> None:
        super().__init__(f"{field_name}: {reason}")
        self.field_name = field_name
        self.reason = reason


@dataclass
class EvaluateForm:
    """The form's values as text, exactly as typed (so a refused form is shown again)."""

    models: str = ""
    framework: str = ""
    dataset: str = ""
    scenario: str = DEFAULT.name
    mode: str = DEFAULT.mode
    batch_sizes: str = "1"
    min_duration_ms: str = str(DEFAULT.min_duration_ms)
    min_query_count: str = str(DEFAULT.min_query_count)
    target_qps: str = ""
    threads: str = ""
    runner: str = "auto"
    errors: list[str] = field(default_factory=list)

    @classmethod
    def from_fields(cls, data: dict[str, Any]) -> EvaluateForm:
        names = cls.__dataclass_fields__.keys() - {"errors"}
        values: dict[str, Any] = {k: str(data[k]).strip() for k in names if k in data}
        return cls(**values)

    def model_lines(self) -> list[str]:
        return [line.strip() for line in self.models.splitlines() if line.strip()]

    def requests(self) -> list[Request]:
        """One request per model line; FormError (naming the field) on the first bad value."""
        lines = self.model_lines()
        if not lines:
            raise FormError(field_name="models", reason="name at least one model, one per line")
        if len(lines) > MAX_MODELS:
            raise FormError(field_name="models", reason=f"at most {MAX_MODELS} models at once")
        if not self.dataset:
            raise FormError(field_name="dataset", reason="name a dataset (NAME@RANGE)")
        _choice("scenario", self.scenario, SCENARIOS)
        _choice("mode", self.mode, MODES)
        _choice("runner", self.runner, RUNNERS)
        scenario: dict[str, Any] = {
            "name": self.scenario,
            "mode": self.mode,
            "min_duration_ms": _whole("min_duration_ms", self.min_duration_ms, low=0),
            "min_query_count": _whole("min_query_count", self.min_query_count, low=1),
        }
        if self.target_qps:
            scenario["target_qps"] = _number("target_qps", self.target_qps)
        sizes = [_whole("batch sizes", s, low=1) for s in self.batch_sizes.split(",") if s.strip()]
        if not sizes:
            raise FormError(field_name="batch sizes", reason="give one or more, e.g. 1 or 1, 4, 16")
        out = []
        for line in lines:
            data: dict[str, Any] = {
                "model": line,
                "dataset": self.dataset,
                "scenario": scenario,
                "batch_size": sizes if len(sizes) > 1 else sizes[0],
            }
            if self.framework:
                data["framework"] = self.framework
            if self.threads:
                data["threads"] = _whole("threads", self.threads, low=1)
            out.append(parse_request(data, source=f"for model {line!r}"))
        return out


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise FormError(field_name=name, reason=f"{value!r} is not one of {', '.join(allowed)}")


def _whole(name: str, text: str, *, low: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise FormError(field_name=name, reason=f"{text.strip()!r} is not a whole number") from None
    if value < low:
        raise FormError(field_name=name, reason=f"{value} is below {low}")
    return value


def _number(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise FormError(field_name=name, reason=f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise FormError(field_name=name, reason=f"{text!r} must be a positive number")
    return value
