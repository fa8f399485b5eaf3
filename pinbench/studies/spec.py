"""A study file, parsed and checked before anything runs.

```yaml
name: seed-quick                  # lowercase letters, digits and dashes
description: the catalog on this machine's configurations
runner: local                     # local or venv
models:                           # each with its framework and dataset
  - {model: vision/digits-cnn-onnx@^1, framework: onnxruntime@*, dataset: sklearn-digits@1,
     family: digits-cnn, batch_sizes: [1, 16]}
scenarios:                        # a name (a column) for each request scenario
  accuracy: {name: SingleStream, mode: accuracy}
  SingleStream: {name: SingleStream, min_duration_ms: 0, min_query_count: 64}
  Offline: {name: Offline, min_duration_ms: 0}
systems:                          # this machine's configurations
  - {name: one-core, threads: 1, cpus: [0]}
```

Or a cluster's agents, run through a server with that cluster (``pinbench serve --cluster``):
``systems: [{name: a, agent: lab-a}, {name: b, agent: lab-b, threads: 2}]``.

Every field is honoured or refused: an unknown key, a duplicate model entry, system or
scenario name, and every number outside its bound are refused naming the place; each cell's
evaluation request is parsed here too, so a bad scenario is refused before the first run.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from pinbench.registry.request import BatchSize, Threads
from pinbench.studies.errors import StudyError, StudyNotFound

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}\Z")
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@/-]{0,99}\Z")
"""A scenario's or a family's name: what the matrix prints as a column or a group."""
MAX_MODELS = 200
MAX_SCENARIOS = 8
MAX_SYSTEMS = 16
MAX_BATCH_SIZES = 16
MAX_CPUS = 4096
CpuIndex = Annotated[int, msgspec.Meta(ge=0, lt=MAX_CPUS)]
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
BUILTIN = Path(__file__).parent / "builtin"
"""The built-in studies, one file each: ``seed``, ``seed-quick`` and ``engines``."""


class ModelEntry(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    model: Text
    """``NAME@RANGE``, as a request names it."""
    framework: Text
    dataset: Text
    family: Annotated[str, msgspec.Meta(min_length=1, max_length=100)] | None = None
    """What the speed-up analysis groups across frameworks (default: the model's name)."""
    batch_sizes: (
        Annotated[list[BatchSize], msgspec.Meta(min_length=1, max_length=MAX_BATCH_SIZES)] | None
    ) = None
    """Offline cells only: one cell per batch size (a sweep); other scenarios use 1."""
    scenarios: (
        Annotated[list[Annotated[str, msgspec.Meta(min_length=1, max_length=40)]],
                  msgspec.Meta(min_length=1, max_length=MAX_SCENARIOS)] | None
    ) = None  # fmt: skip
    """The study's scenarios this model runs in (default: all); e.g. no accuracy cell for a
    model with random weights."""
    generation: Annotated[dict[str, Any], msgspec.Meta(max_length=32)] | None = None
    """A generating dataset's ``generation`` section (the request's: docs/running.md), for
    every cell of the entry (checked with each cell's request)."""

    @property
    def name(self) -> str:
        return self.model.partition("@")[0]

    @property
    def group(self) -> str:
        return self.family or self.name


class System(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=63)]
    threads: Threads | None = None
    """The frameworks' intra-op threads, pinned in each cell's lockfile."""
    cpus: Annotated[list[CpuIndex], msgspec.Meta(min_length=1, max_length=MAX_CPUS)] | None = None
    """The CPUs the run may use (its affinity); each must be this machine's when it runs."""
    agent: Annotated[str, msgspec.Meta(min_length=1, max_length=63)] | None = None
    """A system of the cluster of the server the study runs on (``pinbench systems``): its
    cells run there, through that server (``api.study_runs``)."""


