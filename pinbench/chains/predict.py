"""A chain as one prediction: each stage's framework call in turn, the pinned code between
stages, every call timed apart (``perf_counter_ns``) once ``timing`` is on (after the
warm-up), so that each stage has its own latency series beside the scenario's end-to-end one.
A fan-out stage (one with a ``join``) is called once per feed its code returns, its latency
per query the sum of its calls. The first call checks what each stage is fed against its
model's declared inputs, before anything is timed (a fan-out's feeds until it is first fed)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pinbench.bounds import FAN_OUT_FEEDS
from pinbench.registry.chain_spec import CODE_SUFFIX, SAMPLE_BYTES, ChainRefused, LockedStage
from pinbench.registry.input_kinds import from_samples
from pinbench.worker.latency_metrics import series
from pinbench.worker.named import NamedInputs

if TYPE_CHECKING:
    from pinbench.processing.loading import Loaded
    from pinbench.worker.predictors.base import Predictor

Array = np.ndarray[Any, Any]


class Stage:
    """One stage opened: its predictor, its loaded code and join (if any) and its files."""

    def __init__(
        self,
        locked: LockedStage,
        predictor: Predictor,
        code: Loaded | None,
        files: Mapping[str, Path],
        join: Loaded | None = None,
    ) -> None:
        self.locked = locked
        self.predictor = predictor
        self.code = code
        self.join = join
        self.files = dict(files)
        self.fed = [str(i.name) for i in locked.inputs if from_samples(i)]
        self.times: list[int] = []
        self.code_times: list[int] = []
        self.calls: list[int] = []
        """A fan-out's calls per timed query."""
        self.checked = False
        """Its feeds checked: at the first prediction (a fan-out's, at the first it is fed)."""
        self.cold = True
        """Not called yet: its first call is ``first_predict`` (a fan-out's, when first fed)."""


class ChainPredictor:
    """``predict(batch)``: the first stage on the batch, every other on what it is wired to;
    the last stage's outputs are the chain's. Where a stage is wired ``sample.bytes``, the
    batch is ``NamedInputs`` holding the sample file's bytes under that name beside the first
    stage's inputs (``first``: the name of its one input, fed as an array)."""

    def __init__(self, stages: list[Stage], first: str | None = None) -> None:
        self.stages = stages
        self.first = first
        self.timing = False

    def predict(self, batch: Any) -> dict[str, Array]:
        first, *rest = self.stages
        values: dict[str, Any] = {}
        if isinstance(batch, NamedInputs) and SAMPLE_BYTES in batch.arrays:
            arrays = dict(batch.arrays)
            values[SAMPLE_BYTES] = arrays.pop(SAMPLE_BYTES)
            batch = arrays[self.first] if self.first is not None else NamedInputs(arrays)
        outputs, ns = self._call(first, batch)
        self._took(first, ns)
        values.update({f"{first.locked.name}.{k}": v for k, v in outputs.items()})
        for stage in rest:
            wired = {target: values[wire] for target, wire in stage.locked.wires.items()}
            code_ns = 0
            if stage.code is not None:
                t0 = time.perf_counter_ns()
                wired = stage.code.call(wired, stage.files)
                code_ns += time.perf_counter_ns() - t0
            if stage.join is None:
                if not stage.checked:
                    check_fed(stage, wired)
                    stage.checked = True
                outputs, ns = self._call(stage, self._feed(stage, wired))
            else:
                outputs, ns, code_ns = self._fan_out(stage, wired, code_ns)
            self._took(stage, ns, code_ns)
            values.update({f"{stage.locked.name}.{k}": v for k, v in outputs.items()})
        return outputs

    def _fan_out(self, stage: Stage, feeds: Any, code_ns: int) -> tuple[dict[str, Array], int, int]:
        """The stage once per feed, then its join on the list of outputs: (the joined
        outputs, the calls' time, the code's and the join's time)."""
        assert stage.join is not None and stage.code is not None
        if not isinstance(feeds, list):  # every query: a dict iterated would feed its keys
            raise ChainRefused(
                stage=stage.locked.name,
                reason=f"its code {stage.code.where} returned a {type(feeds).__name__}; "
                "a stage with a `join` is a fan-out: its code returns a list of feeds, "
                "one dict of inputs per call (an empty list: no call)",
            )
        if not FAN_OUT_FEEDS.holds(len(feeds)):  # each call's outputs are held until the join
            raise ChainRefused(
                stage=stage.locked.name,
                reason=f"its code {stage.code.where} returned {len(feeds):,} feeds for one "
                f"query; a fan-out makes at most {int(FAN_OUT_FEEDS.high):,} calls per query",
            )
        if not stage.checked:
            for feed in feeds:
                check_fed(stage, feed)
            stage.checked = bool(feeds)
        results, ns = [], 0
        for feed in feeds:
            got, took = self._call(stage, self._feed(stage, feed))
            results.append(got)
            ns += took
        if self.timing:
            stage.calls.append(len(feeds))
        t0 = time.perf_counter_ns()
        joined = stage.join.call(results, stage.files)
        code_ns += time.perf_counter_ns() - t0
        check_joined(stage, joined)  # every query: its answer is what later stages read
        return joined, ns, code_ns

    @staticmethod
    def _feed(stage: Stage, wired: dict[str, Any]) -> Any:
        if len(stage.fed) == 1:
            return wired[stage.fed[0]]
        return NamedInputs({n: wired[n] for n in stage.fed})

    def _call(self, stage: Stage, feed: Any) -> tuple[dict[str, Array], int]:
        t0 = time.perf_counter_ns()
        if stage.cold:  # the chain's first prediction, or a fan-out's first feed after it
            out = stage.predictor.first_predict(feed)
            stage.cold = False
        else:
            out = stage.predictor.predict(feed)
        return dict(out), time.perf_counter_ns() - t0

    def _took(self, stage: Stage, ns: int, code_ns: int = 0) -> None:
        if self.timing:
            stage.times.append(ns)
            if stage.code is not None:
                stage.code_times.append(code_ns)

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
    if not isinstance(fed, dict) or set(fed) != set(stage.fed):
        got = sorted(fed) if isinstance(fed, dict) else type(fed).__name__
        raise ChainRefused(
            stage=locked.name,
            reason=f"its inputs{made} are {got}, model {where} is fed {sorted(stage.fed)}",
        )
    declared = {str(i.name): i for i in locked.inputs}
    for name in stage.fed:
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


def check_joined(stage: Stage, joined: Any) -> None:
    """A fan-out's join returns one NumPy array per output its model declares, by name."""
    assert stage.join is not None
    locked = stage.locked
    names = sorted(str(o.name) for o in locked.outputs)
    if (
        not isinstance(joined, dict)
        or (names and sorted(joined) != names)
        or not all(isinstance(v, np.ndarray) for v in joined.values())
    ):
        got = (
            {k: type(v).__name__ for k, v in joined.items()}
            if isinstance(joined, dict)
            else type(joined).__name__
        )
        raise ChainRefused(
            stage=locked.name,
            reason=f"its join {stage.join.where} returned {got}; it returns one NumPy array "
            f"per output model {locked.model}@{locked.version} declares: {names}",
        )
