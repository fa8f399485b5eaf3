"""Object detection through pinbench end to end: the catalog part ``nudenet`` (NudeNet 3.4.2's
YOLOv8n ONNX file, five scikit-image photos with faces annotated as COCO JSON) published,
locked and run in accuracy mode through the CLI; the run's COCO metrics must equal those of
the direct computation in ``tests/test_detection_nudenet.py`` (plain onnxruntime fed the
package's own input, ``nudenet.nudenet._read_image``: OpenCV, BGR). Bad ground truth is
refused at publish, a detection output that does not say how to read it is refused at
publish, and a model whose classes do not match the dataset's categories fails its run
(recorded as failed, never as a success)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pinbench import catalog as builtin
from pinbench.artifacts.digest import hash_file
from pinbench.catalog import nudenet
from pinbench.tasks.detection.coco import coco_metrics
from tests import ssd_grid, yolox_grid
from tests.helpers import Cli
from tests.test_detection_nudenet import GROUND_TRUTH, run_on_all

MODEL_YAML = "model-nudenet.yaml"
DATASET_YAML = f"dataset-{nudenet.DATASET}.yaml"


@pytest.fixture(scope="module")
def nudenet_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("catalog-nudenet")
    builtin.build(root, ["nudenet"])
    return root


@pytest.fixture
def published(cli: Cli, nudenet_catalog: Path) -> Cli:
    assert cli("init").code == 0
    for name in ("framework-onnxruntime.yaml", DATASET_YAML, MODEL_YAML):
        done = cli("publish", str(nudenet_catalog / name))
        assert done.code == 0, done.err
    return cli


def lock_and_run(cli: Cli, tmp_path: Path, model: str, dataset: str) -> tuple[int, str]:
    request = tmp_path / "request.yaml"
    request.write_text(
        yaml.safe_dump({"model": model, "dataset": dataset, "scenario": {"mode": "accuracy"}})
    )
    locked = cli("lock", str(request), "-o", str(tmp_path / "run.lock"))
    assert locked.code == 0, locked.err
    ran = cli("run", str(tmp_path / "run.lock"), "--runner", "local")
    return ran.code, ran.err


def latest_run(cli: Cli) -> dict[str, Any]:
    listed = cli("runs", "list", "--json")
    assert listed.code == 0, listed.err
    run_id = json.loads(listed.out)[0]["id"]
    shown = cli("runs", "show", run_id, "--json")
    assert shown.code == 0, shown.err
    run: dict[str, Any] = json.loads(shown.out)
    return run


def test_nudenet_accuracy_run_scores_as_the_direct_computation(
    published: Cli, tmp_path: Path
) -> None:
    code, err = lock_and_run(published, tmp_path, f"{nudenet.NAME}@1", f"{nudenet.DATASET}@1")
    assert code == 0, err
    run = latest_run(published)
    assert run["status"] == "succeeded", run["error"]
    direct = coco_metrics(json.loads(GROUND_TRUTH.read_text()), run_on_all())
    assert {k: run[k] for k in direct} == pytest.approx(direct, abs=1e-9)
    assert run["map"] == pytest.approx(0.65) and run["map50"] == pytest.approx(1.0)
    # Both faces are medium: the small and large statistics are undefined, left out of the
    # metrics with their reasons in the details, and shown as undefined (decision 165).
    undefined = run["details"]["undefined_metrics"]
    assert sorted(undefined) == ["ar_large", "ar_small", "map_large", "map_small"]
    assert not set(undefined) & set(run["units"])
    shown = published("runs", "show", run["id"])
    assert shown.code == 0, shown.err
    assert "AR@100" in shown.out and "mAP@.75" in shown.out
    assert "mAP small" in shown.out and "undefined: no ground-truth object in the small" in (
        " ".join(shown.out.split())
    )
    assert run["accuracy_samples_count"] == len(nudenet.PHOTOS)
    # per photo, its detections on the original image: [category_id, score, x, y, w, h]
    found = run["details"]["detections"]
    assert len(found) == len(nudenet.PHOTOS)
    astronaut = found[0][0]
    assert astronaut[0] == nudenet.LABELS.index("FACE_FEMALE") + 1
    assert run["details"]["outputs_name"] == nudenet.OUTPUT
    report = published("runs", "report", run["id"], "--html", str(tmp_path / "r.html"))
    assert report.code == 0, report.err
    html = (tmp_path / "r.html").read_text()
    assert "mAP@.5 (map50)" in html and "AR@100 (recall)" in html
    assert '<td class="num">undefined</td>' in html


# --- variants of the part's manifests ------------------------------------------------------


def _names_from_metadata(data: dict[str, Any]) -> None:
    data["files"] = [f for f in data["files"] if f["path"] != nudenet.LABELS_FILE]
    data["outputs"][0]["labels"] = {"metadata": "names"}


def test_class_names_from_the_models_own_metadata_score_as_its_labels_file(
    published: Cli, nudenet_catalog: Path, tmp_path: Path
) -> None:
    """NudeNet's ONNX file as ultralytics exported it names its classes in its metadata
    (``names``: ``{0: 'FEMALE_GENITALIA_COVERED', 1: 'FACE_FEMALE', ...}``): read from there,
    with no labels file, the run scores as the direct computation (issue 50)."""
    path = variant(nudenet_catalog, tmp_path, MODEL_YAML, "1.0.4", change=_names_from_metadata)
    done = published("publish", str(path))
    assert done.code == 0, done.err
    code, err = lock_and_run(published, tmp_path, f"{nudenet.NAME}@1.0.4", f"{nudenet.DATASET}@1")
    assert code == 0, err
    run = latest_run(published)
    assert run["status"] == "succeeded", run["error"]
    direct = coco_metrics(json.loads(GROUND_TRUTH.read_text()), run_on_all())
    assert {k: run[k] for k in direct} == pytest.approx(direct, abs=1e-9)
    assert run["details"]["detections"][0][0][0] == nudenet.LABELS.index("FACE_FEMALE") + 1


def variant(
    catalog: Path,
    tmp_path: Path,
    manifest: str,
    version: str,
    *,
    files: dict[str, Callable[[str], str]] | None = None,
    change: Callable[[dict[str, Any]], None] | None = None,
) -> Path:
    """A copy of one of the part's manifests at ``version`` beside copies of its files, with
    some files' text changed (``files``: artifact path -> new text from old) and the manifest
    changed (``change``); file entries get their new sha256 and size."""
    root = tmp_path / f"variant-{version}"
    data = yaml.safe_load((catalog / manifest).read_text())
    data["version"] = version
    for entry in data["files"]:
        source = entry["source"].removeprefix("file:")
        target = root / source
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(catalog / source, target)
        if files and entry["path"] in files:
            target.write_text(files[entry["path"]](target.read_text()))
            digest, size = hash_file(target)
            entry.update(sha256=digest.hex, size=size)
    if change is not None:
        change(data)
    path = root / manifest
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def edit_json(change: Callable[[dict[str, Any]], None]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        data = json.loads(text)
        change(data)
        return json.dumps(data)

    return edit


def _box_outside(gt: dict[str, Any]) -> None:
    gt["annotations"][0]["bbox"] = [480, 80, 87, 98]  # astronaut.png is 512 wide


def _unknown_image(gt: dict[str, Any]) -> None:
    gt["annotations"][0]["image_id"] = 99


def _image_not_a_file(gt: dict[str, Any]) -> None:
    gt["images"].append({"id": 6, "file_name": "lena.png", "width": 512, "height": 512})


def _file_not_an_image(gt: dict[str, Any]) -> None:
    gt["images"] = [i for i in gt["images"] if i["file_name"] != "rocket.jpg"]


def _wrong_size(gt: dict[str, Any]) -> None:
    gt["images"][2]["width"] = 450  # chelsea.png is 451 x 300


def _all_crowds(gt: dict[str, Any]) -> None:
    for annotation in gt["annotations"]:
        annotation["iscrowd"] = 1


def _area_text(gt: dict[str, Any]) -> None:
    gt["annotations"][0]["area"] = "big"


def _area_negative(gt: dict[str, Any]) -> None:
    gt["annotations"][0]["area"] = -1.5


BAD_GROUND_TRUTH = [
    # pycocotools gives -1 when no annotation counts; it was recorded as a mAP of 0.0
    ("every annotation a crowd", _all_crowds, "every one is iscrowd: 1"),
    ("an area that is text", _area_text, "area must be a number from 0 to the image's"),
    ("a negative area", _area_negative, "pixels, got -1.5"),
    ("a box outside its image", _box_outside, "is not inside the image (512 x 512)"),
    ("an annotation of an unknown image", _unknown_image, "unknown image_id 99"),
    (
        "an image that is not a sample file",
        _image_not_a_file,
        "COCO image 'images/lena.png' is not among the sample files",
    ),
    (
        "a sample file missing from the JSON",
        _file_not_an_image,
        "sample file 'images/rocket.jpg' is not an image of the COCO JSON",
    ),
    (
        "an image of another size",
        _wrong_size,
        "the image is 451 x 300 but the COCO JSON declares 450 x 300",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"),
    [c[1:] for c in BAD_GROUND_TRUTH],
    ids=[c[0] for c in BAD_GROUND_TRUTH],
)
def test_bad_ground_truth_is_refused_at_publish(
    published: Cli,
    nudenet_catalog: Path,
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    message: str,
) -> None:
    path = variant(
        nudenet_catalog,
        tmp_path,
        DATASET_YAML,
        "1.0.1",
        files={"instances.json": edit_json(change)},
    )
    refused = published("publish", str(path))
    assert refused.code == 1 and message in refused.err, refused.err
    assert "Traceback" not in refused.err
    assert published("show", f"dataset/{nudenet.DATASET}@1.0.1").code == 1


UNREADABLE_JSON = [
    ("nested 100,000 deep", lambda text: "[" * 100_000 + text + "]" * 100_000, "64 deep"),
    (
        "a key twice",
        lambda text: text.rstrip()[:-1] + ', "images": []}',
        "key 'images' appears twice",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [c[1:] for c in UNREADABLE_JSON], ids=[c[0] for c in UNREADABLE_JSON]
)
def test_unreadable_coco_json_is_refused_at_publish_without_a_traceback(
    published: Cli,
    nudenet_catalog: Path,
    tmp_path: Path,
    change: Callable[[str], str],
    message: str,
) -> None:
    path = variant(
        nudenet_catalog, tmp_path, DATASET_YAML, "1.0.3", files={"instances.json": change}
    )
    refused = published("publish", str(path))
    assert refused.code == 1, refused.err
    assert "instances.json" in refused.err and message in refused.err
    assert "Traceback" not in refused.err and "RecursionError" not in refused.err
    assert published("show", f"dataset/{nudenet.DATASET}@1.0.3").code == 1


def _without(key: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        del data["outputs"][0][key]

    return change


def _no_layout(data: dict[str, Any]) -> None:
    del data["outputs"][0]["detection"]["layout"]


def _boxes_layout(data: dict[str, Any]) -> None:
    data["outputs"][0]["detection"]["layout"] = "boxes"


def _separate_without_scores(data: dict[str, Any]) -> None:
    data["outputs"][0]["detection"]["layout"] = "separate"


def _separate_scores_undeclared(data: dict[str, Any]) -> None:
    data["outputs"][0]["detection"] |= {"layout": "separate", "scores": "detection_scores"}


def _packed_with_scores(data: dict[str, Any]) -> None:
    data["outputs"][0]["detection"]["scores"] = "detection_scores"


def _detection_on_a_classifier(data: dict[str, Any]) -> None:
    data["outputs"][0]["type"] = "classification"


BAD_MODELS = [
    ("no detection section", _without("detection"), "has no `detection`"),
    ("no class names", _without("labels"), "has no `labels`"),
    ("no layout", _no_layout, "`layout`"),
    (
        "an unknown layout",
        _boxes_layout,
        "must be one of gfl, probability-map, separate, ssd, yolov5, yolov8, yolox; got 'boxes'",
    ),
    ("separate outputs without scores", _separate_without_scores, "layout separate needs"),
    (
        "separate outputs the model does not declare",
        _separate_scores_undeclared,
        "reads its scores from output 'detection_scores', which the model does not declare",
    ),
    ("a packed layout naming other outputs", _packed_with_scores, "`scores` names a separate"),
    (
        "a detection section on another type",
        _detection_on_a_classifier,
        "has a `detection` section but type 'classification'",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [c[1:] for c in BAD_MODELS], ids=[c[0] for c in BAD_MODELS]
)
def test_detection_outputs_that_do_not_say_how_to_read_them_are_refused(
    published: Cli,
    nudenet_catalog: Path,
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    message: str,
) -> None:
    path = variant(nudenet_catalog, tmp_path, MODEL_YAML, "1.0.1", change=change)
    refused = published("publish", str(path))
    assert refused.code == 1 and message in refused.err, refused.err
    assert "Traceback" not in refused.err


BAD_MAPPINGS = [
    (
        "class names that are not the categories'",
        lambda text: text.lower(),
        "annotated categories 'FACE_FEMALE', 'FACE_MALE' match no class name in labels.txt",
    ),
    (
        "fewer names than the output's class columns",
        lambda text: "".join(text.splitlines(keepends=True)[:17]),
        "scores 18 classes but its labels file names 17",
    ),
]


@pytest.mark.parametrize(
    ("names", "message"), [c[1:] for c in BAD_MAPPINGS], ids=[c[0] for c in BAD_MAPPINGS]
)
def test_a_wrong_category_mapping_fails_the_run(
    published: Cli,
    nudenet_catalog: Path,
    tmp_path: Path,
    names: Callable[[str], str],
    message: str,
) -> None:
    path = variant(
        nudenet_catalog, tmp_path, MODEL_YAML, "1.0.2", files={nudenet.LABELS_FILE: names}
    )
    assert published("publish", str(path)).code == 0
    code, err = lock_and_run(published, tmp_path, f"{nudenet.NAME}@1.0.2", f"{nudenet.DATASET}@1")
    assert code == 1 and message in err, err
    assert "Traceback" not in err
    run = latest_run(published)
    assert run["status"] == "failed" and message in run["error"]
    assert "map" not in run


def _raw_grid_as_yolov5(data: dict[str, Any]) -> None:
    output = data["outputs"][0]
    output["name"] = "raw_grid"
    output["detection"]["layout"] = "yolov5"


def test_a_layout_that_cannot_match_the_output_fails_the_run(
    published: Cli, nudenet_catalog: Path, tmp_path: Path
) -> None:
    """NudeNet's ONNX file with its output re-encoded as a raw YOLOX grid (``yolox_grid``),
    declared ``layout: yolov5``: its shape fits, its numbers decode to boxes a pixel or two
    wide, which scored mAP 0 and were recorded as a success. The run now fails, naming the
    layout, the counts and a box (``detection.plausible``)."""
    path = variant(nudenet_catalog, tmp_path, MODEL_YAML, "1.0.3", change=_raw_grid_as_yolov5)
    data = yaml.safe_load(path.read_text())
    (entry,) = [f for f in data["files"] if f["path"] == nudenet.ONNX_FILE]
    onnx_file = path.parent / entry["source"].removeprefix("file:")
    onnx_file.write_bytes(
        yolox_grid.wrap(onnx_file.read_bytes(), output=nudenet.OUTPUT, renamed="raw_grid")
    )
    digest, size = hash_file(onnx_file)
    entry.update(sha256=digest.hex, size=size)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert published("publish", str(path)).code == 0
    code, err = lock_and_run(published, tmp_path, f"{nudenet.NAME}@1.0.3", f"{nudenet.DATASET}@1")
    message = "output 'raw_grid' read as layout yolov5 gives boxes that cannot be right"
    assert code == 1 and message in err, err
    assert "Traceback" not in err
    run = latest_run(published)
    assert run["status"] == "failed" and message in run["error"]
    assert "narrower or shorter than 2 pixels of the model input" in run["error"]
    assert "e.g. images/astronaut.png's box [" in run["error"]
    assert "map" not in run


def _raw_grid_as_yolox(data: dict[str, Any]) -> None:
    output = data["outputs"][0]
    output["name"] = "raw_grid"
    output["detection"]["layout"] = "yolox"
    output["detection"]["yolox"] = {"strides": [8, 16, 32]}


def test_a_raw_yolox_grid_declared_as_yolox_scores_as_the_decoded_model(
    published: Cli, nudenet_catalog: Path, tmp_path: Path
) -> None:
    """The same raw YOLOX grid, declared ``layout: yolox`` with its strides (issue 50): decoded
    on the grid of the 320 x 320 input, objectness x class, it scores as NudeNet's own decoded
    output does in the direct computation (the grid round-trips in float32)."""
    path = variant(nudenet_catalog, tmp_path, MODEL_YAML, "1.0.5", change=_raw_grid_as_yolox)
    data = yaml.safe_load(path.read_text())
    (entry,) = [f for f in data["files"] if f["path"] == nudenet.ONNX_FILE]
    onnx_file = path.parent / entry["source"].removeprefix("file:")
    onnx_file.write_bytes(
        yolox_grid.wrap(onnx_file.read_bytes(), output=nudenet.OUTPUT, renamed="raw_grid")
    )
    digest, size = hash_file(onnx_file)
    entry.update(sha256=digest.hex, size=size)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert published("publish", str(path)).code == 0
    code, err = lock_and_run(published, tmp_path, f"{nudenet.NAME}@1.0.5", f"{nudenet.DATASET}@1")
    assert code == 0, err
    run = latest_run(published)
    assert run["status"] == "succeeded", run["error"]
    direct = coco_metrics(json.loads(GROUND_TRUTH.read_text()), run_on_all())
    assert {k: run[k] for k in direct} == pytest.approx(direct, abs=1e-6)
    assert run["map50"] == pytest.approx(1.0)


def _ssd(data: dict[str, Any]) -> None:
    output = data["outputs"][0]
    output["name"] = "ssd_deltas"
    output["detection"] = {
        "layout": "ssd",
        "scores": "ssd_scores",
        "box_format": "cxcywh",
        "normalized": True,
        "score_threshold": nudenet.SCORE_THRESHOLD,
        "nms": {
            "iou": nudenet.IOU_THRESHOLD,
            "max_detections": nudenet.MAX_DETECTIONS,
            "class_agnostic": True,
        },
        "ssd": {
            "anchors": "anchors.npy",
            "variances": list(ssd_grid.VARIANCES),
            "activation": "none",
            "background": 0,
        },
    }
    data["outputs"].append({"name": "ssd_scores", "type": "tensor"})


def test_ssd_deltas_against_anchors_score_as_the_decoded_model(
    published: Cli, nudenet_catalog: Path, tmp_path: Path
) -> None:
    """NudeNet's boxes encoded by SSD's box coder against an anchors file of the model, and
    its scores behind a background column (``ssd_grid``), declared ``layout: ssd`` (issue 50):
    decoded, they score as NudeNet's own output does in the direct computation."""
    path = variant(nudenet_catalog, tmp_path, MODEL_YAML, "1.0.6", change=_ssd)
    data = yaml.safe_load(path.read_text())
    (entry,) = [f for f in data["files"] if f["path"] == nudenet.ONNX_FILE]
    onnx_file = path.parent / entry["source"].removeprefix("file:")
    onnx_file.write_bytes(ssd_grid.wrap(onnx_file.read_bytes(), output=nudenet.OUTPUT))
    digest, size = hash_file(onnx_file)
    entry.update(sha256=digest.hex, size=size)
    np.save(path.parent / "anchors.npy", ssd_grid.anchors(), allow_pickle=False)
    digest, size = hash_file(path.parent / "anchors.npy")
    data["files"].append({"path": "anchors.npy", "sha256": digest.hex, "size": size})
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    done = published("publish", str(path))
    assert done.code == 0, done.err
    code, err = lock_and_run(published, tmp_path, f"{nudenet.NAME}@1.0.6", f"{nudenet.DATASET}@1")
    assert code == 0, err
    run = latest_run(published)
    assert run["status"] == "succeeded", run["error"]
    direct = coco_metrics(json.loads(GROUND_TRUTH.read_text()), run_on_all())
    assert {k: run[k] for k in direct} == pytest.approx(direct, abs=1e-6)
    assert run["map50"] == pytest.approx(1.0)