class Study(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=63)]
    models: Annotated[list[ModelEntry], msgspec.Meta(min_length=1, max_length=MAX_MODELS)]
    scenarios: Annotated[
        dict[Annotated[str, msgspec.Meta(min_length=1, max_length=40)], dict[str, Any]],
        msgspec.Meta(min_length=1, max_length=MAX_SCENARIOS),
    ]
    systems: Annotated[list[System], msgspec.Meta(min_length=1, max_length=MAX_SYSTEMS)]
    description: Annotated[str, msgspec.Meta(max_length=500)] = ""
    runner: Literal["local", "venv"] = "local"

    def to_data(self) -> dict[str, Any]:
        """As plain data; a system's ``agent`` only where it names one (so a study recorded
        before agents existed keeps its digest)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        for entry in data["models"]:  # as recorded before entries generated: the same digest
            if entry.get("generation") is None:
                entry.pop("generation", None)
        for system in data["systems"]:
            if system.get("agent") is None:
                system.pop("agent", None)
        return data

    @property
    def on_agents(self) -> bool:
        """Whether its systems are a cluster's agents (else this machine's configurations)."""
        return any(system.agent is not None for system in self.systems)

    @property
    def digest(self) -> str:
        """sha256 of the study's canonical JSON: what a study of this name was run from."""
        text = json.dumps(self.to_data(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _refuse_duplicates(study: Study, source: str) -> None:
    seen: dict[tuple[str, str, str], int] = {}
    for n, entry in enumerate(study.models):
        key = (entry.model, entry.framework, entry.dataset)
        if key in seen:
            raise StudyError(
                source=source,
                reason=f"models[{n}] repeats models[{seen[key]}] ({entry.model} on "
                f"{entry.framework}, {entry.dataset})",
            )
        seen[key] = n
        if entry.batch_sizes and len(set(entry.batch_sizes)) != len(entry.batch_sizes):
            raise StudyError(source=source, reason=f"models[{n}].batch_sizes repeats a size")
        for name in entry.scenarios or []:
            if name not in study.scenarios:
                raise StudyError(
                    source=source,
                    reason=f"models[{n}].scenarios names {name!r}, which the study's scenarios "
                    f"do not ({', '.join(study.scenarios)})",
                )
        if entry.scenarios and len(set(entry.scenarios)) != len(entry.scenarios):
            raise StudyError(source=source, reason=f"models[{n}].scenarios repeats a name")
        if entry.batch_sizes and not any(
            study.scenarios[s].get("name") == "Offline" for s in entry.scenarios or study.scenarios
        ):
            raise StudyError(
                source=source,
                reason=f"models[{n}].batch_sizes: the model runs in no Offline scenario, where "
                "a batch size sweeps",
            )
    names: dict[str, int] = {}
    for n, system in enumerate(study.systems):
        if not NAME.match(system.name):
            raise StudyError(
                source=source,
                reason=f"systems[{n}].name {system.name!r}: lowercase letters, digits and "
                "dashes, starting with a letter or digit",
            )
        if system.name in names:
            raise StudyError(source=source, reason=f"systems[{n}] repeats the name {system.name!r}")
        names[system.name] = n
        if system.cpus and len(set(system.cpus)) != len(system.cpus):
            raise StudyError(source=source, reason=f"systems[{n}].cpus repeats a CPU")
        if system.agent is not None and system.cpus is not None:
            raise StudyError(
                source=source,
                reason=f"systems[{n}]: cpus are this machine's, and an agent runs on its own "
                "(give threads, or name a configuration of this machine without agent)",
            )
        if system.agent is not None and not LABEL.match(system.agent):
            raise StudyError(
                source=source,
                reason=f"systems[{n}].agent {system.agent!r}: a cluster system's name "
                "(letters, digits and _.@/-)",
            )
    if len({s.agent is None for s in study.systems}) > 1:
        raise StudyError(
            source=source,
            reason="systems: all this machine's configurations or all a cluster's agents (a "
            "study runs on a local registry or through a server, not both)",
        )


def parse_study(data: object, *, source: str) -> Study:
    """The study in ``data`` (a YAML document's value), every cell's request parsed too."""
    from pinbench import typed
    from pinbench.registry.explain import explain

    try:
        study = typed.convert(data, Study)
    except msgspec.ValidationError as exc:
        raise StudyError(source=source, reason=explain(str(exc), Study, data)) from None
    for key in study.scenarios:
        if not LABEL.match(key):
            raise StudyError(
                source=source,
                reason=f"scenarios: the name {key!r} is letters, digits and _.@/- (a column)",
            )
    for n, entry in enumerate(study.models):
        if entry.family is not None and not LABEL.match(entry.family):
            raise StudyError(
                source=source,
                reason=f"models[{n}].family {entry.family!r}: letters, digits and _.@/-",
            )
    if any((ord(c) < 32 and c not in "\n\t") or ord(c) == 127 for c in study.description):
        raise StudyError(source=source, reason="description holds a control character")
    if not NAME.match(study.name):
        raise StudyError(
            source=source,
            reason=f"name {study.name!r}: lowercase letters, digits and dashes, starting with a "
            "letter or digit",
        )
    _refuse_duplicates(study, source)
    from pinbench.studies.cells import cells

    cells(study, source=source)  # each cell's request parses, and there are not too many
    return study


def _path(where: str, *, files: bool) -> tuple[Path, str]:
    """The file ``where`` names and how a study records its source: a built-in study by its
    name, else (``files``) a file, by its name only (never its folders). A name that is both a
    built-in study and a file here is refused: say ``./NAME`` for the file."""
    builtin = NAME.match(where) is not None and (BUILTIN / f"{where}.yaml").is_file()
    if builtin and files and Path(where).exists():
        raise StudyError(
            source=where,
            reason=f"names both the built-in study and a file here: say ./{where} for the file",
        )
    if builtin:
        return BUILTIN / f"{where}.yaml", f"built-in {where}"
    if not files:
        raise StudyNotFound(name=where)
    return Path(where), Path(where).name


def load_study(where: str, *, files: bool = True) -> tuple[Study, str]:
    """The study a file names (``files``), or a built-in study by its name; with its source
    as recorded (a built-in study's name, or the file's name)."""
    from pinbench.registry.yamlsafe import YamlRefused, load_yaml, read_yaml_file

    path, recorded = _path(where, files=files)
    try:
        text = read_yaml_file(path)
    except FileNotFoundError:
        raise StudyError(
            source=where,
            reason="no such file, and no built-in study of that name (seed, seed-quick, engines)",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StudyError(source=where, reason=f"cannot read it: {exc}") from None
    try:
        data = load_yaml(text)
    except YamlRefused as exc:
        raise StudyError(source=where, reason=str(exc)) from None
    return parse_study(data, source=where), recorded


__all__ = ["BUILTIN", "ModelEntry", "Study", "System", "load_study", "parse_study"]
