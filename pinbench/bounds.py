"""The bounds of every number a document may give, in one table.

Requests (and the lockfiles that embed them), manifests, operator and training specs and API
bodies take numbers from people and programs that may be careless or hostile: a request once
asked for 10^12 threads, and memory grew until the run's time limit. Every numeric field is
typed here as ``Annotated[int, bound.meta]``, so msgspec refuses a value outside while it
parses (before any ``__post_init__``), the JSON schemas show the bounds (``minimum``,
``maximum``) and ``explain`` words the refusal ``FIELD must be between A and B, got X``.
Values no field type can hold (an operator's parameters, a bound that depends on another
field) are checked with ``Bound.check``, in the same words.

Upper bounds refuse only what no real use asks for (MLPerf's own settings, the largest
public models and datasets sit far below them); each row says why it is where it is. The
README's "Bounds" table lists them, and a test keeps it equal to ``TABLE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import msgspec

MAX_JSON_INT: Final = 2**53 - 1
"""The largest integer every JSON reader holds exactly."""
MAX_SEED: Final = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Bound:
    """``low <= value <= high`` (``<`` where the end is open)."""

    low: int | float
    high: int | float
    why: str
    low_open: bool = False
    high_open: bool = False

    @property
    def meta(self) -> msgspec.Meta:
        """The bound as msgspec checks it and JSON Schema shows it."""
        if self.low_open:
            if self.high_open:
                return msgspec.Meta(gt=self.low, lt=self.high)
            return msgspec.Meta(gt=self.low, le=self.high)
        if self.high_open:
            return msgspec.Meta(ge=self.low, lt=self.high)
        return msgspec.Meta(ge=self.low, le=self.high)

    @property
    def length_meta(self) -> msgspec.Meta:
        """The bound on a string's, a list's or a mapping's length, as msgspec checks it."""
        return msgspec.Meta(min_length=int(self.low), max_length=int(self.high))

    def text(self) -> str:
        """``between 0 (exclusive) and 10``."""
        low = f"{self.low} (exclusive)" if self.low_open else str(self.low)
        high = f"{self.high} (exclusive)" if self.high_open else str(self.high)
        return f"between {low} and {high}"

    def holds(self, value: int | float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below  # NaN holds neither

    def refusal(self, field: str, value: object) -> str:
        return f"{field} must be {self.text()}, got {value!r}"

    def check(self, field: str, value: int | float | None) -> None:
        """Raise ``ValueError`` (what msgspec turns into a validation error naming the
        place) when ``value`` is set and outside."""
        if value is not None and not self.holds(value):
            raise ValueError(self.refusal(field, value))


def between(low: int | float, high: int | float, why: str) -> Bound:
    return Bound(low, high, why)


# ---------------------------------------------------------------- requests (and lockfiles)

BATCH_SIZE = between(1, 65_536, "the largest batch any model card or MLPerf submission uses")
THREADS = between(1, 1024, "past the cores of any one machine")
MIN_DURATION_MS = between(0, 86_400_000, "24 h; MLPerf's runs are 10 min")
QUERY_COUNT = between(1, 10_000_000, "37x MLPerf's largest minimum (270,336 queries)")
SAMPLE_COUNT = between(1, 10_000_000, "LoadGen holds every sample's index; ImageNet has 1.3M")
SAMPLES_PER_QUERY = between(1, 65_536, "MLPerf's MultiStream uses 8")
TARGET_QPS = Bound(0, 10_000_000, "10M queries/s; a Server scenario must target > 0", True)
TARGET_LATENCY_MS = Bound(0, 86_400_000, "24 h, the longest run", True)
PERCENTILE = Bound(0, 100, "a percentile strictly inside 0..100", True, True)
SEED = between(0, MAX_SEED, "a 64-bit seed, as LoadGen and NumPy take it")
MEMORY_MB = between(64, 4_194_304, "4 TiB; below 64 MB no framework starts")
CPUS = between(0.01, 4096, "Docker's --cpus takes 0.01 and up")
TIMEOUT_S = between(1, 604_800, "7 days")
PLANNED_SAMPLES = between(
    1, 10_000_000, "LoadGen holds every sample it plans (50-300 B each) before the first query"
)
"""Not a field: what a scenario's fields plan together (``Scenario.planned_samples``), checked
where the request is parsed and again with the model's measured rate before LoadGen starts."""

# ---------------------------------------------------------------- operator and training specs

OPERATOR_SAMPLES = between(1, 1_000_000, "a million timed calls keep a run in minutes")
OPERATOR_WARMUP = between(0, 1_000_000, "likewise for untimed calls")
OPERATOR_SIZE = between(0, 1 << 28, "an operator's tensors hold at most 2^28 elements")
"""Every integer parameter of an operator (dimensions, kernel, stride, padding, groups): its
lower bound is the parameter's own minimum (``schema.Param.minimum``)."""
OPERATOR_EPS = between(0, 1, "an epsilon added to a variance")
LEARNING_RATE = Bound(0, 10, "no optimiser converges above 10", True)
MOMENTUM = Bound(0, 1, "SGD's momentum", high_open=True)
WEIGHT_DECAY = Bound(0, 1, "an L2 factor; 1 would zero the weights", high_open=True)
TRAINING_BATCH_SIZE = between(1, 65_536, "as for evaluation")
EPOCHS = between(1, 1000, "a benchmark trains to a target in far fewer")
TARGET_TOP1 = Bound(0, 1, "an accuracy", True)
TRAINING_SEED = between(0, 2**31 - 1, "TensorFlow's and PyTorch's seeds")
MICRO_BATCHES = between(1, 65_536, "at most one sample per micro-batch of the largest batch")
TRANSFORM_STEPS = between(1, 1000, "steps compared with and without a transformation")
WORKERS = between(1, 64, "processes on 127.0.0.1 or Ray agents; past 64 no benchmark here")
AVERAGE_EVERY = between(1, 100_000, "model averaging at least once in 100,000 steps")
RANK_SYSTEMS = between(2, 64, "one system per worker at most; left out for one system")
MAX_NEW_TOKENS = between(1, 65_536, "tokens one answer may hold; the longest contexts are 128k")
TEMPERATURE = Bound(0, 100, "a softmax temperature; 0 is greedy (say sampling: greedy)", True)
GENERATION_TOP_K = between(1, 1_000_000, "past the largest vocabularies (256k tokens)")
TOKEN_LATENCY_MS = Bound(0, 3_600_000, "1 h for one token; MLPerf's TTFT bounds are 2-6 s", True)

# ---------------------------------------------------------------- manifests

FILE_SIZE = between(0, MAX_JSON_INT, "8 PiB; any size a JSON reader holds exactly")
PORT_INDEX = between(0, 4095, "an index into a model's inputs or outputs")
FAN_OUT_FEEDS = between(
    0, 4096, "a fan-out stage's model calls for one query, their outputs held until its join"
)
CHAIN_WIRES = between(0, 4096, "a stage's wired inputs: at most as many as an index names")
CHAIN_WIRE_CHARS = between(1, 1024, "an input name or STAGE.OUTPUT; exported names are < 300")
DIMENSION = between(1, 2**31 - 1, "a declared dimension after the batch axis")
PIXELS = between(1, 16_384, "an image side; 16384 px is 268 Mpx, past any model input")
MULTIPLE = between(1, 1024, "a network's total stride: DBNet's 32; PaddleOCR's largest is 128")
NORMALIZE = between(-1_000_000, 1_000_000, "pixel, token or audio-sample values")
PAD_VALUE = between(0, 255, "a pixel value")
MAX_LENGTH = between(1, 65_536, "tokens of one sample; the longest context windows are 128k")
DOC_STRIDE = between(1, 65_536, "context tokens between two windows' starts; MLPerf's BERT: 128")
QUERY_TOKENS = between(1, 65_536, "a question's tokens kept; MLPerf's BERT keeps 64")
SAMPLE_RATE = between(1, 768_000, "samples per second; 768 kHz is the highest any DAC takes")
AUDIO_LENGTH = between(1, 1 << 26, "waveform samples; 70 min of 16 kHz, a WAV file's most")
AUDIO_CHANNEL = between(0, 63, "a channel index; a WAV file holds at most 64")
AUDIO_VALUE = between(-1, 1, "a waveform value, as decode_audio gives them")
AXIS = between(-64, 63, "NumPy arrays have at most 64 axes")
TAKE_INDEX = between(0, 2**31 - 1, "a position along a sample's last axis")
VIEWS = between(2, 64, "rows one sample becomes; ten-crop and ICLabel's 4 are the field's")
VIEW_OPS = between(0, 8, "transforms of one view (a flip and a negation are ICLabel's most)")
RESHAPE_AXES = between(1, 8, "a sample's axes after a reshape")
BYTES_LENGTH = between(1, 1 << 26, "bytes read from a sample file; 64 MiB per sample")
BYTES_PAD = between(0, 65_535, "a padding value; magika pads with 256, a token no byte is")
BATCH_AXIS = between(0, 63, "where a state input's batch axis goes among its axes")
PERM_AXIS = between(0, 63, "an output's axis; NumPy arrays have at most 64 axes")
CONSTANT_ELEMENTS = between(1, 4096, "a constant input: a sample rate, a small table")
STREAM_CHUNK = between(1, 1 << 24, "rows of one chunk; 2^24 is 17 min of 16 kHz audio")
STREAM_CONTEXT = between(0, 1 << 24, "rows fed again before each chunk")
STATE_ELEMENTS = between(1, 1 << 24, "values of one sample's state; silero-vad's holds 256")
TOP_K = between(1, 1_000_000, "past the largest vocabularies (250k classes)")
FRACTION = between(0, 1, "a threshold, an IoU")
MAX_DETECTIONS = between(1, 100_000, "COCO counts 100 per image")
UNCLIP_RATIO = between(0, 10, "DBNet uses 1.5-2; at 10 a square grows to 6 times its side")
MAP_MIN_SIZE = between(0, 16_384, "a region's shorter side in map pixels; 16384 px is any side")
MAX_CANDIDATES = between(1, 100_000, "regions read per probability map; DBNet reads 1000")
STRIDE = between(1, 1024, "a head level's stride in input pixels; detectors use 8 to 128")
GFL_BINS = between(2, 64, "values per box side; PicoDet and NanoDet use 8, GFL's paper 17")
VARIANCE = between(0.001, 10, "a box coder's variance; SSD's are 0.1 and 0.2")
CLASSES = between(1, 1_000_000, "the largest label sets (ImageNet-21k: 21,841)")
CTC_BLANK = between(0, 999_999, "a class index, below the most classes (labels.classes)")
MASK_CLASSES = between(1, 4096, "the confusion matrix is classes^2 (4096: 134 MB)")
MASK_VALUE = between(0, 65_535, "a 16-bit PNG's pixel value; no class index (>= classes)")
DATA_RANGE = Bound(0, 1e9, "an image's value range (1.0, 255, 65535); > 0", True)
SAMPLES = between(0, 1_000_000_000, "samples of one dataset")
ATTRIBUTE_INT = between(-MAX_JSON_INT, MAX_JSON_INT, "any integer a JSON reader holds exactly")

# ---------------------------------------------------------------- API bodies

RETRIES = between(0, 3, "attempts on another system when a run's system is lost")

# ---------------------------------------------------------------- a series' thresholds

SIGNIFICANCE = Bound(0, 0.5, "a one-sided test's alpha; past 0.5 it alarms more than a coin", True)
WINDOW_RUNS = between(2, 1000, "past runs a test looks at; the spread needs 2")
MIN_RUNS = between(2, 1000, "at most the window; fewer past runs give an inconclusive verdict")
MAX_CHANGE = Bound(0, 10, "relative: 0.05 may worsen by 5%; 10 is eleven times as slow", True)
TOLERANCE = between(0, 1e18, "in the metric's unit: 1e18 ns is 31 years, 1e18 B an exabyte")
SEGMENT_RUNS = between(2, 1000, "runs either side of a change point; one run is an outlier")
CHANGE_SIGNIFICANCE = between(
    0.001, 0.5, "a permutation test's alpha: 0.001 takes 1,999 shuffles a split"
)
GATE_CANDIDATES = between(
    1, 20, "a candidate's runs judged together; past 20 a window of 10 runs limits the test"
)

# ---------------------------------------------------------------- operators' options

GC_GRACE_S = between(0, 366 * 86_400, "a year: past it a blob is old by any measure")
KEEP_DAYS = between(0, 36_500, "a century of runs; 0 keeps none for its age")
KEEP_LAST = between(0, 1_000_000, "runs kept per lockfile; 0 keeps none for its rank")

# ---------------------------------------------------------------- the environment

RETRY_S = between(0, 3600, "an hour of a server away (a restart takes seconds); 0 never retries")

# ---------------------------------------------------------------- server options

RUNS_PER_USER = between(1, 100_000, "as long as any run queue a server keeps")
DRAIN_S = between(0, 86_400, "24 h, the longest run; 0 stops at once")
DRAIN_GRACE_S = between(0, 3600, "an hour for a waiting client to read its run's end; 0 waits not")
AUTH_FAILURES = between(1, 100_000, "failed authentications per minute; 1 locks out on a typo")
READY_MIN_FREE_MB = between(0, 1 << 24, "serve --ready-min-free-mb; 2^24 MiB is 16 TiB")


TABLE: Final[dict[str, Bound]] = {
    "batch_size": BATCH_SIZE,
    "threads": THREADS,
    "scenario.min_duration_ms": MIN_DURATION_MS,
    "scenario.min_query_count, max_query_count": QUERY_COUNT,
    "scenario.sample_count": SAMPLE_COUNT,
    "scenario.samples_per_query": SAMPLES_PER_QUERY,
    "scenario.target_qps": TARGET_QPS,
    "scenario.target_latency_ms": TARGET_LATENCY_MS,
    "scenario.percentile": PERCENTILE,
    "scenario.seed, operator.seed": SEED,
    "scenario (samples LoadGen plans)": PLANNED_SAMPLES,
    "limits.memory_mb": MEMORY_MB,
    "limits.cpus": CPUS,
    "limits.timeout_s": TIMEOUT_S,
    "operator.samples": OPERATOR_SAMPLES,
    "operator.warmup": OPERATOR_WARMUP,
    "operator.params (integers; low: 1 for sizes)": OPERATOR_SIZE,
    "operator.params.eps": OPERATOR_EPS,
    "training.learning_rate": LEARNING_RATE,
    "training.momentum": MOMENTUM,
    "training.weight_decay": WEIGHT_DECAY,
    "training.batch_size": TRAINING_BATCH_SIZE,
    "training.epochs": EPOCHS,
    "training.target_top1": TARGET_TOP1,
    "training.seed": TRAINING_SEED,
    "training.transform.micro_batches": MICRO_BATCHES,
    "training.transform.steps": TRANSFORM_STEPS,
    "distributed.workers": WORKERS,
    "distributed.average_every": AVERAGE_EVERY,
    "distributed.systems": RANK_SYSTEMS,
    "generation.max_new_tokens": MAX_NEW_TOKENS,
    "generation.temperature": TEMPERATURE,
    "generation.top_k": GENERATION_TOP_K,
    "generation.seed": SEED,
    "generation.ttft_latency_ms, tpot_latency_ms": TOKEN_LATENCY_MS,
    "threshold.alpha": SIGNIFICANCE,
    "change points' significance (a smaller alpha searches at 0.001)": CHANGE_SIGNIFICANCE,
    "threshold.window": WINDOW_RUNS,
    "threshold.min_runs (at most window)": MIN_RUNS,
    "threshold.max_change": MAX_CHANGE,
    "threshold.tolerance": TOLERANCE,
    "change points' min_size": SEGMENT_RUNS,
    "gate --repeat, gate --run (its count), POST /api/v1/gate runs (its length)": GATE_CANDIDATES,
    "files[].size": FILE_SIZE,
    "inputs[].name, outputs[].name, detection outputs (an index)": PORT_INDEX,
    "inputs[].shape[]": DIMENSION,
    "chain.stages[].inputs (its count)": CHAIN_WIRES,
    "a fan-out stage's feeds for one query (its code's list)": FAN_OUT_FEEDS,
    "chain.stages[].inputs (each name's and STAGE.OUTPUT's characters)": CHAIN_WIRE_CHARS,
    "resize, crop, letterbox, max_dimension: size; resize_height: height, max_width; "
    "resize_multiple: limit_side": PIXELS,
    "resize_multiple.multiple": MULTIPLE,
    "normalize: mean, std, scale": NORMALIZE,
    "pad, letterbox, resize_height: value": PAD_VALUE,
    "tokenize.max_length": MAX_LENGTH,
    "tokenize.doc_stride": DOC_STRIDE,
    "tokenize.max_query_length": QUERY_TOKENS,
    "decode_audio.rate, resample.rate": SAMPLE_RATE,
    "decode_audio.channel": AUDIO_CHANNEL,
    "fit_length.length": AUDIO_LENGTH,
    "fit_length.value": AUDIO_VALUE,
    "softmax.axis, expand_dims.axis, views' flip.axis": AXIS,
    "take.start, take.stop": TAKE_INDEX,
    "reshape.shape (its length)": RESHAPE_AXES,
    "reshape.shape[]": DIMENSION,
    "views.transforms (its length: rows per sample)": VIEWS,
    "views.transforms[] (transforms of one view)": VIEW_OPS,
    "read_bytes.length": BYTES_LENGTH,
    "read_bytes.pad": BYTES_PAD,
    "inputs[].state.batch_axis (at most len(shape))": BATCH_AXIS,
    "transpose.perm[]": PERM_AXIS,
    "inputs[].value (its element count)": CONSTANT_ELEMENTS,
    "inputs[].stream.chunk": STREAM_CHUNK,
    "inputs[].stream.context": STREAM_CONTEXT,
    "inputs[].state (its shape's element count)": STATE_ELEMENTS,
    "topk.k": TOP_K,
    "nms.iou, thresholds (score, mask, segmentation, probability map)": FRACTION,
    "nms.max_detections": MAX_DETECTIONS,
    "probability_map.unclip_ratio": UNCLIP_RATIO,
    "probability_map.min_size": MAP_MIN_SIZE,
    "probability_map.max_candidates": MAX_CANDIDATES,
    "yolox.strides[], gfl.heads[].stride": STRIDE,
    "gfl.bins": GFL_BINS,
    "ssd.variances[]": VARIANCE,
    "ctc.blank": CTC_BLANK,
    "labels.classes": CLASSES,
    "labels.classes (masks)": MASK_CLASSES,
    "labels.ignore_index (from labels.classes)": MASK_VALUE,
    "labels.data_range": DATA_RANGE,
    "samples": SAMPLES,
    "attributes (integers)": ATTRIBUTE_INT,
    "retries (POST /api/v1/runs/on)": RETRIES,
    "PINBENCH_RETRY_S (seconds a client retries one request)": RETRY_S,
}
"""Every bound, by the fields it bounds (as the README's table lists them)."""
