"""A chain locked from its stages' manifests (``lock_chain``), a pure function of what the
registry holds, so ``pinbench verify`` re-derives it as it re-derives the rest of a lockfile.

Refused, naming the stage: a wire to a stage or an output that does not exist, a cycle, an
input that is neither wired nor fed otherwise (a constant, a state), a wire to an input the
model does not declare, a last stage that is not the request's model, a stage's own
``preprocess``/``postprocess`` (a chain's code goes between stages), output ``steps`` on a stage
before the last (the task applies them to the last stage's only), more than one stage
fed from the samples, a stage that feeds nothing the last stage is fed from, and a stage's
code or join ``file`` that is not one of its model's files.

``sample.bytes`` is no stage: a wire from it feeds the query's sample file. In a stage with
``code`` it may be read under a name of the code's choosing (the code makes the model's
inputs); every other wire names an input the model declares."""

from __future__ import annotations

from collections.abc import Mapping

from pinbench.registry.chain_spec import (
    SAMPLE,
    SAMPLE_BYTES,
    ChainRefused,
    ChainSpec,
    ChainStage,
    LockedChain,
    LockedStage,
)
from pinbench.registry.input_kinds import from_samples
from pinbench.registry.manifest import ModelManifest


def _source(wire: str) -> tuple[str, str]:
    stage, _, output = wire.partition(".")
    return stage, output


def run_order(stages: list[ChainStage]) -> list[ChainStage]:
    """The stages, each after every stage it is fed from (stable: the request's order where it
    allows), a stage with no wired inputs (fed from the samples) first, even where a stage
    wired ``sample.bytes`` alone is listed before it; a wire to an unknown stage or a cycle is
    refused, the cycle named."""
    by_name = {s.name: s for s in stages}
    for stage in stages:
        for target, wire in stage.inputs.items():
            source, _ = _source(wire)
            if source != SAMPLE and source not in by_name:
                raise ChainRefused(
                    stage=stage.name,
                    reason=f"input {target!r} is wired to {wire!r}, but the chain has no stage "
                    f"{source!r} (its stages: {', '.join(by_name)})",
                )
    order: list[ChainStage] = []
    state: dict[str, str] = {}

    def visit(stage: ChainStage, path: list[str]) -> None:
        if state.get(stage.name) == "done":
            return
        if state.get(stage.name) == "on path":
            cycle = [*path[path.index(stage.name) :], stage.name]
            raise ChainRefused(
                stage=stage.name,
                reason=f"the wiring makes a cycle: {' -> '.join(cycle)} (each stage is fed "
                "from earlier stages only)",
            )
        state[stage.name] = "on path"
        for wire in stage.inputs.values():
            if wire != SAMPLE_BYTES:
                visit(by_name[_source(wire)[0]], [*path, stage.name])
        state[stage.name] = "done"
        order.append(stage)

    for stage in sorted(stages, key=lambda s: bool(s.inputs)):  # stable
        visit(stage, [])  # the stage fed from the samples first: the run feeds stage 0 them
    return order


def lock_chain(
    spec: ChainSpec, last_model: str, manifests: Mapping[str, tuple[str, ModelManifest]]
) -> LockedChain:
    """The locked chain: ``manifests`` maps each stage's model name to its resolved version
    and manifest; ``last_model`` is the request's model (the stage scored)."""
    order = run_order(spec.stages)
    if order[-1].model_spec.name != last_model:
        raise ChainRefused(
            stage=order[-1].name,
            reason=f"the last stage to run is model {order[-1].model!r}, but the request's "
            f"model is {last_model!r}: the request's model is the chain's last stage, the one "
            "its dataset's task scores",
        )
    fed = [s.name for s in order if not s.inputs]
    if len(fed) != 1:
        raise ChainRefused(
            stage=fed[-1] if fed else order[0].name,
            reason=f"exactly one stage is fed from the samples (it has no wired `inputs`); "
            f"this chain has {len(fed)}: {fed}",
        )
    locked = [_locked(stage, manifests) for stage in order]
    for stage in locked[:-1]:
        stepped = [str(o.name) for o in stage.outputs if o.steps]
        if stepped:
            raise ChainRefused(
                stage=stage.name,
                reason=f"output(s) {stepped} of model {stage.model}@{stage.version} declare "
                "`steps`, which the task applies to the last stage's outputs only: a wired "
                "output is fed raw (do the work in the next stage's `code`)",
            )
    outputs = {s.name: {str(o.name) for o in s.outputs} for s in locked}
    for stage in locked:
        _check_wires(stage, outputs)
    _check_all_feed_the_last(order)
    return LockedChain(stages=locked)


