"""Every exception class pinbench defines pickles and comes back the same: its class, its
message, its attributes. Python pickles an exception as ``cls(*args)``, which a keyword-only
constructor refuses; a Ray agent's error once came back as ``UnserializableException`` and
its run was recorded as a lost system (``pinbench.errors.Picklable``).

The classes are found by importing every module of the package, so a new error class is
held to this without being listed; each is made by calling its constructor with a sample
value for each parameter's annotation (``SAMPLES``): a new annotation needs a sample here."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import pinbench
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.model_formats import Found
from pinbench.registry.names import ArtifactRef
from pinbench.registry.verify import FileCheck

NOT_IMPORTED = {
    "pinbench.__main__": "runs the CLI when imported",
    "pinbench.migrations.env": "Alembic's env: runs migrations when imported",
}
SAMPLES: dict[str, Any] = {
    "str": "some text",
    "str | None": "maybe text",
    "int": 7,
    "int | None": 9,
    "float": 2.5,
    "float | None": 3.5,
    "bool": True,
    "object": "a value",
    "Any": "any value",
    "Path": Path("/somewhere/file.bin"),
    "Digest": Digest("ab" * 32),
    "ArtifactRef": ArtifactRef.parse("model/vision/x@1.2.3"),
    "list[str]": ["first", "second"],
    "Sequence[str]": ("first", "second"),
    "tuple[str, ...]": ("first", "second"),
    "tuple[int, ...]": (1, 10, 100),
    "tuple[int, int]": (1, 2),
    "list[int]": [0, 3],
    "dict[str, str]": {"key": "value"},
    "list[tuple[str, list[str]]]": [("lab-a", ["no GPU"])],
    "list[tuple[str, str, str]]": [("$.model.trusted", "False", "True")],
    "list[FileCheck]": [FileCheck("model/x@1.0.0:a.onnx", "ab" * 32, 10, "missing")],
    "Mapping[str, tuple[list[str], list[str]]]": {"model/x": (["^1"], ["1.0.0"])},
    "Found | None": Found("keras-h5"),
}
MARK = yaml.Mark("doc.yaml", 0, 3, 4, None, 0)
"""``Any`` for PyYAML's marks (``_Limit(problem, mark)``)."""
VALID: dict[str, dict[str, Any]] = {
    "pinbench.provenance.key_material.KeyFileRefused": {"purpose": "attestation"},  # a key it knows
    "pinbench.registry.supported.IncompleteDetection": {"missing": "detection"},  # a field
}
"""Parameters whose value the constructor looks up: a value it accepts."""


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(pinbench.__path__, "pinbench.")]
    return sorted(n for n in names if n not in NOT_IMPORTED)


def _error_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__.startswith("pinbench.")
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


CLASSES = _error_classes()


def _instance(name: str, cls: type[BaseException]) -> BaseException:
    """``cls`` made by its own constructor, with a sample for each parameter (its default
    where it has one)."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    kinds = [p.kind for p in params]
    if kinds == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return cls("a message")  # the constructor of Exception itself
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in params:
        annotation = str(p.annotation)
        if p.name in VALID.get(name, {}):
            value: Any = VALID[name][p.name]
        elif p.name == "mark":
            value = MARK
        elif p.default is not p.empty:
            continue
        elif annotation in SAMPLES:
            value = SAMPLES[annotation]
        else:
            raise AssertionError(f"{cls.__qualname__}({p.name}: {annotation}): add a sample")
        if p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    return cls(*args, **kwargs)


def test_every_module_was_searched() -> None:
    assert len(CLASSES) > 150  # the package's errors, not a walk that stopped early
    assert "pinbench.errors.PinbenchError" in CLASSES
    assert "pinbench.cluster.dispatch.AgentFailed" in CLASSES


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_error_class_pickles_with_its_message_and_data(name: str) -> None:
    error = _instance(name, CLASSES[name])
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error) and str(error)
    # the same data (compared as pickled: a PyYAML mark has no ``==``)
    assert pickle.dumps((back.args, vars(back))) == pickle.dumps((error.args, vars(error)))
