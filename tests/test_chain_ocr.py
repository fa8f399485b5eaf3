"""A detector -> recogniser chain (issue 50 item 2, decision 258): ddddocr 1.6.1's YOLOX
character detector and the CTC recogniser its ``classification()`` uses by default, both
published from the wheel's files byte for byte, chained as docs/chains.md's walkthrough has it
(``ocr-chain.yaml``): the detector on each image, the recogniser once per box (a fan-out), the
crops cut from the sample file itself (``sample.bytes``), the texts read left to right scored
as text recognition. Each image's text equals the two graphs run here by hand with
onnxruntime, and ddddocr's own detection and recognition (their source from the wheel, run as
``DdddOcr`` runs them) on crops of the boxes it finds; CER and exact match equal jiwer's and a
direct count. The images are drawn here with Pillow."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import latencies_of, run_lockfile
from pinbench.registry import service
from pinbench.registry.chain_spec import ChainRefused
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import RequestError, parse_request
from pinbench.registry.yamlsafe import load_yaml
from tests.helpers import copied_workspace, model_manifest, write_files
from tests.package_decoders import ddddocr_engines
from tests.package_models import package_file, wheel

DOCS = Path(__file__).parent.parent / "docs" / "chains.md"
DET, OCR = "ddddocr/common_det.onnx", "ddddocr/common_old.onnx"
TEXTS = ["7K3", "AB9", "wX5q", "hello"]
"""What each image shows; the recogniser reads some wrong (CER > 0) and ``ll`` is one box."""


def quiet(text: str) -> None:
    pass


def page_block(after: str, fence: str) -> str:
    """The first ``fence`` block after ``after`` on docs/chains.md's ddddocr walkthrough."""
    page = DOCS.read_text().split("## Walkthrough: ddddocr", 1)[1]
    return page.split(after, 1)[1].split(f"```{fence}\n", 1)[1].split("```", 1)[0]


def documented() -> dict[str, Any]:
    """The walkthrough's ``ocr-chain.yaml``, as the page has it."""
    data: dict[str, Any] = load_yaml(page_block("The request, `ocr-chain.yaml`", "yaml"))
    return data


def image(text: str) -> bytes:
    """``text`` in dark blue on a pale background, 416 wide (ddddocr's detector input: no
    resize, so pinbench's letterbox is ddddocr's ``preproc`` exactly), as PNG bytes."""
    font = ImageFont.load_default(size=56)
    drawn = Image.new("RGB", (416, 120), (235, 240, 230))
    pen = ImageDraw.Draw(drawn)
    step = 75 if len(text) > 4 else 95
    for i, char in enumerate(text):
        pen.text((20 + step * i, 25), char, fill=(30, 40, 120), font=font)
    out = io.BytesIO()
    drawn.save(out, "PNG")
    return out.getvalue()


def charset_file(tmp_path: Path) -> bytes:
    """The walkthrough's Python block run as the page has it, on the wheel's source file."""
    source = package_file("ddddocr", "ddddocr/models/charset_manager.py")
    (tmp_path / "wheel" / "ddddocr" / "models").mkdir(parents=True)
    (tmp_path / "wheel" / "ddddocr" / "models" / "charset_manager.py").write_bytes(
        source.read_bytes()
    )
    (tmp_path / "ocr").mkdir()
    code = page_block("one-entry-per-line file the text task reads", "python")
    code = code.replace('Path("wheel/', f'Path("{tmp_path}/wheel/')
    code = code.replace('Path("ocr/', f'Path("{tmp_path}/ocr/')
    exec(compile(code, "docs/chains.md", "exec"), {})
    return (tmp_path / "ocr" / "charset.txt").read_bytes()


