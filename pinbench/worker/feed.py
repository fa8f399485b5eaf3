"""The model's inputs, prepared before anything is timed: each declared input through its own
pipeline (image and audio files decoded, texts tokenized, arrays transformed), cached on disk by
(dataset digest, pipeline digest), and several inputs joined as one ``NamedInputs`` feed."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest, hash_file, hash_stream
from pinbench.registry.input_kinds import from_samples
from pinbench.registry.ports import Input
from pinbench.worker.named import NamedInputs
from pinbench.worker.pipeline import (
    decoder_of,
    pipeline_digest,
    preprocess,
    preprocess_each,
    preprocess_files,
)
from pinbench.worker.pipeline_errors import PipelineError
from pinbench.worker.ragged import per_image, prepare_ragged
from pinbench.worker.samples import Samples
from pinbench.worker.stop import Stop
from pinbench.worker.stream import prepare_stream
from pinbench.worker.text_inputs import (
    Encodings,
    preprocess_texts,
    text_rows,
    tokenizer_version,
)

if TYPE_CHECKING:
    from pinbench.worker.seal import Seal

Array = npt.NDArray[np.generic]
Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Feed:
    inputs: Any
    """One array (one input) or ``NamedInputs``: what the scenario slices and predicts on."""
    arrays: dict[str, Array]
    """Each input's array by its manifest name."""
    cached: bool
    """Every input came from the cache."""
    digest: Digest
    """The pipeline digest: the one input's, or one over every input's."""
    decoder: str | None
    windows: Array | None = None
    """A streamed input's windows, every sample's in one array (``stream.prepare_stream``);
    its entry in ``inputs`` and ``arrays`` holds each sample's rows of them."""


def prepare(
    specs: list[Input],
    samples: Samples,
    *,
    cache: Path | None,
    dataset_digest: str,
    model_files: dict[str, Path],
    model_sha256: dict[str, str],
    say: Say,
    stop: Stop,
    seal: Seal | None = None,
) -> Feed:
    """Every declared input fed from the samples preprocessed (or read from the cache, keyed
    by ``seal`` where the host reads it: ``cached_array``); a constant or state input is the
    predictor's (``stream.Fed``)."""
    texts = samples.texts is not None or samples.questions is not None
    decoder = tokenizer_version() if texts else decoder_of(samples.format, specs)
    if samples.questions is not None:
        decoder = f"{decoder}, questions as MLPerf BERT's features"
    arrays: dict[str, Array] = {}
    fed: dict[str, Any] = {}  # as the scenario slices them: an array, or a Ragged
    digests: dict[str, str] = {}
    hits = []
    encodings: Encodings = {}  # inputs from one tokenizer's encodings tokenize once
    windows = None
    all_specs, specs = specs, [s for s in specs if from_samples(s)]
    for spec in specs:
        files = {s.tokenize.tokenizer for s in spec.steps if s.tokenize is not None}
        digest = pipeline_digest(
            spec, decoder=decoder, files={p: model_sha256[p] for p in sorted(files)}
        )

        def compute(spec: Input = spec) -> Array:
            return _preprocess(spec, samples, model_files, say, stop, encodings)

        if spec.stream is not None:
            cached = functools.partial(cached_array, cache, dataset_digest, seal=seal)
            got = prepare_stream(spec, samples, digest, cached, say, stop)
            arrays[str(spec.name)], windows, hit = got
        elif _longest(spec) and samples.texts is not None:  # each text at its own length
            say(f"tokenizing {len(samples.texts)} texts for input {spec.name!r}")
            rows, pad = text_rows(samples.texts, spec, model_files, stop.check, encodings)
            names = [f"text {i}" for i in range(len(rows))]
            each = functools.partial(_batches_of_one, names, rows)
            got_apart = prepare_ragged(spec, digest, _computed, each, names, pad=pad)
            fed[str(spec.name)], arrays[str(spec.name)], hit = got_apart
        elif per_image(spec) and samples.files is not None:  # sizes of their own
            cached = functools.partial(cached_array, cache, dataset_digest, seal=seal)
            each = functools.partial(_each_file, spec, samples, say, stop)
            names = [f.path for f in samples.files]
            got_apart = prepare_ragged(spec, digest, cached, each, names)
            fed[str(spec.name)], arrays[str(spec.name)], hit = got_apart
        else:
            arrays[str(spec.name)], hit = cached_array(
                cache, dataset_digest, digest, compute, seal=seal
            )
        fed.setdefault(str(spec.name), arrays[str(spec.name)])
        digests[str(spec.name)] = digest.hex
        hits.append(hit)
    masks = [s for s in all_specs if s.mask_of is not None]
    for spec in masks:  # made from the input each masks (``lengths``), never cached
        from pinbench.worker.lengths import LengthMask

        mask = LengthMask(fed[str(spec.mask_of)], spec.element_type)
        fed[str(spec.name)] = mask
        arrays[str(spec.name)] = mask.samples()
    if len(specs) == 1 and not masks:
        (only,) = fed.values()
        digest = Digest(next(iter(digests.values())))
        return Feed(only, arrays, hits[0], digest, decoder, windows)
    joined = Digest.of_bytes(canonical_json(digests))
    return Feed(NamedInputs(fed), arrays, all(hits), joined, decoder, windows)


