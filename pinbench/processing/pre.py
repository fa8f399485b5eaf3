"""``preprocess`` over a run's samples, before anything is timed: one call per sample, each
answer checked (``checks``), the samples stacked, and the arrays cached on disk like the steps'
(``worker.feed``) under (dataset digest, processing digest), so a cache hit calls no code and
reads no sample. The processing digest covers every file of the model artifact by its sha256:
the code reads them through ``files``, so two versions that share the code but not a vocabulary
never share arrays."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.processing.checks import check_inputs, check_same_shape
from pinbench.processing.loading import Loaded, python_version
from pinbench.registry.ports import Input
from pinbench.worker.feed import Feed, cached_array
from pinbench.worker.named import NamedInputs
from pinbench.worker.samples import Samples
from pinbench.worker.stop import Stop

Array = npt.NDArray[np.generic]
Say = Callable[[str], None]
PROCESSING_VERSION = 1
"""Bump when how pinbench calls the code or stacks its answers changes: the cache is keyed by
it."""


def processing_digest(code: Loaded, specs: Sequence[Input], pinned: Mapping[str, str]) -> Digest:
    """What the preprocessed arrays depend on: the code's bytes and function, the model
    artifact's files (``pinned``: path to sha256, every file ``files`` hands the code), the
    inputs it must give, the libraries it imports and Python's version."""
    data = {
        "version": PROCESSING_VERSION,
        "code": code.sha256,
        "files": dict(sorted(pinned.items())),
        "where": code.where,
        "inputs": [msgspec.to_builtins(s) for s in specs],
        "libraries": code.libraries,
        "python": python_version(),
    }
    return Digest.of_bytes(canonical_json(data))


def each_sample(samples: Samples) -> Iterator[tuple[str, Any]]:
    """Each sample as ``preprocess`` gets it, with the name messages give it: a file's local
    path (named by its path in the dataset), a text, or an array's row (named by index)."""
    if samples.files is not None:
        for f in samples.files:
            yield f.path, f.local
    elif samples.texts is not None:
        for i, text in enumerate(samples.texts):
            yield f"#{i}", text
    elif samples.questions is not None:
        raise UserError(
            "a question-answering dataset's questions become features by the tokenize steps "
            "(each context cut into windows); a preprocess function is not given them"
        )
    else:
        assert samples.data is not None
        for i in range(samples.data.shape[0]):
            yield f"#{i}", samples.data[i]


def run_preprocess(
    code: Loaded,
    specs: Sequence[Input],
    samples: Samples,
    files: Mapping[str, Path],
    say: Say,
    stop: Stop,
) -> dict[str, Array]:
    """Every sample through ``preprocess``, checked, stacked along a new batch axis."""
    total = len(samples)
    if total == 0:
        raise UserError("the dataset has no samples to preprocess")
    say(f"preprocessing {total} samples with {code.where} (the model's code, --allow-code)")
    rows: dict[str, list[Array]] = {str(s.name): [] for s in specs}
    first: dict[str, tuple[str, Array]] = {}
    for name, sample in each_sample(samples):
        stop.check()  # a cancel or time limit is honoured between samples
        got = check_inputs(code.call(sample, files, sample=name), specs, code.where, name)
        for key, array in got.items():
            first.setdefault(key, (name, array))
            check_same_shape(code.where, key, first[key], (name, array))
            rows[key].append(array)
    return {key: np.stack(arrays) for key, arrays in rows.items()}


def _one(computed: Callable[[], dict[str, Array]], name: str) -> Array:
    return computed()[name]


def prepare_by_code(
    code: Loaded,
    specs: Sequence[Input],
    samples: Samples,
    *,
    cache: Path | None,
    dataset_digest: str,
    files: Mapping[str, Path],
    pinned: Mapping[str, str],
    say: Say,
    stop: Stop,
) -> Feed:
    """The run's feed from ``preprocess`` (or the cache): every input fed from the samples;
    ``pinned`` the sha256 of each of ``files`` (the lockfile's)."""
    digest = processing_digest(code, specs, pinned)

    @functools.cache
    def computed() -> dict[str, Array]:  # once, for the inputs the cache does not hold
        return run_preprocess(code, specs, samples, files, say, stop)

    arrays: dict[str, Array] = {}
    hits = []
    for spec in specs:
        name = str(spec.name)
        key = Digest.of_bytes(canonical_json({"processing": digest.hex, "input": name}))
        arrays[name], hit = cached_array(
            cache, dataset_digest, key, functools.partial(_one, computed, name)
        )
        hits.append(hit)
    inputs: Any = next(iter(arrays.values())) if len(arrays) == 1 else NamedInputs(arrays)
    return Feed(inputs, arrays, all(hits), digest, None)