@pytest.fixture(scope="module")
def ocr(tmp_path_factory: pytest.TempPathFactory, digits_template: Path) -> Iterator[Any]:
    """A workspace with the catalog's onnxruntime (a copy of the shared published home), both
    models and a dataset of the images."""
    tmp_path = tmp_path_factory.mktemp("ocr-chain")
    ws = copied_workspace(digits_template, tmp_path)
    det, rec = package_file("ddddocr", DET), package_file("ddddocr", OCR)
    det_files = write_files(tmp_path / "det", {"common_det.onnx": det.read_bytes()})
    manifest = model_manifest("ddddocr/det", "1.6.1", det_files, framework_range="^1")
    steps = load_yaml(page_block("input steps of `det/steps.yaml`", "yaml"))
    manifest.update(  # what `pinbench manifest model --steps` writes (the page's command)
        inputs=[
            {"name": "images", "element_type": "float32", "shape": [3, 416, 416], "steps": steps}
        ],
        outputs=[{"name": "output"}],
    )
    publish(ws, parse_manifest(manifest), manifest_dir=tmp_path / "det", publisher="test")
    charset = charset_file(tmp_path / "doc")
    rec_files = write_files(
        tmp_path / "ocr", {"common_old.onnx": rec.read_bytes(), "charset.txt": charset}
    )
    manifest = model_manifest("ddddocr/ocr", "1.6.1", rec_files, framework_range="^1")
    outputs = load_yaml(page_block("say so in `ocr/ocr.yaml`", "yaml"))["outputs"]
    manifest.update(inputs=[{"name": "input1", "element_type": "float32"}], outputs=outputs)
    publish(ws, parse_manifest(manifest), manifest_dir=tmp_path / "ocr", publisher="test")
    images = {f"images/{i}.png": image(t) for i, t in enumerate(TEXTS)}
    csv = "file,text\n" + "".join(f"{i}.png,{t}\n" for i, t in enumerate(TEXTS))
    dataset = {
        "kind": "dataset", "name": "ddddocr-lines", "version": "1.0.0",
        "task": "text-recognition",
        "data": {"format": "images", "path": "images"},
        "labels": {"format": "text-csv", "path": "texts.csv"},
        "files": write_files(tmp_path / "data", {**images, "texts.csv": csv.encode()}),
    }  # fmt: skip
    publish(ws, parse_manifest(dataset), manifest_dir=tmp_path / "data", publisher="test")
    yield (
        ws,
        {"det": det, "ocr": rec, "charset": tmp_path / "ocr" / "charset.txt"},
        list(images.values()),
    )
    ws.close()