def cached_array(
    cache: Path | None,
    dataset_digest: str,
    digest: Digest,
    compute: Callable[[], Array],
    *,
    seal: Seal | None = None,
) -> tuple[Array, bool]:
    """Preprocessed inputs, cached on disk by (dataset digest, pipeline digest): a cache hit
    reads no sample file. Each entry's sha256 is written beside it (``.npy.sha256``) when it is
    written, and checked when it is read: an entry whose bytes are not those written (issue 63:
    a cached array rolled by one sample was scored as the run's inputs) is computed again,
    never used. ``seal``: the host's key (``seal``): the sidecar holds the digest's MAC too,
    and an entry whose MAC does not check is computed again. Runs that carry code cache in a
    folder of their own that nothing else reads."""
    if cache is None:
        return compute(), False
    path = cache / f"{dataset_digest[:32]}-{digest.hex[:32]}.npy"
    sidecar = path.with_name(path.name + SHA256_SUFFIX)
    cached = _read_cached(path, sidecar, seal)
    if cached is not None:
        return cached, True
    inputs = compute()
    cache.mkdir(parents=True, exist_ok=True)
    stamp = time.monotonic_ns()
    tmp, tmp_sum = path.with_suffix(f".{stamp}.tmp.npy"), path.with_suffix(f".{stamp}.tmp.sum")
    np.save(tmp, inputs, allow_pickle=False)
    sha256 = hash_file(tmp)[0].hex
    tmp_sum.write_text(seal.sidecar(path.name, sha256) if seal is not None else sha256)
    tmp_sum.replace(sidecar)  # the digest first: an entry is never without the one it had
    tmp.replace(path)
    return inputs, False


SHA256_SUFFIX = ".sha256"
"""Beside each cached array: the sha256 of its bytes, written with it (and its MAC, where the
host wrote it: ``seal``)."""


def _read_cached(path: Path, sidecar: Path, seal: Seal | None) -> Array | None:
    """The cached array at ``path`` when its bytes hash to ``sidecar``'s digest (vouched for by
    its MAC, with ``seal``); else none (and the entry removed: it is computed again)."""
    try:  # hashed and loaded through one open file: the bytes hashed are the bytes loaded
        text = sidecar.read_text()
        recorded = seal.digest_of(path.name, text) if seal is not None else text.split()[0]
        with path.open("rb") as f:
            if recorded is not None and hash_stream(f)[0].hex == recorded:
                f.seek(0)
                found: Array = np.load(f, allow_pickle=False)
                return found
    except (ValueError, OSError, IndexError):  # missing, unreadable, not UTF-8, not an array
        pass
    path.unlink(missing_ok=True)
    sidecar.unlink(missing_ok=True)
    return None


def _preprocess(
    spec: Input,
    samples: Samples,
    model_files: dict[str, Path],
    say: Say,
    stop: Stop,
    encodings: Encodings,
) -> Array:
    if samples.texts is not None:  # in a child process a stop kills (a time limit holds)
        say(f"tokenizing {len(samples.texts)} texts for input {spec.name!r}")
        return preprocess_texts(samples.texts, spec, model_files, stop.check, encodings)
    if samples.questions is not None:  # likewise: each question becomes one or more features
        from pinbench.worker.qa_features import preprocess_questions

        if _longest(spec):
            raise PipelineError(
                step="tokenize",
                reason=f"input {spec.name!r}: a question's features are windows of max_length "
                "tokens (padding: fixed); padding longest is for text samples",
            )

        say(f"tokenizing {len(samples.questions)} questions for input {spec.name!r}")
        found: Array = preprocess_questions(
            samples.questions, spec, model_files, stop.check, encodings
        )
        return found
    if samples.files is None:
        assert samples.data is not None
        return preprocess(samples.data, spec)
    files = [(f.path, f.local) for f in samples.files]
    return preprocess_files(files, samples.format, spec, _progress(len(files), say, stop))


def _longest(spec: Input) -> bool:
    """Whether the input tokenizes each text at its own length (``padding: longest``)."""
    return bool(spec.steps) and getattr(spec.steps[0].tokenize, "padding", "") == "longest"


def _batches_of_one(names: list[str], rows: list[Array]) -> Iterator[tuple[str, Array]]:
    return ((n, r[None]) for n, r in zip(names, rows, strict=True))


def _computed(digest: Digest, compute: Callable[[], Array]) -> tuple[Array, bool]:
    """Texts at their own lengths are tokenized each run (their pad is the tokenizer's)."""
    return compute(), False


def _each_file(spec: Input, samples: Samples, say: Say, stop: Stop) -> Iterator[tuple[str, Array]]:
    """Each sample file through the input's steps, one at a time (``ragged``)."""
    assert samples.files is not None
    files = [(f.path, f.local) for f in samples.files]
    return preprocess_each(files, samples.format, spec, _progress(len(files), say, stop))


def _progress(total: int, say: Say, stop: Stop) -> Callable[[int], None]:
    step = max(1, total // 10)
    say(f"decoding and preprocessing {total} sample files")

    def progress(done: int) -> None:  # a cancel or time limit is honoured between files
        stop.check()
        if done % step == 0 and done < total:
            say(f"  {done}/{total} sample files")

    return progress
