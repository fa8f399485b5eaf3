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

from pinbench.chains.spec import ChainRefused
from pinbench.evaluator.history import list_runs, show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import RequestError, parse_request
from pinbench.registry.yamlsafe import load_yaml
from pinbench.workspace import Workspace
from tests.helpers import model_manifest, published_workspace, write_files
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
def ocr(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Any]:
    """A workspace with the catalog's onnxruntime, both models and a dataset of the images."""
    tmp_path = tmp_path_factory.mktemp("ocr-chain")
    ws = published_workspace(tmp_path, catalog_dir)
    det, rec = package_file("ddddocr", DET), package_file("ddddocr", OCR)
    det_files = write_files(tmp_path / "det", {"common_det.onnx": det.read_bytes()})
    manifest = model_manifest("ddddocr/det", "1.6.1", det_files, framework_range="^1")
    manifest.update(
        inputs=[
            {
                "name": "images",
                "type": "image",
                "element_type": "float32",
                "shape": [3, 416, 416],
                "steps": [
                    {"decode": {"color_mode": "bgr"}},
                    {"letterbox": {"size": [416, 416], "placement": "top-left", "value": 114}},
                    {"layout": {"to": "NCHW"}},
                ],
            }
        ],
        outputs=[{"name": "output"}],
    )
    publish(ws, parse_manifest(manifest), manifest_dir=tmp_path / "det", publisher="test")
    rec_files = write_files(
        tmp_path / "ocr",
        {"common_old.onnx": rec.read_bytes(), "charset.txt": charset_file(tmp_path / "doc")},
    )
    manifest = model_manifest("ddddocr/ocr", "1.6.1", rec_files, framework_range="^1")
    manifest.update(
        inputs=[{"name": "input1", "element_type": "float32"}],
        outputs=[
            {
                "name": "387",
                "type": "text",
                "steps": [{"transpose": {"perm": [1, 0, 2]}}],
                "ctc": {"blank": 0, "alphabet": {"file": "charset.txt"}},
            }
        ],
    )
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
    yield ws, {"det": det, "ocr": rec}, list(images.values())
    ws.close()


def by_hand(files: dict[str, Path], images: list[bytes]) -> list[str]:
    """Each image's text: ddddocr's detector input made with OpenCV as its ``preproc`` makes
    it, both graphs run here with onnxruntime, the walkthrough's code and join between them,
    the joined scores decoded greedily (class 0 the blank)."""
    import cv2
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    det, rec = (ort.InferenceSession(str(files[s]), options) for s in ("det", "ocr"))
    stage = documented()["chain"]["stages"][1]
    code: dict[str, Any] = {}
    exec(compile(stage["code"]["code"], "crops", "exec"), code)
    exec(compile(stage["join"]["code"], "join", "exec"), code)
    charset = ["", *files["charset"].read_text(encoding="utf-8").split("\n")]
    texts = []
    for data in images:
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
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


def ddddocr_reads(files: dict[str, Path], images: list[bytes]) -> tuple[list[str], list[int]]:
    """ddddocr's own: ``get_bbox`` on each image's bytes (``DdddOcr(det=True).detection``),
    each box (left to right, the chain's order) cropped with Pillow and read by its
    ``classification`` path; the texts, and the boxes found per image."""
    import onnxruntime as ort

    detector, recogniser = ddddocr_engines(
        ort.InferenceSession(str(files["det"])), ort.InferenceSession(str(files["ocr"]))
    )
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
    details = show_run(ws, run["id"])["details"]
    read = [s["text"] for s in details["samples"]]
    assert [s["truth"] for s in details["samples"]] == TEXTS

    charset = tmp_path / "charset.txt"
    charset.write_bytes(charset_file(tmp_path / "doc"))
    assert read == by_hand({**files, "charset": charset}, images)
    package, boxes = ddddocr_reads(files, images)
    assert read == package, "the chain reads what ddddocr's own detection and OCR read"
    assert read != TEXTS and all(boxes)  # boxes found in every image, some read wrong

    import jiwer

    assert run["cer"] == pytest.approx(jiwer.cer(TEXTS, read), rel=1e-12)
    assert run["exact_match"] == sum(a == b for a, b in zip(read, TEXTS, strict=True)) / 4
    ocr_stage = details["chain"]["stages"][1]
    assert ocr_stage["calls_per_query"]["max"] == max(boxes)
    assert ocr_stage["calls_per_query"]["mean"] == pytest.approx(np.mean(boxes))
    assert ocr_stage["join"]["code"] == "<inline>:reading"
    for stage in ("det", "ocr"):
        assert 0 < run[f"stage_{stage}_latency_p50_ns"] <= run[f"stage_{stage}_latency_max_ns"]
    parts = run["stage_det_latency_mean_ns"] + run["stage_ocr_latency_mean_ns"]
    assert run["framework_latency_mean_ns"] == pytest.approx(parts, rel=1e-9)


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
            },  # noqa: E501
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


def test_a_fan_out_whose_code_or_join_answers_otherwise_fails_before_timing(ocr: Any) -> None:
    """Code that returns one feed where a join expects a list, and a join that names another
    output: each fails the run at the first prediction, naming the stage and the code."""
    ws = ocr[0]
    stage = documented()["chain"]["stages"][1]
    one = (
        stage["code"]["code"]
        + "\n\ndef first(values, files):\n    return crops(values, files)[0]\n"
    )
    renamed = stage["join"]["code"].replace(
        'return {"387": np.concatenate', 'return {"x": np.concatenate'
    )
    assert renamed != stage["join"]["code"]
    for changes, message in (
        (
            {"code": {"function": "first", "code": one}},
            "chain stage 'ocr': its code <inline>:first returned a dict; a stage with a `join` "
            "is a fan-out: its code returns a list of feeds",
        ),
        (
            {"join": {**stage["join"], "code": renamed}},
            "chain stage 'ocr': its join <inline>:reading returned {'x': 'ndarray'}; it returns "
            "one NumPy array per output model ddddocr/ocr@1.6.1 declares: ['387']",
        ),
    ):
        lock = service.lock(ws, parse_request(stages(**changes)))[0]
        with pytest.raises(ChainRefused) as refused:
            run_lockfile(ws, lock, say=quiet, allow_code=True)
        assert str(refused.value).startswith(message)
        failed = list_runs(ws)[0]
        assert failed["status"] == "failed"
        assert not any(k.startswith(("stage_", "latency_")) for k in failed)