def sessions(files: dict[str, Path]) -> tuple[Any, Any]:
    """The two graphs in onnxruntime, one thread each (as the request's ``threads: 1``)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    det, rec = (ort.InferenceSession(str(files[s]), options) for s in ("det", "ocr"))
    return det, rec


def by_hand(det: Any, rec: Any, charset_path: Path, images: list[bytes]) -> list[str]:
    """Each image's text: ddddocr's detector input made with OpenCV as its ``preproc`` makes
    it, both graphs run here with onnxruntime, the walkthrough's code and join between them,
    the joined scores decoded greedily (class 0 the blank)."""
    import cv2

    stage = documented()["chain"]["stages"][1]
    code: dict[str, Any] = {}
    exec(compile(stage["code"]["code"], "crops", "exec"), code)
    exec(compile(stage["join"]["code"], "join", "exec"), code)
    charset = ["", *charset_path.read_text(encoding="utf-8").split("\n")]
    texts = []
    for data in images:
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        assert bgr is not None
        padded = np.full((416, 416, 3), 114, np.uint8)
        padded[: bgr.shape[0], : bgr.shape[1]] = bgr  # 416 wide: r = 1, no resize
        found = det.run(None, {"images": padded.transpose(2, 0, 1)[None].astype(np.float32)})[0]
        raw = np.frombuffer(data, np.uint8)[None]
        feeds = code["crops"]({"input1": found, "image": raw}, {})
        outputs = [{"387": rec.run(None, feed)[0]} for feed in feeds]
        path = code["reading"](outputs, {})["387"][:, 0].argmax(axis=1)
        kept = [int(c) for i, c in enumerate(path) if c != 0 and (i == 0 or c != path[i - 1])]
        texts.append("".join(charset[c] for c in kept))
    return texts


def ddddocr_reads(det: Any, rec: Any, images: list[bytes]) -> tuple[list[str], list[int]]:
    """ddddocr's own: ``get_bbox`` on each image's bytes (``DdddOcr(det=True).detection``),
    each box (left to right, the chain's order) cropped with Pillow and read by its
    ``classification`` path; the texts, and the boxes found per image."""
    detector, recogniser = ddddocr_engines(det, rec)
    texts, counts = [], []
    for data in images:
        boxes = sorted(detector.get_bbox(data))
        picture = Image.open(io.BytesIO(data))
        texts.append("".join(recogniser.classify(picture.crop(tuple(b))) for b in boxes))
        counts.append(len(boxes))
    return texts, counts


def test_the_ocr_chain_reads_as_its_graphs_by_hand_and_as_ddddocr(ocr: Any, tmp_path: Path) -> None:
    ws, files, images = ocr
    lock = service.lock(ws, parse_request(documented()))[0]
    pinned = {a.name: {f.path: f.sha256 for f in a.files} for a in lock.body.artifacts}
    with zipfile.ZipFile(wheel("ddddocr")) as whl:
        for name, member in (("ddddocr/det", DET), ("ddddocr/ocr", OCR)):
            upstream = hashlib.sha256(whl.read(member)).hexdigest()
            assert pinned[name][Path(member).name] == upstream  # the wheel's file, byte for byte

    run_lockfile(ws, lock, say=quiet, allow_code=True)
    run = list_runs(ws)[0]
    assert run["status"] == "succeeded", run.get("error")
    shown = show_run(ws, run["id"])
    details = shown["details"]
    # the raw latencies are the framework calls' nanoseconds, one a query (a fan-out's count
    # of calls per query was recorded in their place, as float64, before they were checked)
    latencies = latencies_of(ws, shown["latencies_sha256"])
    assert latencies.dtype == np.int64 and latencies.size == len(TEXTS)
    assert shown["framework_latency_max_ns"] == float(latencies.max())
    read = [s["text"] for s in details["samples"]]
    assert [s["truth"] for s in details["samples"]] == TEXTS

    det, rec = sessions(files)
    assert read == by_hand(det, rec, files["charset"], images)
    package, boxes = ddddocr_reads(det, rec, images)
    assert read == package, "the chain reads what ddddocr's own detection and OCR read"
    assert read != TEXTS and all(boxes)  # boxes found in every image, some read wrong

    import jiwer

    assert run["cer"] == pytest.approx(jiwer.cer(TEXTS, read), rel=1e-12)
    assert run["exact_match"] == sum(a == b for a, b in zip(read, TEXTS, strict=True)) / 4
    ocr_stage = details["chain"]["stages"][1]
    assert ocr_stage["calls_per_query"]["max"] == max(boxes)
    assert ocr_stage["calls_per_query"]["mean"] == pytest.approx(np.mean(boxes))
    assert ocr_stage["join"]["code"] == "<inline>:reading"
    # code between the stages: the host keeps the clock; the stages' times are the worker's
    # account (its clock), in the details, never the run's figures
    assert details["clock"]["side"] == "host"
    own = details["chain"]["worker_clock"]
    for stage in ("det", "ocr"):
        assert 0 < own[f"stage_{stage}_latency_p50_ns"] <= own[f"stage_{stage}_latency_max_ns"]
    parts = own["stage_det_latency_mean_ns"] + own["stage_ocr_latency_mean_ns"]
    assert parts <= own["chain_latency_mean_ns"] <= run["framework_latency_mean_ns"]


def stages(**changes: Any) -> dict[str, Any]:
    """The walkthrough's request with the ``ocr`` stage changed (a key set to None left out)."""
    data = documented()
    ocr_stage = {**data["chain"]["stages"][1], **changes}
    data["chain"]["stages"][1] = {k: v for k, v in ocr_stage.items() if v is not None}
    return data


REQUEST_REFUSED = [
    # (why, the request, what the refusal says)
    (
        "the sample offers its bytes only",
        stages(inputs={"input1": "det.output", "image": "sample.pixels"}),
        "the sample offers 'sample.bytes' (its file's bytes) and nothing else",
    ),
    (
        "a join gathers a fan-out's calls: no code, no fan-out",
        stages(code=None, inputs={"input1": "det.output"}),
        "has a `join` but no `code`",
    ),
    (
        "`sample` is the samples' own name",
        {
            **documented(),
            "chain": {
                "stages": [
                    *documented()["chain"]["stages"][:1],
                    stages()["chain"]["stages"][1] | {"name": "sample"},
                ]
            },
        },
        "chain stage name 'sample' is the samples' own",
    ),
]


@pytest.mark.parametrize(
    ("request_data", "message"),
    [c[1:] for c in REQUEST_REFUSED],
    ids=[c[0] for c in REQUEST_REFUSED],
)
def test_a_fan_out_or_a_sample_wire_that_cannot_be_is_refused_as_the_request_is_read(
    request_data: dict[str, Any], message: str
) -> None:
    with pytest.raises(RequestError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_request(request_data)


class Scores:
    """A predictor stand-in: ``(2, 1, 3)`` scores for any feed, each feed kept."""

    def __init__(self) -> None:
        self.fed: list[Any] = []

    def first_predict(self, batch: Any) -> dict[str, Any]:
        return self.predict(batch)

    def predict(self, batch: Any) -> dict[str, Any]:
        self.fed.append(batch)
        return {"387": np.zeros((2, 1, 3), np.float32)}

    def close(self) -> None:
        pass


def fan_out(code: str, join: str) -> tuple[Any, Any]:
    """A two-stage chain predictor: a first stage that gives its batch as ``out``, and the
    walkthrough's ``ocr`` stage (its declarations) with ``code`` and ``join``."""
    import msgspec

    from pinbench.chains.predict import ChainPredictor, Stage
    from pinbench.processing.loading import load
    from pinbench.registry.chain_spec import LockedStage
    from pinbench.registry.processing_code import Code

    class Same(Scores):
        def predict(self, batch: Any) -> dict[str, Any]:
            return {"out": batch}

    def locked(name: str, inputs: list[Any], outputs: list[Any], **more: Any) -> LockedStage:
        return msgspec.convert(
            {"name": name, "model": f"t/{name}", "version": "1.0.0", "format": "onnx",
             "architecture": None, "trusted": False, "inputs": inputs, "outputs": outputs,
             "wires": {}, **more},
            LockedStage,
        )  # fmt: skip

    roles = {"code": Code(function="feeds", code=code), "join": Code(function="join", code=join)}
    loaded = load(roles, {}, {})
    first = locked("first", [{"name": "x", "element_type": "float32"}], [{"name": "out"}])
    ocr_stage = locked(
        "ocr",
        [{"name": "input1", "element_type": "float32", "shape": [1, 4]}],
        [{"name": "387"}],
        wires={"input1": "first.out"},
        code=roles["code"],
        join=roles["join"],
    )
    scores = Scores()
    stages = [
        Stage(first, Same(), None, {}),  # type: ignore[arg-type]
        Stage(ocr_stage, scores, loaded["code"], {}, loaded["join"]),  # type: ignore[arg-type]
    ]
    return ChainPredictor(stages), scores


FEEDS = """
import numpy as np

def feeds(values, files):
    count = int(values["input1"][0, 0])  # the sample says how many boxes
    return [{"input1": np.full((1, 1, 4), i, values["input1"].dtype)} for i in range(count)]
"""
JOIN = """
import numpy as np

def join(outputs, files):
    return {"387": np.concatenate([o["387"] for o in outputs] or [np.zeros((0, 1, 3), np.float32)])}
"""
FAN_OUT_REFUSED = [
    # (why, code, join, the samples, what the refusal says)
    (
        "one feed where a list is due",
        FEEDS.replace("for i in range(count)]", "for i in range(count)][0]"),
        JOIN,
        [1.0],
        "chain stage 'ocr': its code <inline>:feeds returned a dict; a stage with a `join` is a "
        "fan-out: its code returns a list of feeds, one dict of inputs per call",
    ),
    (
        "one feed where a list is due, on a later query: was fed the dict's keys",
        FEEDS.replace("    return [", "    if count == 2:\n        return {}\n    return ["),
        JOIN,
        [1.0, 2.0],
        "chain stage 'ocr': its code <inline>:feeds returned a dict",
    ),
    (
        "more feeds for one query than a fan-out makes calls (bounds.FAN_OUT_FEEDS)",
        FEEDS,
        JOIN,
        [1.0, 4097.0],
        "chain stage 'ocr': its code <inline>:feeds returned 4,097 feeds for one query; a "
        "fan-out makes at most 4,096 calls per query",
    ),
    (
        "a join that names an output the model does not declare",
        FEEDS,
        JOIN.replace('{"387"', '{"x"'),
        [2.0],
        "chain stage 'ocr': its join <inline>:join returned {'x': 'ndarray'}; it returns one "
        "NumPy array per output model t/ocr@1.0.0 declares: ['387']",
    ),
    (
        "a feed of another dtype, after a first sample with no box: was not checked",
        FEEDS.replace('values["input1"].dtype', "np.float64"),
        JOIN,
        [0.0, 2.0],
        "chain stage 'ocr': input 'input1' (made by <inline>:feeds) has dtype float64, model "
        "t/ocr@1.0.0 declares element_type float32",
    ),
]


@pytest.mark.parametrize(
    ("code", "join", "samples", "message"),
    [c[1:] for c in FAN_OUT_REFUSED],
    ids=[c[0] for c in FAN_OUT_REFUSED],
)
def test_a_fan_out_whose_code_or_join_answers_otherwise_is_refused_naming_them(
    code: str, join: str, samples: list[float], message: str
) -> None:
    chained, _ = fan_out(code, join)
    with pytest.raises(ChainRefused) as refused:
        for value in samples:
            chained.predict(np.full((1, 1), value, np.float32))
    assert str(refused.value).startswith(message)


def test_a_fan_out_calls_its_stage_once_per_feed_and_times_the_calls_together() -> None:
    chained, scores = fan_out(FEEDS, JOIN)
    assert chained.predict(np.full((1, 1), 0.0, np.float32))["387"].shape == (0, 1, 3)
    chained.timing = True
    for count in (3, 0, 1):
        out = chained.predict(np.full((1, 1), float(count), np.float32))
        assert out["387"].shape == (2 * count, 1, 3)
    ocr_stage = chained.stages[1]
    assert ocr_stage.calls == [3, 0, 1]
    assert [float(f[0, 0, 0]) for f in scores.fed] == [0.0, 1.0, 2.0, 0.0]
    assert ocr_stage.times[1] == 0 and min(ocr_stage.times[0], ocr_stage.times[2]) > 0
    assert len(ocr_stage.code_times) == 3 and min(ocr_stage.code_times) > 0


def test_sample_bytes_needs_sample_files() -> None:
    from types import SimpleNamespace

    from pinbench.chains.evaluate import _with_sample

    request = documented()
    chain = SimpleNamespace(
        stages=[
            SimpleNamespace(name=s["name"], wires=s.get("inputs", {}))
            for s in request["chain"]["stages"]
        ]
    )
    with pytest.raises(ChainRefused, match="dataset arrays holds no sample files"):
        _with_sample(chain, np.zeros((1, 1)), SimpleNamespace(files=None), "arrays", quiet)  # type: ignore[arg-type]


def test_the_stage_fed_from_the_samples_runs_first_though_a_sample_reader_is_listed_first() -> None:
    """A stage wired ``sample.bytes`` alone depends on no stage: listed before the stage fed
    from the samples, the order must still start with that one (the run feeds the samples'
    inputs to the first stage and skips its code)."""
    from pinbench.registry.chain_spec import ChainStage
    from pinbench.registry.chain_wiring import run_order
    from pinbench.registry.processing_code import Code

    code = Code(function="crop", code="def crop(values, files):\n    return values\n")
    stages = [
        ChainStage(name="reader", model="rec@1", inputs={"raw": "sample.bytes"}, code=code),
        ChainStage(name="det", model="det@1"),
        ChainStage(name="last", model="cls@1", inputs={"a": "reader.y", "b": "det.w"}),
    ]
    order = [s.name for s in run_order(stages)]
    assert order[0] == "det"
    assert order.index("reader") < order.index("last")


def test_a_fan_out_first_fed_on_a_later_query_makes_its_first_call_cold() -> None:
    """A fan-out stage whose first query has no box is first called later: that call is its
    ``first_predict`` (the framework's complaint about the input as an input mismatch, the
    outputs' batch axes checked), as every other stage's first call is."""
    chained, scores = fan_out(FEEDS, JOIN)
    cold: list[Any] = []

    def first_predict(batch: Any) -> dict[str, Any]:
        cold.append(batch)
        got: dict[str, Any] = scores.predict(batch)
        return got

    scores.first_predict = first_predict
    chained.predict(np.full((1, 1), 0.0, np.float32))
    assert cold == []
    chained.predict(np.full((1, 1), 2.0, np.float32))
    assert len(cold) == 1 and len(scores.fed) == 2
