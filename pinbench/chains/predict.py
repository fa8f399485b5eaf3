"""A chain as one prediction: each stage's framework call in turn, the pinned code between
stages, every call timed apart (``perf_counter_ns``) once ``timing`` is on (after the
warm-up), so that each stage has its own latency series beside the scenario's end-to-end one.
The first call checks what each stage is fed against its model's declared inputs, before
anything is timed."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pinbench.chains.spec import CODE_SUFFIX, ChainRefused, LockedStage
from pinbench.evaluator.latency_metrics import series
from pinbench.evaluator.named import NamedInputs
from pinbench.registry.input_kinds import from_samples

if TYPE_CHECKING:
    from pinbench.evaluator.predictors.base import Predictor
    from pinbench.processing.loading import Loaded

Array = np.ndarray[Any, Any]


class Stage:
    """One stage opened: its predictor, its loaded code (if any) and its files."""

    def __init__(
        self,
        locked: LockedStage,
        predictor: Predictor,
        code: Loaded | None,
        files: Mapping[str, Path],
    ) -> None:
        self.locked = locked
        self.predictor = predictor
        self.code = code
        self.files = dict(files)
        self.fed = [str(i.name) for i in locked.inputs if from_samples(i)]
        self.times: list[int] = []
        self.code_times: list[int] = []


class ChainPredictor:
    """``predict(batch)``: the first stage on the batch, every other on what it is wired to;
    the last stage's outputs are the chain's."""

    def __init__(self, stages: list[Stage]) -> None:
        self.stages = stages
        self.timing = False
        self.checked = False

    def predict(self, batch: Any) -> dict[str, Array]:
        first, *rest = self.stages
        outputs = self._call(first, batch)
        values = {f"{first.locked.name}.{k}": v for k, v in outputs.items()}
        for stage in rest:
            wired = {target: values[wire] for target, wire in stage.locked.wires.items()}
            if stage.code is not None:
                t0 = time.perf_counter_ns()
                wired = stage.code.call(wired, stage.files)
                if self.timing:
                    stage.code_times.append(time.perf_counter_ns() - t0)
            if not self.checked:
                check_fed(stage, wired)
            feed = (
                wired[stage.fed[0]]
                if len(stage.fed) == 1
                else NamedInputs({n: wired[n] for n in stage.fed})
            )
            outputs = self._call(stage, feed)
            values.update({f"{stage.locked.name}.{k}": v for k, v in outputs.items()})
        self.checked = True
        return outputs

    def _call(self, stage: Stage, feed: Any) -> dict[str, Array]:
        if not self.checked:
            return dict(stage.predictor.first_predict(feed))
        t0 = time.perf_counter_ns()
        out = stage.predictor.predict(feed)
        if self.timing:
            stage.times.append(time.perf_counter_ns() - t0)
        return dict(out)

    def metrics(self) -> dict[str, float]:
        """``stage_<name>_latency_*_ns`` (each stage's framework call) and, for a stage with
        code, ``stage_<name>_code_latency_*_ns``, at LoadGen's percentiles (disjoint: no stage
        name ends in ``_code``)."""
        out: dict[str, float] = {}
        for stage in self.stages:
            name = stage.locked.name
            parts = [(stage.times, f"stage_{name}_latency")]
            if stage.code is not None:
                parts.append((stage.code_times, f"stage_{name}{CODE_SUFFIX}_latency"))
            for times, prefix in parts:
                figures = series(np.array(times, dtype=np.int64), prefix)
                assert not set(figures) & set(out), f"{prefix} named twice"
                out.update(figures)
        return out

    def framework_ns(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Each timed query's framework calls summed over the stages (the code between them
        and the chain's own Python left out), in query order."""
        total = np.zeros(len(self.stages[0].times), dtype=np.int64)
        for stage in self.stages:
            total += np.array(stage.times, dtype=np.int64)
        return total

    def close(self) -> None:
        for stage in self.stages:
            stage.predictor.close()


def check_fed(stage: Stage, fed: Any) -> None:
    """What a stage is fed (wired, or made by its code) against its model's declared inputs:
    every wired input by name, an array of the declared element type and, where declared, of
    the declared shape after the batch axis; refused naming the stage and the input."""
    locked = stage.locked
    where = f"{locked.model}@{locked.version}"
    made = f" (made by {stage.code.where})" if stage.code is not None else ""
    if not isinstance(fed, dict) or set(fed) != set(locked.wires):
        got = sorted(fed) if isinstance(fed, dict) else type(fed).__name__
        raise ChainRefused(
            stage=locked.name,
            reason=f"its inputs{made} are {got}, model {where} is wired {sorted(locked.wires)}",
        )
    declared = {str(i.name): i for i in locked.inputs}
    for name in locked.wires:
        value, spec = fed[name], declared[name]
        if not isinstance(value, np.ndarray):
            raise ChainRefused(
                stage=locked.name,
                reason=f"input {name!r}{made} is a {type(value).__name__}, not a NumPy array",
            )
        if value.dtype != np.dtype(spec.element_type):
            raise ChainRefused(
                stage=locked.name,
                reason=f"input {name!r}{made} has dtype {value.dtype}, model {where} declares "
                f"element_type {spec.element_type}",
            )
        if spec.shape and not _fits(list(value.shape[1:]), spec.shape):
            raise ChainRefused(
                stage=locked.name,
                reason=f"input {name!r}{made} has shape {list(value.shape)}, model {where} "
                f"declares {spec.shape} after the batch axis",
            )


def _fits(shape: list[int], declared: list[int]) -> bool:
    return len(shape) == len(declared) and all(
        d <= 0 or d == s for s, d in zip(shape, declared, strict=True)
    )
