"""TensorFlow: a Keras ``.keras`` file or a Keras 2 HDF5 file (``.h5``/``.hdf5``, read by Keras'
legacy loader; both with Keras' safe mode: no Python lambdas) or a SavedModel directory, called
through one traced function with a fixed input signature; or a TensorFlow Lite file, run by
TensorFlow's interpreter (``tflite``).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import tensorflow as tf

from pinbench.artifacts.keras import read_keras_config
from pinbench.artifacts.keras_h5 import read_h5_config
from pinbench.trace.clock import bracketed_offset
from pinbench.trace.events import FrameworkEvent, FrameworkTrace, mark_top_level
from pinbench.worker.predictors.base import (
    Batch,
    DeviceUnavailable,
    ModelLoadError,
    Outputs,
    Port,
    Predictor,
    SignatureMismatch,
    bind_outputs,
    output_keys,
)
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.feeds import Feeds
from pinbench.worker.predictors.tensorflow.tflite import TfliteModel

H5_SUFFIXES = (".h5", ".hdf5")
ANCHOR = "pinbench.anchor"
ANCHORS = 7
"""Anchor events, each between two ``perf_counter_ns`` readings: a thread preempted around
one widens only that one's bounds, and the bounds of all of them together are kept."""


class TensorFlowPredictor(Predictor):
    """Binds the declared inputs and outputs by name: a Keras model's ``inputs`` (names,
    element types, shapes) and ``output_names``; a SavedModel's ``serving_default``
    signature (input and output ``TensorSpec``s by name). Several inputs are fed by those
    names: a Keras model is called with a dict of them, the signature with keywords."""

    NAME: ClassVar[str] = "tensorflow"
    TITLE: ClassVar[str] = "TensorFlow"
    FORMATS: ClassVar[tuple[str, ...]] = ("keras", "keras-h5", "savedmodel", "tflite")

    def __init__(self) -> None:
        self._fn: Any = None
        self._tflite: TfliteModel | None = None
        self._loaded: Any = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._device = "/CPU:0"
        self._feeds = Feeds((), ())
        self._keys: list[str] = []
        self._profile: Path | None = None
        self._readings: list[tuple[int, int]] = []

    @classmethod
    def framework_version(cls) -> str:
        return str(tf.__version__)

    def open(self, model: ModelFiles, options: PredictorOptions) -> None:
        self.check_format(model)
        if options.device == "cuda":
            if not tf.config.list_physical_devices("GPU"):
                raise DeviceUnavailable(framework=self.NAME, device="cuda", available=["cpu"])
            self._device = "/GPU:0"
        if options.threads is not None:
            try:
                tf.config.threading.set_intra_op_parallelism_threads(options.threads)
                tf.config.threading.set_inter_op_parallelism_threads(1)
            except RuntimeError:
                pass  # the runtime is already initialised in this process; keep its setting
        self._dir = tempfile.TemporaryDirectory(prefix="pinbench-tf-")
        root = model.layout(Path(self._dir.name))
        try:
            if model.format == "keras":
                name, _ = model.single((".keras",))
                self._open_keras(model, str(root / name), read_keras_config)
            elif model.format == "keras-h5":
                name, _ = model.single(H5_SUFFIXES)
                self._open_keras(model, str(root / name), read_h5_config)
            elif model.format == "tflite":
                name, _ = model.single((".tflite",))
                self._open_tflite(model, root / name, options.threads)
            else:
                self._open_savedmodel(model, str(root))
        except (ModelLoadError, SignatureMismatch):
            raise
        except Exception as exc:  # TF and Keras raise many types for a bad model
            reason = f"{type(exc).__name__}: {exc}".replace(str(root) + "/", "").strip()
            raise ModelLoadError(model=model.format, reason=reason.splitlines()[0]) from None

    def _open_keras(self, model: ModelFiles, path: str, config: Callable[[Path], Any]) -> None:
        """Output names from the file's config (``artifacts.keras``: the layer that makes
        each, for functional and Sequential models alike; a Lambda layer refused), as
        ``pinbench manifest`` reads them; inputs, element types and shapes from the loaded
        model. An HDF5 file (``.h5``) is loaded by Keras' legacy HDF5 loader."""
        import keras

        from pinbench.artifacts.keras import KerasConfigError, keras_signature

        try:
            names = keras_signature(config(Path(path))).outputs
        except KerasConfigError as exc:
            raise ModelLoadError(model=model.format, reason=str(exc)) from None
        with tf.device(self._device):
            loaded = keras.saving.load_model(path, compile=False, safe_mode=True)
        if len(names) != len(loaded.outputs):
            raise ModelLoadError(
                model=model.format,
                reason=f"its config names {len(names)} outputs {names}, the loaded model "
                f"has {len(loaded.outputs)}",
            )
        ins = [_port(t.name, t.dtype, t.shape) for t in loaded.inputs]
        outs = [_port(n, t.dtype, t.shape) for n, t in zip(names, loaded.outputs, strict=True)]
        self._feeds = Feeds.bind(model.inputs, ins)
        pick = [outs.index(p) for p in bind_outputs(model.outputs, outs)]
        self._keys = output_keys(model.outputs, outs)
        signature = [_spec(p) for p in self._feeds.ports]
        names = [p.name for p in self._feeds.ports]
        single = len(outs) == 1

        def call(*xs: Any) -> list[Any]:
            x = xs[0] if len(ins) == 1 else dict(zip(names, xs, strict=True))  # by input name
            out = loaded(x, training=False)
            flat = [out] if single else keras.tree.flatten(out)  # a dict's values by key
            return [flat[i] for i in pick]

        with tf.device(self._device):
            traced = tf.function(call, input_signature=signature)
            self._fn = traced.get_concrete_function()

    def _open_tflite(self, model: ModelFiles, path: Path, threads: int | None) -> None:
        """The interpreter on the file (``tflite.TfliteModel``), bound by the file's names."""
        if self._device != "/CPU:0":
            raise DeviceUnavailable(framework="tensorflow lite", device="cuda", available=["cpu"])
        lite = TfliteModel(path, threads, model.inputs, model.outputs)
        self._feeds = Feeds.bind(model.inputs, lite.inputs)
        outs = bind_outputs(model.outputs, lite.outputs)
        self._keys = output_keys(model.outputs, lite.outputs)
        lite.bind([p.name for p in self._feeds.ports], [p.name for p in outs])
        self._tflite = lite

    def _open_savedmodel(self, model: ModelFiles, root: str) -> None:
        pb = next((name for name in model.files if name.endswith("saved_model.pb")), None)
        if pb is None:
            raise ModelLoadError(model="savedmodel", reason="no saved_model.pb among the files")
        folder = os.path.join(root, os.path.dirname(pb))
        with tf.device(self._device):
            loaded = tf.saved_model.load(folder)
        signature = loaded.signatures.get("serving_default")
        if signature is None:
            raise ModelLoadError(model=pb, reason="the SavedModel has no serving_default signature")
        specs = signature.structured_input_signature[1]
        # sorted by name, as `manifest model` lists them: an index means the same to both
        ins = [_port(n, specs[n].dtype, specs[n].shape) for n in sorted(specs)]
        outputs = signature.structured_outputs
        outs = [_port(n, outputs[n].dtype, outputs[n].shape) for n in sorted(outputs)]
        self._feeds = Feeds.bind(model.inputs, ins)
        names = [p.name for p in bind_outputs(model.outputs, outs)]
        self._keys = output_keys(model.outputs, outs)
        self._loaded = loaded  # the signature needs its object alive
        feeds = [p.name for p in self._feeds.ports]

        def call(*xs: Any) -> list[Any]:
            got = signature(**dict(zip(feeds, xs, strict=True)))
            return [got[n] for n in names]

        self._fn = call

    def begin_stream(self, rows: int) -> None:
        if self._tflite is not None:
            self._tflite.begin_stream(rows)

    def input_ports(self) -> tuple[Port, ...]:
        return self._feeds.ports

    def check_input(self, batch: Batch) -> None:
        self._feeds.check(batch)

    def predict(self, batch: Batch) -> Outputs:
        if self._tflite is not None:
            rows = self._tflite.call(*self._feeds.arrays(batch))
            return dict(zip(self._keys, rows, strict=True))
        got = self._fn(*[tf.constant(a) for a in self._feeds.arrays(batch)])
        return {key: t.numpy() for key, t in zip(self._keys, got, strict=True)}

    def close(self) -> None:
        self._fn = self._loaded = self._tflite = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def start_profiling(self, scratch: Path) -> None:
        """The TensorFlow profiler (host tracer). Its events are stamped on its own clock
        (relative to the session's start), so anchor events are traced, each between two
        ``perf_counter_ns`` readings: together they bound the offset between the two clocks
        (``trace.clock.bracketed_offset``). One reading before the anchor alone was off by
        the time Python took to enter it, ~15 us, and by any preemption there."""
        scratch.mkdir(parents=True, exist_ok=True)
        tf.profiler.experimental.start(str(scratch))
        self._profile = scratch
        self._readings = []
        for _ in range(ANCHORS):
            before = time.perf_counter_ns()
            with tf.profiler.experimental.Trace(ANCHOR):
                pass
            self._readings.append((before, time.perf_counter_ns()))

    def stop_profiling(self) -> FrameworkTrace:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2

        assert self._profile is not None
        tf.profiler.experimental.stop()
        found = sorted(self._profile.rglob("*.xplane.pb"))
        self._profile = None
        if not found:
            raise RuntimeError("the TensorFlow profiler wrote no .xplane.pb")
        space = xplane_pb2.XSpace()
        space.ParseFromString(found[-1].read_bytes())
        events, anchors = _xplane_events(space)
        mark_top_level(events)
        bounds = bracketed_offset(anchors, self._readings)
        notes = [] if bounds is not None else ["no anchor bounds: aligned on containment alone"]
        return FrameworkTrace(
            source=f"tensorflow {tf.__version__} profiler (host tracer)",
            events=events,
            offset_ns=(bounds[0] + bounds[1]) // 2 if bounds is not None else 0,
            offset_bounds_ns=bounds,
            resolution_ns=1000,
            notes=notes,
        )