def _check_all_feed_the_last(order: list[ChainStage]) -> None:
    """Every stage but the last is one the last is fed from, directly or not: a stage that
    feeds nothing would be run and timed for no score."""
    by_name = {s.name: s for s in order}
    feeding, todo = set(), [order[-1]]
    while todo:
        for wire in todo.pop().inputs.values():
            source = _source(wire)[0]
            if source != SAMPLE and source not in feeding:
                feeding.add(source)
                todo.append(by_name[source])
    idle = [s.name for s in order[:-1] if s.name not in feeding]
    if idle:
        raise ChainRefused(
            stage=idle[0],
            reason=f"it feeds nothing the last stage {order[-1].name!r} is fed from (stages "
            f"that feed nothing: {idle}): it would be run and timed for no score; take it out "
            "of the chain or wire its outputs",
        )


def _locked(stage: ChainStage, manifests: Mapping[str, tuple[str, ModelManifest]]) -> LockedStage:
    name = stage.model_spec.name
    version, model = manifests[name]
    own = [r for r in ("preprocess", "postprocess") if getattr(model, r) is not None]
    if own:
        raise ChainRefused(
            stage=stage.name,
            reason=f"model {name}@{version} declares `{'` and `'.join(own)}`: inside a chain "
            "a stage's own processing code is not run; put the work in the `code` of the stage "
            "that reads it (between stages), or publish the model without it",
        )
    for role, code in (("code", stage.code), ("join", stage.join)):
        if code is None or code.file is None:
            continue
        files = sorted(f.path for f in model.files)
        if code.file not in files:
            raise ChainRefused(
                stage=stage.name,
                reason=f"its {role}'s file {code.file!r} is not a file of model "
                f"{name}@{version} (its files: {files}): a stage's code file is one of its "
                "model's files, pinned by their sha256",
            )
    if model.builder is not None:
        raise ChainRefused(
            stage=stage.name,
            reason=f"model {name}@{version} is built by its own `builder` code "
            f"({model.builder.where}), which a chain's stage does not run yet: run the model "
            "on its own, or publish it as torchscript or torch-export",
        )
    return LockedStage(
        name=stage.name,
        model=name,
        version=version,
        format=model.format,
        architecture=model.architecture,
        trusted=model.trusted,
        inputs=list(model.inputs),
        outputs=list(model.outputs),
        wires=dict(sorted(stage.inputs.items())),
        code=stage.code,
        join=stage.join,
    )


def _check_wires(stage: LockedStage, outputs: Mapping[str, set[str]]) -> None:
    declared = {str(i.name): i for i in stage.inputs}
    for target, wire in stage.wires.items():
        source, output = _source(wire)
        if wire == SAMPLE_BYTES and stage.code is not None and target not in declared:
            continue  # the sample's file, read by the code under a name of its own
        if wire != SAMPLE_BYTES and output not in outputs[source]:
            raise ChainRefused(
                stage=stage.name,
                reason=f"input {target!r} is wired to {wire!r}, but stage {source!r} "
                f"declares no output {output!r}; its outputs: {sorted(outputs[source])}",
            )
        if target not in declared:
            raise ChainRefused(
                stage=stage.name,
                reason=f"input {target!r} (wired to {wire!r}) is not an input model "
                f"{stage.model}@{stage.version} declares; its inputs: {sorted(declared)}",
            )
        if declared[target].steps or declared[target].stream is not None:
            what = "`steps`" if declared[target].steps else "`stream`"
            raise ChainRefused(
                stage=stage.name,
                reason=f"input {target!r} declares {what}, which apply to a sample, not a "
                "wired output: put the transformation in the stage's `code`",
            )
    if not stage.wires:
        return
    unfed = [n for n, i in declared.items() if from_samples(i) and n not in stage.wires]
    if unfed:
        raise ChainRefused(
            stage=stage.name,
            reason=f"input(s) {unfed} of model {stage.model}@{stage.version} are wired to "
            "nothing: wire each to STAGE.OUTPUT in the stage's `inputs`",
        )