def _spec(port: Port) -> Any:
    """The ``TensorSpec`` a traced call takes for an input: any batch size."""
    shape = None if port.shape is None else [None, *port.shape[1:]]
    return tf.TensorSpec(shape, tf.as_dtype(port.dtype))


def _port(name: str, dtype: Any, shape: Any) -> Port:
    dims = tuple(d if isinstance(d, int) else None for d in shape) if shape is not None else None
    return Port(name=str(name), dtype=tf.as_dtype(dtype).name, shape=dims)


def _xplane_events(space: Any) -> tuple[list[FrameworkEvent], list[tuple[int, int]]]:
    """Host events of an XSpace: TensorFlow ops (those with an op type as display name) and
    the runtime's own spans; and the anchors' (start, end) in time order. Instant events are
    left out."""
    events: list[FrameworkEvent] = []
    anchors: list[tuple[int, int]] = []
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        meta = plane.event_metadata
        for line in plane.lines:
            for e in line.events:
                m = meta[e.metadata_id]
                start = line.timestamp_ns + e.offset_ps // 1000
                end = line.timestamp_ns + (e.offset_ps + e.duration_ps) // 1000
                if m.name == ANCHOR:
                    anchors.append((start, end))
                    continue
                if e.duration_ps <= 0:
                    continue
                op = m.display_name
                name = m.name.rsplit(":", 1)[0] if op else m.name
                events.append(FrameworkEvent(name, op, start, end, line.name, bool(op)))
    return events, sorted(anchors)
