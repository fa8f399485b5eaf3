"""``pinbench import-mlmodelscope``: MLModelScope model manifests as pinbench model manifests.

The seventeen fixtures are real MLModelScope manifests, read as they are from
``tests/data/mlmodelscope`` (a byte-for-byte copy of shared/fixtures/mlmodelscope; sources in
its SOURCES.md): each one either imports, with its
key facts checked here, or is refused naming the exact field and why. Then the rules one by one
(versions read as text, Masterminds/semver 1.4.2 constraints as npm ranges, files, steps,
containers, attributes), each refusal with its reason, and the command itself.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.registry.manifest import load_manifest, load_manifest_text
from pinbench.registry.manifest_parts import Scalar
from pinbench.registry.mlmodelscope import (
    Imported,
    MLModelScopeError,
    image_reference,
    import_file,
    import_text,
    npm_range,
    semver_text,
)
from pinbench.registry.ranges import Range
from pinbench.registry.supported import UndeclaredOutput, check_supported
from pinbench.registry.versions import Version, parse_version
from pinbench.worker.predictors import FrameworkUnavailable, predictor_class
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles
from tests.helpers import Cli

FIXTURES = Path(__file__).parent / "data" / "mlmodelscope"
"""A byte-for-byte copy of the team's shared/fixtures/mlmodelscope (checked below against the
git blob ids in its SOURCES.md), so the tests run from any checkout."""
S3 = "https://s3.amazonaws.com/store.carml.org"
S3_HTTP = "http://s3.amazonaws.com/store.carml.org"
SYNSET = ("synset.txt", f"{S3}/synsets/imagenet/synset.txt", "4d234b5833aca44928065a180db3016a")
SYNSET_HTTP = (SYNSET[0], f"{S3_HTTP}/synsets/imagenet/synset.txt", SYNSET[2])
TF_IMAGE = "docker.io/raiproject/carml-tensorflow"
TORCHVISION_NORMALIZE = {"mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}
TF_MODELS = f"{S3}/models/tensorflow/models"
COCO_LABELS = (
    "coco_labels_paper.txt",
    f"{S3}/synsets//coco/coco_labels_paper.txt",
    "4418c85d01e6c82ff6849b8239759438",
)
NORMALIZED_YXYX = {"layout": "separate", "box_format": "yxyx", "normalized": True}
"""TensorFlow's Object Detection API boxes (decision 96), and Caffe's as MLModelScope reads them."""
TF_IMAGE_TENSOR = {
    "name": "image_tensor",
    "type": "image",
    "element_type": "uint8",
    "steps": [{"decode": {"color_mode": "rgb"}}],
}


def decode(color: str) -> dict[str, Any]:
    return {"decode": {"color_mode": color}}


def resize(size: int) -> dict[str, Any]:
    return {"resize": {"size": [size, size]}}


NCHW = {"layout": {"to": "NCHW"}}


# -- the seventeen fixtures ---------------------------------------------------------------------


@dataclass(frozen=True)
class Imports:
    """What an imported fixture must become."""

    why: str
    name: str
    version: str
    framework: tuple[str, str]
    """pinbench name and npm range."""
    format: str
    files: list[tuple[str, str, str | None]]
    """(path, source, md5) in order: graph, weights, labels."""
    input: dict[str, Any]
    output: dict[str, Any]
    attributes: dict[str, Scalar] = field(default_factory=dict)
    """A subset of the attributes."""
    tensors: list[str | int] = field(default_factory=list)
    """A detector's other outputs (scores, classes, masks), each ``type: tensor``, after
    ``output``."""


@dataclass(frozen=True)
class Refused:
    why: str
    field: str
    reason: str
    """A substring of the reason."""


CASES: dict[str, Imports | Refused] = {
    "tensorflow/MobileNet_v1_1.0_224.yml": Imports(
        why="a TF frozen graph inside a .tgz archive: the member becomes ARCHIVE#path=MEMBER",
        name="mlmodelscope/tensorflow-mobilenet-v1-1.0-224",
        version="1.0.0",
        framework=("tensorflow", "1.12.0"),
        format="tf-graphdef",
        files=[
            (
                "mobilenet_v1_1.0_224_frozen.pb",
                f"{S3}/models/tensorflow/models/mobilenet_v1_2018_08_02/mobilenet_v1_1.0_224.tgz"
                "#path=mobilenet_v1_1.0_224_frozen.pb",
                "7f564c782f0141e4e7bdc5161a6cc2f4",
            ),
            (
                "synset1.txt",
                f"{S3}/synsets/imagenet/synset1.txt",
                "6c05083991207dea5c37f2d271014fad",
            ),
        ],
        input={
            "name": "input",
            "type": "image",
            "element_type": "float32",
            "shape": [224, 224, 3],
            "steps": [
                decode("rgb"),
                resize(224),
                {"normalize": {"mean": [128.0, 128.0, 128.0], "std": [128.0]}},
            ],
        },
        output={
            "name": "MobilenetV1/Predictions/Reshape_1",
            "type": "classification",
            "labels": {"path": "synset1.txt"},
        },
        attributes={
            "top1": 70.9,
            "top5": 89.9,
            "kind": "CNN",
            "mlmodelscope.name": "MobileNet_v1_1.0_224",
            "mlmodelscope.framework.version": "1.12",
            "mlmodelscope.container.amd64.cpu": f"{TF_IMAGE}:amd64-gpu",
            "mlmodelscope.container.ppc64le.gpu": f"{TF_IMAGE}:ppc64le-gpu",
        },
    ),
    "tensorflow/MLPerf_ResNet50_v1.5.yml": Imports(
        why="base_url joined to graph_path; no mean or scale is no normalize step",
        name="mlmodelscope/tensorflow-mlperf-resnet50-v1.5",
        version="1.0.0",
        framework=("tensorflow", "1.12.0"),
        format="tf-graphdef",
        files=[
            (
                "resnet50_v1.pb",
                "https://zenodo.org/record/2535873/files/resnet50_v1.pb",
                "7b94a2da05dd30f6c0af23a46bc08886",
            ),
            (
                "synset1001.txt",
                f"{S3}/synsets/imagenet/synset1001.txt",
                "1aac07127a5d6b9b634d7e43626eef05",
            ),
        ],
        input={
            "name": "input_tensor",
            "type": "image",
            "element_type": "float32",
            "shape": [224, 224, 3],
            "steps": [decode("rgb"), resize(224)],
        },
        output={
            "name": "softmax_tensor",
            "type": "classification",
            "labels": {"path": "synset1001.txt"},
        },
        attributes={"top1": 76.16, "manifest_author": "Cheng Li"},
    ),
    "tensorflow/Inception-v3.yml": Imports(
        why="layer_name is input_layer's older name; BGR; version 3.0 read as text",
        name="mlmodelscope/tensorflow-inception",
        version="3.0.0",
        framework=("tensorflow", "1.12.0"),
        format="tf-graphdef",
        files=[
            (
                "frozen_model.pb",
                f"{S3}/models/tensorflow/models/inception_3.0/frozen_model.pb",
                "5b1b0be97ac4358b4f5c164df2c51b9f",
            ),
            (
                "synset1000.txt",
                f"{S3_HTTP}/synsets/imagenet/synset1000.txt",
                "7315c2c8bffdb680cf8c5d2a7c45c363",
            ),
        ],
        input={
            "name": "data",
            "type": "image",
            "element_type": "float32",
            "shape": [299, 299, 3],
            "steps": [
                decode("bgr"),
                resize(299),
                {"normalize": {"mean": [128.0, 128.0, 128.0], "std": [128.0]}},
            ],
        },
        output={"name": "prob", "type": "classification", "labels": {"path": "synset1000.txt"}},
        attributes={"mlmodelscope.framework.name": "Tensorflow", "mlmodelscope.version": "3.0"},
    ),
    "tensorflow/AI_Matrix_DIEN.yml": Refused(
        why="its raw inputs carry sample data by URL, which is a dataset, not part of a model",
        field="inputs[0].parameters.url",
        reason="is sample input data",
    ),
    "tensorflow/DeepLabv3_PASCAL_VOC_Train_Val.yml": Imports(
        why="max_dimension 513 with keep_aspect_ratio is a max_dimension step, no fixed shape; "
        "semanticsegment's int64 SemanticPredictions is a class per pixel",
        name="mlmodelscope/tensorflow-deeplabv3-pascal-voc-train-val",
        version="1.0.0",
        framework=("tensorflow", "1.12.0"),
        format="tf-graphdef",
        files=[
            (
                "frozen_inference_graph.pb",
                f"{TF_MODELS}/deeplabv3_pascal_trainval_2018_01_04/frozen_inference_graph.pb",
                "ab5108a6fc6824c9cda9090a19181ca6",
            ),
            (
                "pascal-voc-classes.txt",
                f"{TF_MODELS}/deeplabv3_mnv2_pascal_train_aug_2018_01_29/pascal-voc-classes.txt",
                "9ce439bcfb44c304e49a0fe1ae398f69",
            ),
        ],
        input={
            "name": "ImageTensor",
            "type": "image",
            "element_type": "uint8",
            "steps": [decode("rgb"), {"max_dimension": {"size": 513}}],
        },
        output={
            "name": "SemanticPredictions",
            "type": "segmentation",
            "segmentation": {"form": "classes"},
            "labels": {"path": "pascal-voc-classes.txt"},
        },
        attributes={"training_dataset": "PASCAL VOC 2012"},
    ),
    "tensorflow/Mask_RCNN_Inception_v2_COCO.yml": Imports(
        why="instancesegment: the boxes output reads scores, classes and box-relative masks "
        "from three tensor outputs",
        name="mlmodelscope/tensorflow-mask-rcnn-inception-v2-coco",
        version="1.0.0",
        framework=("tensorflow", "1.12.0"),
        format="tf-graphdef",
        files=[
            (
                "frozen_inference_graph.pb",
                f"{TF_MODELS}/mask_rcnn_inception_v2_coco_2018_01_28/frozen_inference_graph.pb",
                "b47e443b313a709e4c39c1caeaa3ecb3",
            ),
            COCO_LABELS,
        ],
        input=TF_IMAGE_TENSOR,
        output={
            "name": "detection_boxes",
            "type": "detection",
            "detection": NORMALIZED_YXYX
            | {
                "scores": "detection_scores",
                "classes": "detection_classes",
                "masks": "detection_masks",
                "mask_kind": "box",
            },
            "labels": {"path": "coco_labels_paper.txt"},
        },
        tensors=["detection_scores", "detection_classes", "detection_masks"],
    ),
    "tensorflow/SSD_MobileNet_v2_Quantized_300x300_COCO.yml": Imports(
        why="boundingbox: boxes (normalized yxyx) output, scores and classes tensor outputs",
        name="mlmodelscope/tensorflow-ssd-mobilenet-v2-quantized-300x300-coco",
        version="1.0.0",
        framework=("tensorflow", "1.12.0"),
        format="tf-graphdef",
        files=[
            (
                "tflite_graph.pb",
                f"{TF_MODELS}/ssd_mobilenet_v2_quantized_300x300_coco_2019_01_03/tflite_graph.pb",
                "0848844ef5afbc5328deebfb18d58509",
            ),
            COCO_LABELS,
        ],
        input=TF_IMAGE_TENSOR,
        output={
            "name": "detection_boxes",
            "type": "detection",
            "detection": NORMALIZED_YXYX
            | {"scores": "detection_scores", "classes": "detection_classes"},
            "labels": {"path": "coco_labels_paper.txt"},
        },
        tensors=["detection_scores", "detection_classes"],
        attributes={"mlmodelscope.hidden": True},
    ),
    "pytorch/TorchVision_ResNet_50.yml": Imports(
        why="TorchScript; layers by index 0; CHW with per-channel mean and scale",
        name="mlmodelscope/pytorch-torchvision-resnet-50",
        version="1.0.0",
        framework=("torch", "1.2.0"),
        format="torchscript",
        files=[
            (
                "resnet50.pt",
                f"{S3}/models/pytorch/resnet50.pt",
                "0aea66ce0fe0e27497ff1b82c0a2f925",
            ),
            SYNSET_HTTP,
        ],
        input={
            "name": 0,
            "type": "image",
            "element_type": "float32",
            "shape": [3, 224, 224],
            "steps": [
                decode("rgb"),
                resize(224),
                {"normalize": TORCHVISION_NORMALIZE},
                NCHW,
            ],
        },
        output={"name": 0, "type": "classification", "labels": {"path": "synset.txt"}},
        attributes={
            "mlmodelscope.container.amd64.cpu": "docker.io/raiproject/carml-pytorch:amd64-cpu"
        },
    ),
    "pytorch/TorchVision_VGG_1.0_16_BN.yml": Imports(
        why="no layers, layout or color mode given: MLModelScope's defaults (index 0, HWC, RGB)",
        name="mlmodelscope/pytorch-torchvision-vgg16-bn",
        version="1.0.0",
        framework=("torch", "1.0.0"),
        format="torchscript",
        files=[
            (
                "vgg16_bn.pt",
                f"{S3}/models/pytorch/vgg16_bn.pt",
                "270817ebfaddbacae65850babb1fab6e",
            ),
            SYNSET_HTTP,
        ],
        input={
            "name": 0,
            "type": "image",
            "element_type": "float32",
            "shape": [227, 227, 3],
            "steps": [decode("rgb"), resize(227), {"normalize": {"mean": [123.0, 117.0, 104.0]}}],
        },
        output={"name": 0, "type": "classification", "labels": {"path": "synset.txt"}},
    ),
    "mxnet/ResNet50_v1_int8.yml": Imports(
        why="symbol + params without checksums; probabilities_transform softmax is a step",
        name="mlmodelscope/mxnet-resnet50-v1-int8",
        version="1.0.0",
        framework=("mxnet", ">=1.1.0"),
        format="mxnet",
        files=[
            (
                "model-symbol.json",
                f"{S3_HTTP}/models/mxnet/gluoncv/resnet50_v1_in8/model-symbol.json",
                None,
            ),
            (
                "model-0000.params",
                f"{S3_HTTP}/models/mxnet/gluoncv/resnet50_v1_in8/model-0000.params",
                None,
            ),
            SYNSET_HTTP,
        ],
        input={
            "name": "data",
            "type": "image",
            "element_type": "float32",
            "shape": [3, 224, 224],
            "steps": [decode("rgb"), resize(224), {"normalize": TORCHVISION_NORMALIZE}, NCHW],
        },
        output={
            "name": 0,
            "type": "classification",
            "steps": [{"softmax": {}}],
            "labels": {"path": "synset.txt"},
        },
        attributes={"Top1": 76.86, "Top5": 93.46},
    ),
    "mxnet/Faster_RCNN_ResNet50_v1b_VOC.yml": Imports(
        why="a GluonCV detector, its layers by index: boxes are xyxy in input pixels",
        name="mlmodelscope/mxnet-faster-rcnn-resnet50-v1b-voc",
        version="1.0.0",
        framework=("mxnet", ">=1.1.0"),
        format="mxnet",
        files=[
            (
                "model-symbol.json",
                f"{S3_HTTP}/models/mxnet/gluoncv/faster_rcnn_resnet50_v1b_voc/model-symbol.json",
                None,
            ),
            (
                "model-0000.params",
                f"{S3_HTTP}/models/mxnet/gluoncv/faster_rcnn_resnet50_v1b_voc/model-0000.params",
                None,
            ),
            (
                "pascal_voc_no_background_synset.txt",
                f"{S3}/models/mxnet/gluoncv/ssd_512_resnet50_v1_voc/"
                "pascal_voc_no_background_synset.txt",
                "5ae5d62183cfb6f6d3ac109359d06a1b",
            ),
        ],
        input={
            "name": "data",
            "type": "image",
            "element_type": "float32",
            "shape": [3, 300, 400],
            "steps": [
                decode("rgb"),
                {"resize": {"size": [300, 400]}},
                {"normalize": TORCHVISION_NORMALIZE},
                NCHW,
            ],
        },
        output={
            "name": 2,
            "type": "detection",
            "detection": {
                "layout": "separate",
                "box_format": "xyxy",
                "normalized": False,
                "scores": 1,
                "classes": 0,
            },
            "labels": {"path": "pascal_voc_no_background_synset.txt"},
        },
        tensors=[1, 0],
        attributes={"IoU threshold": 0.5, "mAP": 78.3},
    ),
    "mxnet/caffenet.yml": Refused(
        why="no version: MLModelScope reads it as 'latest', which cannot be pinned",
        field="version",
        reason="is required",
    ),
    "caffe/BVLC_AlexNet.yml": Imports(
        why="prototxt + caffemodel given as URLs without a base_url",
        name="mlmodelscope/caffe-bvlc-alexnet",
        version="1.0.0",
        framework=("caffe", "1.0.0"),
        format="caffe",
        files=[
            (
                "deploy.prototxt",
                "https://raw.githubusercontent.com/BVLC/caffe/master/models/bvlc_alexnet/"
                "deploy.prototxt",
                "fdb525acaa8d3db0f87c5577901f53ee",
            ),
            (
                "bvlc_alexnet.caffemodel",
                "http://dl.caffe.berkeleyvision.org/bvlc_alexnet.caffemodel",
                "29eb495b11613825c1900382f5286963",
            ),
            SYNSET_HTTP,
        ],
        input={
            "name": 0,
            "type": "image",
            "element_type": "float32",
            "shape": [3, 227, 227],
            "steps": [
                decode("bgr"),
                resize(227),
                {"normalize": {"mean": [123.0, 117.0, 104.0]}},
                NCHW,
            ],
        },
        output={"name": 0, "type": "classification", "labels": {"path": "synset.txt"}},
    ),
    "caffe/AI_Matrix_SSD_VGG16.yml": Imports(
        why="a Caffe SSD, its layers by index: boxes as MLModelScope reads them (yxyx), "
        "normalized, with notes to check both",
        name="mlmodelscope/caffe-ai-matrix-ssd-vgg16",
        version="1.0.0",
        framework=("caffe", "1.0.0"),
        format="caffe",
        files=[
            (
                "SSD-VGG.prototxt",
                "https://zenodo.org/record/3269944/files/SSD-VGG.prototxt",
                "c68a35d3cb21a2780537a61a60ac0655",
            ),
            (
                "SSD-VGG.caffemodel",
                "https://zenodo.org/record/3269944/files/SSD-VGG.caffemodel",
                "94587f4ddfa49a23b6dc038aef66e2bb",
            ),
            (
                "pascal_voc_labels.txt",
                f"{S3}/synsets/pascal_voc/pascal_voc_labels.txt",
                "9ce439bcfb44c304e49a0fe1ae398f69",
            ),
        ],
        input={
            "name": 0,
            "type": "image",
            "element_type": "float32",
            "shape": [3, 227, 227],
            "steps": [
                decode("bgr"),
                resize(227),
                {"normalize": {"mean": [123.0, 117.0, 104.0]}},
                NCHW,
            ],
        },
        output={
            "name": 1,
            "type": "detection",
            "detection": NORMALIZED_YXYX | {"scores": 0, "classes": 2},
            "labels": {"path": "pascal_voc_labels.txt"},
        },
        tensors=[0, 2],
    ),
    "caffe2/BVLC_AlexNet_Caffe2.yml": Imports(
        why="predict_net.pb (graph) + init_net.pb (weights) under Caffe2",
        name="mlmodelscope/caffe2-bvlc-alexnet-caffe2",
        version="1.0.0",
        framework=("caffe2", "0.8.1"),
        format="caffe2",
        files=[
            (
                "predict_net.pb",
                f"{S3}/models/caffe2/bvlc_alexnet/bvlc_alexnet_caffe2/predict_net.pb",
                "e1414dd8979f06db0374794a6c24776f",
            ),
            (
                "init_net.pb",
                f"{S3}/models/caffe2/bvlc_alexnet/bvlc_alexnet_caffe2/init_net.pb",
                "85eddd88e17abaac31dba6408d1953bb",
            ),
            SYNSET,
        ],
        input={
            "name": 0,
            "type": "image",
            "element_type": "float32",
            "shape": [224, 224, 3],
            "steps": [decode("rgb"), resize(224)],
        },
        output={"name": 0, "type": "classification", "labels": {"path": "synset.txt"}},
    ),
    "caffe2/ShuffleNet_v1.1_ONNX.yml": Imports(
        why="an ONNX file run by Caffe2: format onnx, framework caffe2 (not retargeted)",
        name="mlmodelscope/caffe2-shufflenet-v1.1-onnx",
        version="1.0.0",
        framework=("caffe2", "0.8.1"),
        format="onnx",
        files=[
            (
                "model.onnx",
                f"{S3}/models/onnx/shufflenet_v1.1/shufflenet_v1.1_onnx/model.onnx",
                "f3736d59a7ea54815de2cda1d8a3a6a4",
            ),
            SYNSET,
        ],
        input={
            "name": 0,
            "type": "image",
            "element_type": "float32",
            "shape": [224, 224, 3],
            "steps": [decode("rgb"), resize(224), {"normalize": {"mean": [0.0], "std": [256.0]}}],
        },
        output={"name": 0, "type": "classification", "labels": {"path": "synset.txt"}},
    ),
    "tensorrt/voc-fcn32s.yml": Imports(
        why="Caffe files under TensorRT; no checksum anywhere; hidden kept",
        name="mlmodelscope/tensorrt-fcn-32s-pascal",
        version="1.0.0",
        framework=("tensorrt", "5.0.0"),
        format="caffe",
        files=[
            (
                "val.prototxt",
                "https://raw.githubusercontent.com/shelhamer/fcn.berkeleyvision.org/master/"
                "voc-fcn32s/val.prototxt",
                None,
            ),
            (
                "fcn32s-heavy-pascal.caffemodel",
                "http://dl.caffe.berkeleyvision.org/fcn32s-heavy-pascal.caffemodel",
                None,
            ),
            (
                "gistfile1.txt",
                "https://gist.githubusercontent.com/anonymous/a824ba333ba92293ae80dd8d667d3911/"
                "raw/b2d1d2cada37ea14818ab7c3e229c49bb22c4535/gistfile1.txt",
                None,
            ),
        ],
        input={
            "name": 0,
            "type": "image",
            "element_type": "float32",
            "shape": [500, 500, 3],
            "steps": [
                decode("rgb"),
                resize(500),
                {"normalize": {"mean": [122.67892, 116.66877, 104.00699]}},
            ],
        },
        output={"name": 0, "type": "classification", "labels": {"path": "gistfile1.txt"}},
        attributes={"mlmodelscope.hidden": True, "mlmodelscope.name": "FCN-32s PASCAL"},
    ),
}
IMPORTS = {k: v for k, v in CASES.items() if isinstance(v, Imports)}
REFUSALS = {k: v for k, v in CASES.items() if isinstance(v, Refused)}


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_the_fixtures_are_the_published_manifests_byte_for_byte() -> None:
    """Each copy hashes to the git blob id SOURCES.md records for it upstream."""
    rows = [
        line.split("|")
        for line in (FIXTURES / "SOURCES.md").read_text().splitlines()
        if line.startswith("| `shared/fixtures/mlmodelscope/")
    ]
    blobs = {
        r[1].strip().strip("`").removeprefix("shared/fixtures/mlmodelscope/"): r[5] for r in rows
    }
    assert len(blobs) == 17
    for rel, blob in blobs.items():
        assert _git_blob_id((FIXTURES / rel).read_bytes()) == blob.strip().strip("`"), rel


def test_every_fixture_has_a_case() -> None:
    found = {p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.yml")}
    assert found == set(CASES)


@pytest.mark.parametrize(("fixture", "case"), IMPORTS.items(), ids=list(IMPORTS))
def test_fixture_imports(fixture: str, case: Imports) -> None:
    imported = import_file(FIXTURES / fixture)
    data, manifest = imported.data, imported.manifest
    assert (manifest.name, manifest.version) == (case.name, case.version)
    assert (manifest.framework.name, manifest.framework.range) == case.framework
    assert manifest.format == case.format
    files = [(f.path, f.source, f.md5) for f in manifest.files]
    assert files == case.files
    assert all(f.sha256 is None for f in manifest.files), "sha256 is filled in at publish"
    assert data["inputs"] == [case.input]
    tensors = [{"name": name, "type": "tensor"} for name in case.tensors]
    assert data["outputs"] == [case.output, *tensors]
    assert case.attributes.items() <= manifest.attributes.items()


@pytest.mark.parametrize(("fixture", "case"), REFUSALS.items(), ids=list(REFUSALS))
def test_fixture_is_refused_naming_the_field(fixture: str, case: Refused) -> None:
    with pytest.raises(MLModelScopeError) as caught:
        import_file(FIXTURES / fixture)
    assert caught.value.field == case.field
    assert case.reason in caught.value.reason
    assert f"`{case.field}`" in str(caught.value)
    assert fixture.split("/")[-1] in str(caught.value)


@pytest.mark.parametrize("fixture", IMPORTS)
def test_imported_yaml_loads_back_as_the_same_manifest(fixture: str) -> None:
    imported = import_file(FIXTURES / fixture)
    assert load_manifest_text(imported.yaml(fixture)) == imported.manifest


@pytest.mark.parametrize(
    ("fixture", "field", "needle", "why"),
    [
        (
            "tensorflow/MobileNet_v1_1.0_224.yml",
            "container",
            "image tags, not digests",
            "tags cannot be pinned",
        ),
        (
            "tensorflow/MobileNet_v1_1.0_224.yml",
            "container.amd64.cpu",
            "names the amd64-gpu tag",
            "the fixture swaps cpu and gpu",
        ),
        (
            "tensorflow/MobileNet_v1_1.0_224.yml",
            "container.ppc64le",
            "is not a pinbench platform",
            "ppc64le is kept for reference only",
        ),
        (
            "tensorflow/MobileNet_v1_1.0_224.yml",
            "model.graph_checksum",
            "md5 of the archive member",
            "MLModelScope checks no checksum inside archives",
        ),
        (
            "tensorflow/MobileNet_v1_1.0_224.yml",
            "framework.version",
            "1.12 means 1.12.0",
            "npm would read 1.12 as 1.12.x",
        ),
        ("tensorflow/MobileNet_v1_1.0_224.yml", "format", "no predictor loads it", "tf-graphdef"),
        (
            "tensorflow/Inception-v3.yml",
            "inputs[0].parameters.layer_name",
            "read as input_layer",
            "older name",
        ),
        ("tensorrt/voc-fcn32s.yml", "model.weights_checksum", "is empty", "no digest to check"),
        ("tensorrt/voc-fcn32s.yml", "output.type", "feature read as classification", "older"),
        (
            "caffe2/ShuffleNet_v1.1_ONNX.yml",
            "framework.name",
            "an ONNX model under caffe2",
            "how to run it with ONNX Runtime instead",
        ),
        (
            "pytorch/TorchVision_VGG_1.0_16_BN.yml",
            "inputs[0].parameters.input_layer",
            "the model's first input (index 0)",
            "no layer given",
        ),
        (
            "tensorflow/DeepLabv3_PASCAL_VOC_Train_Val.yml",
            "inputs[0].parameters.max_dimension",
            "MLModelScope truncates the scaled sides",
            "a side may differ by a pixel from MLModelScope's",
        ),
        (
            "tensorflow/SSD_MobileNet_v2_Quantized_300x300_COCO.yml",
            "output.parameters.classes_layer",
            "label-map ids starting at 1",
            "the labels file must start with a placeholder",
        ),
        (
            "mxnet/Faster_RCNN_ResNet50_v1b_VOC.yml",
            "output.parameters.boxes_layer",
            "[xmin, ymin, xmax, ymax] in pixels of the model input",
            "MLModelScope's own reading swaps x and y",
        ),
        (
            "mxnet/Faster_RCNN_ResNet50_v1b_VOC.yml",
            "output.parameters.classes_layer",
            "class -1 and score -1",
            "GluonCV's padding",
        ),
        (
            "caffe/AI_Matrix_SSD_VGG16.yml",
            "output.parameters.boxes_layer",
            "the coordinate order and units are not established",
            "the three-layer prototxt was made for MLModelScope",
        ),
        (
            "caffe/AI_Matrix_SSD_VGG16.yml",
            "output.parameters.classes_layer",
            "SSD's labels start at 1",
            "the labels file must start with the background",
        ),
    ],
)
def test_notes_say_what_the_reader_should_know(
    fixture: str, field: str, needle: str, why: str
) -> None:
    notes = import_file(FIXTURES / fixture).notes
    assert any(n.field == field and needle in n.message for n in notes), notes


@pytest.mark.parametrize(
    ("framework", "fmt", "error", "needle"),
    [
        ("tensorflow", "tf-graphdef", ModelLoadError, "model tf-graphdef: TensorFlow loads"),
        ("caffe", "caffe", FrameworkUnavailable, "framework caffe is not available"),
        ("caffe2", "caffe2", FrameworkUnavailable, "framework caffe2 is not available"),
        ("caffe2", "onnx", FrameworkUnavailable, "framework caffe2 is not available"),
        ("mxnet", "mxnet", FrameworkUnavailable, "framework mxnet is not available"),
        ("tensorrt", "caffe", FrameworkUnavailable, "framework tensorrt is not available"),
    ],
)
def test_running_an_imported_model_that_no_predictor_loads_says_so(
    framework: str, fmt: str, error: type[Exception], needle: str
) -> None:
    with pytest.raises(error, match=needle):
        predictor_class(framework)().check_format(ModelFiles({}, fmt))


# -- versions: read as text, Masterminds/semver 1.4.2 meaning -----------------------------------

MINIMAL = """\
name: Tiny
framework:
  name: PyTorch
  version: {framework}
version: {version}
model:
  graph_path: https://example.org/tiny.pt
  graph_checksum: 0123456789abcdef0123456789abcdef
"""


@pytest.mark.parametrize(
    ("written", "version", "why"),
    [
        ("1.0", "1.0.0", "an unquoted float: the missing patch is 0"),
        ("1.10", "1.10.0", "as a float 1.10 would be 1.1"),
        ("1.12", "1.12.0", "as written"),
        ("3.0", "3.0.0", "a major version"),
        ("1", "1.0.0", "an int: minor and patch are 0"),
        ("0.1", "0.1.0", "major 0"),
        ("'2.1.3'", "2.1.3", "quoted, already semver"),
        ("1.0-beta", "1.0.0-beta", "a prerelease stays one"),
        ("v1.2", "1.2.0", "Masterminds accepts a leading v"),
    ],
)
def test_model_version_is_read_as_text(written: str, version: str, why: str) -> None:
    imported = import_text(MINIMAL.format(framework="1.2", version=written))
    assert imported.manifest.version == version


@pytest.mark.parametrize(
    ("written", "npm", "why"),
    [
        ("1.12", "1.12.0", "two parts: exact in 1.4.2 (a missing patch is not a wildcard)"),
        ("1.10", "1.10.0", "read as text, not the float 1.1"),
        ("1.0", "1.0.0", "exact"),
        ("0.8.1", "0.8.1", "three parts: exact"),
        ("1", ">=1.0.0 <2.0.0", "a missing minor is a wildcard: the 1.x series"),
        ("'>=1.1.0'", ">=1.1.0", "an operator passes through"),
        ("'>= 1.2, < 2.0'", ">=1.2.0 <2.0.0", "Masterminds ANDs with a comma"),
        ("'~1.2'", ">=1.2.0 <1.3.0", "tilde: the minor series"),
        ("'^0.2.3'", ">=0.2.3 <1.0.0", "caret keeps the major, even 0 (1.4.2)"),
        ("'<=1'", "<2.0.0", "major 1 and below"),
        ("'1.2 || 2'", "1.2.0 || >=2.0.0 <3.0.0", "alternatives"),
    ],
)
def test_framework_version_is_masterminds_constraint_as_npm_range(
    written: str, npm: str, why: str
) -> None:
    imported = import_text(MINIMAL.format(framework=written, version="1.0"))
    assert imported.manifest.framework.range == npm


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ("1.x", "wildcards (1.x) are not translated"),
        ("'!=1.2'", "'!=' has no npm range equivalent"),
        ("'1.0 - 2.0'", "hyphen ranges"),
        ("'<1'", "write the bound in full"),
        ("'>=1.2.0-beta'", "prerelease or build bounds"),
        ("'1.2 ||'", "empty alternative"),
        ("latest", "is not MAJOR[.MINOR[.PATCH]]"),
    ],
)
def test_framework_versions_without_an_npm_translation_are_refused(
    written: str, reason: str
) -> None:
    with pytest.raises(MLModelScopeError) as caught:
        import_text(MINIMAL.format(framework=written, version="1.0"))
    assert caught.value.field == "framework.version"
    assert reason in caught.value.reason


small = st.integers(min_value=0, max_value=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=3))
def test_version_text_becomes_the_zero_filled_semver(parts: list[int]) -> None:
    text = ".".join(map(str, parts))
    full = semver_text(text)
    assert full == ".".join(map(str, [*parts, 0, 0][:3]))
    assert str(parse_version(full)) == full


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=20), st.integers(min_value=0, max_value=120))
def test_unquoted_yaml_float_versions_keep_their_digits(major: int, minor: int) -> None:
    written = f"{major}.{minor}"
    imported = import_text(MINIMAL.format(framework=written, version=written))
    assert imported.manifest.version == f"{major}.{minor}.0"
    assert imported.manifest.framework.range == f"{major}.{minor}.0"


def masterminds_1_4_2(op: str, parts: tuple[int, ...], v: Version) -> bool:
    """Masterminds/semver 1.4.2's ``constraint.check`` for a release version (constraints.go):
    only a missing minor makes a constraint dirty; a missing patch is 0."""
    con = (*parts, 0, 0)[:3]
    minor_dirty = len(parts) == 1
    got = (v.major, v.minor, v.patch)

    def tilde() -> bool:
        if got < con:
            return False
        if con == (0, 0, 0) and not minor_dirty:
            return True
        return v.major == con[0] and (minor_dirty or v.minor == con[1])

    checks: dict[str, Callable[[], bool]] = {
        "": lambda: tilde() if minor_dirty else got == con,
        ">=": lambda: got >= con,
        ">": lambda: got > con,
        "<": lambda: v.major <= con[0] if minor_dirty else got < con,
        "<=": lambda: v.major <= con[0] if minor_dirty else got <= con,
        "~": tilde,
        "^": lambda: got >= con and v.major == con[0],
    }
    return checks[op]()


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["", ">=", ">", "<", "<=", "~", "^"]),
    st.lists(small, min_size=1, max_size=3).map(tuple),
    st.builds(Version, small, small, small),
)
def test_npm_range_allows_what_mlmodelscope_allowed(
    op: str, parts: tuple[int, ...], version: Version
) -> None:
    text = op + ".".join(map(str, parts))
    if op == "<" and len(parts) == 1:
        with pytest.raises(ValueError, match="write the bound in full"):
            npm_range(text)
        return
    assert Range.parse(npm_range(text)).allows(version) == masterminds_1_4_2(op, parts, version)


# -- the rules one by one, on a small manifest -------------------------------------------------

BASE: dict[str, Any] = {
    "name": "Tiny_Net",
    "framework": {"name": "TensorFlow", "version": "1.12"},
    "version": "1.0",
    "inputs": [
        {
            "type": "image",
            "parameters": {
                "input_layer": "input",
                "layout": "HWC",
                "color_mode": "RGB",
                "dimensions": [3, 224, 224],
                "mean": [128, 128, 128],
                "scale": 128,
            },
        }
    ],
    "output": {
        "type": "classification",
        "parameters": {
            "probabilities_layer": "prob",
            "features_url": "https://example.org/synset.txt",
            "features_checksum": "6c05083991207dea5c37f2d271014fad",
        },
    },
    "model": {
        "base_url": "https://example.org/models/",
        "graph_path": "tiny.pb",
        "graph_checksum": "7f564c782f0141e4e7bdc5161a6cc2f4",
        "is_archive": False,
    },
    "attributes": {"kind": "CNN", "top1": 70.9},
    "container": {"amd64": {"cpu": "raiproject/carml-tensorflow:amd64-cpu"}},
}

DETECTOR_LAYERS = {
    "boxes_layer": "detection_boxes",
    "probabilities_layer": "detection_scores",
    "classes_layer": "detection_classes",
}
"""A detector's layers, as TensorFlow's Object Detection API names them."""


def tiny(**changes: Any) -> str:
    """BASE as YAML with ``changes`` by dotted path (``inputs.0.type``); None removes a key."""
    data = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node: Any = data
        for step in parents:
            node = node[int(step)] if isinstance(node, list) else node[step]
        if value is None:
            del node[last]
        else:
            node[int(last) if isinstance(node, list) else last] = value
    return yaml.safe_dump(data, sort_keys=False)


def imported(**changes: Any) -> Imported:
    return import_text(tiny(**changes))


def test_the_small_manifest_imports() -> None:
    data = imported().data
    assert data["name"] == "mlmodelscope/tensorflow-tiny-net"
    assert data["files"][0] == {
        "path": "tiny.pb",
        "source": "https://example.org/models/tiny.pb",
        "md5": "7f564c782f0141e4e7bdc5161a6cc2f4",
    }


@pytest.mark.parametrize(
    ("changes", "expected", "why"),
    [
        (
            {"model__graph_path": "sub/dir/tiny.pb"},
            ("tiny.pb", "https://example.org/models/sub/dir/tiny.pb"),
            "the file name is the path's last part",
        ),
        (
            {"model__base_url": "https://example.org/models"},
            ("tiny.pb", "https://example.org/models/tiny.pb"),
            "one '/' between base and path",
        ),
        (
            {"model__base_url": None, "model__graph_path": "https://h.org/a/g.pb"},
            ("g.pb", "https://h.org/a/g.pb"),
            "a URL stands alone",
        ),
        (
            {
                "model__base_url": "https://h.org/m.tar.gz",
                "model__is_archive": True,
                "model__graph_path": "m/frozen.pb",
            },
            ("frozen.pb", "https://h.org/m.tar.gz#path=m/frozen.pb"),
            "a member of an archive",
        ),
    ],
)
def test_model_paths_become_sources(
    changes: dict[str, Any], expected: tuple[str, str], why: str
) -> None:
    first = imported(**changes).manifest.files[0]
    assert (first.path, first.source) == expected


@pytest.mark.parametrize(
    ("changes", "steps", "shape", "why"),
    [
        (
            {},
            [
                decode("rgb"),
                resize(224),
                {"normalize": {"mean": [128.0, 128.0, 128.0], "std": [128.0]}},
            ],
            [224, 224, 3],
            "(x - mean) / scale is pinbench's (x - mean) / std",
        ),
        (
            {"inputs__0__parameters__scale": [58.4, 57.1, 57.4]},
            [
                decode("rgb"),
                resize(224),
                {"normalize": {"mean": [128.0, 128.0, 128.0], "std": [58.4, 57.1, 57.4]}},
            ],
            [224, 224, 3],
            "a scale per channel",
        ),
        (
            {"inputs__0__parameters__mean": 117, "inputs__0__parameters__scale": None},
            [decode("rgb"), resize(224), {"normalize": {"mean": [117.0]}}],
            [224, 224, 3],
            "one mean for all channels",
        ),
        (
            {"inputs__0__parameters__mean": None, "inputs__0__parameters__scale": None},
            [decode("rgb"), resize(224)],
            [224, 224, 3],
            "mean 0 and scale 1 is no step",
        ),
        (
            {
                "inputs__0__parameters__layout": "CHW",
                "inputs__0__parameters__color_mode": "BGR",
                "inputs__0__parameters__mean": None,
                "inputs__0__parameters__scale": None,
            },
            [decode("bgr"), resize(224), NCHW],
            [3, 224, 224],
            "CHW: a layout step, the shape C, H, W",
        ),
        (
            {
                "inputs__0__parameters__dimensions": [3, 300, 400],
                "inputs__0__parameters__mean": None,
                "inputs__0__parameters__scale": None,
            },
            [decode("rgb"), {"resize": {"size": [300, 400]}}],
            [300, 400, 3],
            "dimensions are C, H, W",
        ),
        (
            {
                "inputs__0__parameters__dimensions": [224],
                "inputs__0__parameters__mean": None,
                "inputs__0__parameters__scale": None,
            },
            [decode("rgb"), resize(224)],
            [224, 224, 224],
            "one dimension stands for C, H and W (MLModelScope)",
        ),
        (
            {"inputs__0__parameters": {"input_layer": "x"}},
            [decode("rgb")],
            None,
            "no dimensions: no resize, no shape",
        ),
        (
            {
                "inputs__0__parameters": {
                    "input_layer": "x",
                    "max_dimension": 513,
                    "keep_aspect_ratio": True,
                }
            },
            [decode("rgb"), {"max_dimension": {"size": 513}}],
            None,
            "the longer side to 513, aspect kept (rai-project/image resize.go:44-46)",
        ),
        (
            {"inputs__0__parameters__keep_aspect_ratio": True},
            [
                decode("rgb"),
                resize(224),
                {"normalize": {"mean": [128.0, 128.0, 128.0], "std": [128.0]}},
            ],
            [224, 224, 3],
            "keep_aspect_ratio alone changes nothing in MLModelScope's resize: left out",
        ),
    ],
)
def test_image_parameters_become_typed_steps(
    changes: dict[str, Any], steps: list[dict[str, Any]], shape: list[int] | None, why: str
) -> None:
    spec = imported(**changes).data["inputs"][0]
    assert (spec["steps"], spec.get("shape")) == (steps, shape)


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"name": None}, "name", "is required"),
        ({"version": None}, "version", "is required"),
        ({"framework": None}, "framework", "is required"),
        ({"framework__name": "CNTK"}, "framework.name", "'CNTK' is not a framework pinbench maps"),
        ({"model": None}, "model", "is required"),
        ({"model__graph_path": None}, "model.graph_path", "is required (or model.weights_path)"),
        (
            {"model__graph_path": "tiny.h5"},
            "model.graph_path",
            "names a .h5 graph, which is no pinbench format under tensorflow",
        ),
        ({"model__graph_checksum": "not-an-md5"}, "model.graph_checksum", "is not an md5 digest"),
        ({"model__base_url": None}, "model.graph_path", "is not a URL and model.base_url is empty"),
        ({"model__base_url": "ftp://example.org/"}, "model.base_url", "must be an http(s) URL"),
        (
            {"model__is_archive": True, "model__graph_path": "../escape.pb"},
            "model.graph_path",
            "must name a file inside the archive",
        ),
        ({"model__is_archive": "yes please"}, "model.is_archive", "must be true or false"),
        (
            {
                "model__graph_path": "synset.txt.pb",
                "output__parameters__features_url": "https://example.org/synset.txt.pb",
            },
            "output.parameters.features_url",
            "names a file 'synset.txt.pb'",
        ),
        (
            {"before_preprocess": "x = x / 255"},
            "before_preprocess",
            "is not a field pinbench imports",
        ),
        ({"inputs__0__type": "audio"}, "inputs[0].type", "'audio' is not an input type"),
        (
            {"inputs__0__parameters__dimensions": [1, 3, 224, 224]},
            "inputs[0].parameters.dimensions",
            "has 4 values: MLModelScope takes 1 or 3 (C, H, W), without the batch size",
        ),
        (
            {"inputs__0__parameters__dimensions": [3, 0, 224]},
            "inputs[0].parameters.dimensions",
            "must be positive whole numbers",
        ),
        (
            {"inputs__0__parameters__mean": [1, 2]},
            "inputs[0].parameters.mean",
            "has 2 values for 3 channels",
        ),
        ({"inputs__0__parameters__scale": 0}, "inputs[0].parameters.scale", "must not be 0"),
        (
            {"inputs__0__parameters__mean": "imagenet"},
            "inputs[0].parameters.mean",
            "must be a number or one number per channel",
        ),
        (
            {"inputs__0__parameters__layout": "NHWC"},
            "inputs[0].parameters.layout",
            "'NHWC' is not one of HWC, CHW",
        ),
        (
            {"inputs__0__parameters__color_mode": "GRAY"},
            "inputs[0].parameters.color_mode",
            "'GRAY' is not one of RGB, BGR",
        ),
        (
            {"inputs__0__parameters__element_type": "complex64"},
            "inputs[0].parameters.element_type",
            "'complex64' is not one of",
        ),
        (
            {"inputs__0__parameters": {"max_dimension": 513}},
            "inputs[0].parameters.max_dimension",
            "without keep_aspect_ratio: true, MLModelScope raises each side to at least it",
        ),
        (
            {"inputs__0__parameters__max_dimension": 513},
            "inputs[0].parameters.max_dimension",
            "without keep_aspect_ratio: true",
        ),
        (
            {
                "inputs__0__parameters__max_dimension": 513,
                "inputs__0__parameters__keep_aspect_ratio": True,
            },
            "inputs[0].parameters.max_dimension",
            "with dimensions: MLModelScope's resize then ignores dimensions",
        ),
        (
            {"inputs__0__parameters": {"max_dimension": 0, "keep_aspect_ratio": True}},
            "inputs[0].parameters.max_dimension",
            "must be positive whole numbers",
        ),
        (
            {"inputs__0__parameters__input_layer": -1},
            "inputs[0].parameters.input_layer",
            "must be an index >= 0",
        ),
        (
            {"inputs__0__parameters__mean_file": "mean.binaryproto"},
            "inputs[0].parameters.mean_file",
            "is not a field pinbench imports",
        ),
        (
            {"output__type": "instancesegment"},
            "output.parameters.boxes_layer",
            "is required: the layer of the boxes, for a 'instancesegment' output",
        ),
        (
            {
                "output": {
                    "type": "boundingbox",
                    "parameters": DETECTOR_LAYERS | {"masks_layer": "m"},
                }
            },
            "output.parameters.masks_layer",
            "is not a field pinbench imports",
        ),
        ({"output__type": "audio"}, "output.type", "'audio' is not an MLModelScope output type"),
        (
            {"output__parameters__probabilities_transform": "sigmoid"},
            "output.parameters.probabilities_transform",
            "'sigmoid' is not a transform",
        ),
        (
            {"output__parameters__boxes_layer": "boxes"},
            "output.parameters.boxes_layer",
            "is not a field pinbench imports",
        ),
        (
            {"attributes__layers": [1, 2]},
            "attributes.layers",
            "is a list: pinbench attributes are scalars",
        ),
        (
            {"attributes__mlmodelscope.name": "x"},
            "attributes.mlmodelscope.name",
            "uses the prefix 'mlmodelscope.'",
        ),
        (
            {"container__amd64__cpu": "Not A Reference"},
            "container.amd64.cpu",
            "is not an image reference",
        ),
        ({"references": "https://example.org"}, "references", "must be a list"),
    ],
)
def test_refusals_name_the_field_and_why(changes: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(MLModelScopeError) as caught:
        imported(**changes)
    assert caught.value.field == field
    assert reason in caught.value.reason


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name: [unclosed", "malformed YAML"),
        ("- a list\n- at the top\n", "expected a mapping at the top"),
    ],
)
def test_a_document_that_is_no_manifest_is_refused(text: str, reason: str) -> None:
    with pytest.raises(MLModelScopeError, match=re.escape(reason)) as caught:
        import_text(text)
    assert caught.value.field == ""


@pytest.mark.parametrize(
    ("fixture", "line", "field"),
    [
        ("tensorflow/MobileNet_v1_1.0_224.yml", r"name: MobileNet", "name"),
        ("tensorflow/MobileNet_v1_1.0_224.yml", r"version: 1\.0 ", "version"),
        ("tensorflow/MobileNet_v1_1.0_224.yml", r"  name: TensorFlow", "framework.name"),
        ("tensorflow/MobileNet_v1_1.0_224.yml", r"  version: 1\.12", "framework.version"),
        ("tensorflow/MobileNet_v1_1.0_224.yml", r"  graph_path:", "model.graph_path"),
        ("tensorflow/MLPerf_ResNet50_v1.5.yml", r"  type: classification", "output.type"),
        ("pytorch/TorchVision_ResNet_50.yml", r"    graph_path:", "model.graph_path"),
    ],
)
def test_a_fixture_missing_a_required_field_is_refused_naming_it(
    tmp_path: Path, fixture: str, line: str, field: str
) -> None:
    copy_path = tmp_path / Path(fixture).name
    copy_path.write_text(_without_line(FIXTURES / fixture, line))
    with pytest.raises(MLModelScopeError, match="is required") as caught:
        import_file(copy_path)
    assert caught.value.field == field


def _without_line(path: Path, pattern: str) -> str:
    lines = path.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not re.match(pattern, ln)]
    assert len(kept) == len(lines) - 1, f"{pattern!r} must match one line of {path.name}"
    return "".join(kept)


@pytest.mark.parametrize(
    ("text", "reference", "why"),
    [
        (
            "raiproject/carml-tensorflow:amd64-cpu",
            "docker.io/raiproject/carml-tensorflow:amd64-cpu",
            "Docker Hub by default",
        ),
        (
            "ubuntu",
            "docker.io/library/ubuntu:latest",
            "official images are under library/; no tag is latest",
        ),
        (
            "localhost:5000/pinbench/onnxruntime:1",
            "localhost:5000/pinbench/onnxruntime:1",
            "a registry with a port",
        ),
        (
            "ghcr.io/org/img@sha256:" + "a" * 64,
            "ghcr.io/org/img@sha256:" + "a" * 64,
            "a digest, no tag",
        ),
    ],
)
def test_image_references_are_written_in_full(text: str, reference: str, why: str) -> None:
    assert image_reference(text) == reference


@pytest.mark.parametrize("text", ["Raiproject/X:1", "a/b:", "a/b@sha256:12", "a//b"])
def test_malformed_image_references_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not an image"):
        image_reference(text)


# -- detectors and segmenters: boundingbox, instancesegment, semanticsegment -------------------

FRAMEWORK_MODELS: dict[str, dict[str, Any]] = {
    "TensorFlow": {"graph_path": "tiny.pb"},
    "MXNet": {"graph_path": "model-symbol.json", "weights_path": "model-0000.params"},
    "Caffe": {"graph_path": "tiny.prototxt", "weights_path": "tiny.caffemodel"},
    "PyTorch": {"graph_path": "tiny.pt"},
}
MASKS = {"masks_layer": "detection_masks"}
TINY_PT = {"base_url": "https://example.org/models/", "graph_path": "tiny.pt"}
FIVE = [
    "tensorflow/SSD_MobileNet_v2_Quantized_300x300_COCO.yml",
    "tensorflow/Mask_RCNN_Inception_v2_COCO.yml",
    "tensorflow/DeepLabv3_PASCAL_VOC_Train_Val.yml",
    "mxnet/Faster_RCNN_ResNet50_v1b_VOC.yml",
    "caffe/AI_Matrix_SSD_VGG16.yml",
]
"""The fixtures refused until pinbench had detection, instance masks and max_dimension."""


def detector(
    kind: str = "boundingbox",
    framework: str = "TensorFlow",
    changes: dict[str, Any] | None = None,
) -> str:
    """BASE with a ``kind`` output of DETECTOR_LAYERS (``changes`` to them; None removes)."""
    params: dict[str, Any] = DETECTOR_LAYERS | (MASKS if kind == "instancesegment" else {})
    params = {k: v for k, v in (params | (changes or {})).items() if v is not None}
    model = {"base_url": "https://example.org/models/", **FRAMEWORK_MODELS[framework]}
    return tiny(
        output={"type": kind, "parameters": params | {"features_url": "https://x.org/l.txt"}},
        framework={"name": framework, "version": "1.0"},
        model=model,
    )


@pytest.mark.parametrize("fixture", FIVE)
def test_imported_detectors_and_segmenters_pass_the_publish_checks(fixture: str) -> None:
    """What publishing checks beyond the schema (files' sha256 are filled in at publish, not
    checked here): every output a detection section names is declared as a tensor, a detection
    output has labels, a segmentation output says how it is read."""
    check_supported(import_file(FIXTURES / fixture).manifest)


def test_a_detector_without_its_tensor_outputs_would_not_publish() -> None:
    """The tensor outputs are what the publish check needs: without them it refuses."""
    imported = import_file(FIXTURES / "tensorflow/Mask_RCNN_Inception_v2_COCO.yml")
    boxes_only = msgspec.structs.replace(imported.manifest, outputs=imported.manifest.outputs[:1])
    with pytest.raises(UndeclaredOutput) as caught:
        check_supported(boxes_only)
    assert caught.value.named == "detection_scores"


@pytest.mark.parametrize(
    ("kind", "missing"),
    [
        ("boundingbox", "boxes_layer"),
        ("boundingbox", "probabilities_layer"),
        ("boundingbox", "classes_layer"),
        ("instancesegment", "masks_layer"),
        ("instancesegment", "classes_layer"),
    ],
)
def test_a_detector_missing_a_layer_is_refused_naming_it(kind: str, missing: str) -> None:
    with pytest.raises(MLModelScopeError) as caught:
        import_text(detector(kind, changes={missing: None}))
    assert caught.value.field == f"output.parameters.{missing}"
    assert caught.value.reason.startswith("is required: the layer of")
    assert f"`output.parameters.{missing}`" in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        (
            {"classes_layer": "detection_scores"},
            "output.parameters.classes_layer",
            "names layer 'detection_scores', as probabilities_layer does",
        ),
        ({"boxes_layer": -1}, "output.parameters.boxes_layer", "must be an index >= 0"),
        ({"boxes_layer": True}, "output.parameters.boxes_layer", "must be a layer name or index"),
    ],
)
def test_detector_layers_are_checked(changes: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(MLModelScopeError) as caught:
        import_text(detector(changes=changes))
    assert (caught.value.field, reason in caught.value.reason) == (field, True)


@pytest.mark.parametrize(
    ("framework", "box_format", "normalized", "why"),
    [
        ("TensorFlow", "yxyx", True, "Object Detection API: normalized ymin, xmin, ymax, xmax"),
        ("MXNet", "xyxy", False, "GluonCV: xmin, ymin, xmax, ymax in input pixels"),
        ("Caffe", "yxyx", True, "as dlframework reads it, with a note to check"),
    ],
)
def test_box_conventions_are_the_frameworks(
    framework: str, box_format: str, normalized: bool, why: str
) -> None:
    section = import_text(detector(framework=framework)).data["outputs"][0]["detection"]
    assert (section["box_format"], section["normalized"]) == (box_format, normalized)


def test_instance_masks_cover_their_boxes() -> None:
    outputs = import_text(detector("instancesegment")).data["outputs"]
    expected = {"masks": "detection_masks", "mask_kind": "box"}
    assert expected.items() <= outputs[0]["detection"].items()
    assert outputs[-1] == {"name": "detection_masks", "type": "tensor"}


@pytest.mark.parametrize(
    ("kind", "framework", "reason"),
    [
        ("boundingbox", "PyTorch", "'boundingbox' under torch: the order and units"),
        ("instancesegment", "MXNet", "'instancesegment' under mxnet: what its masks cover"),
    ],
)
def test_detectors_of_unknown_conventions_are_refused(
    kind: str, framework: str, reason: str
) -> None:
    with pytest.raises(MLModelScopeError) as caught:
        import_text(detector(kind, framework=framework))
    assert caught.value.field == "output.type"
    assert reason in caught.value.reason


def test_keep_aspect_ratio_alone_is_left_out_with_a_note() -> None:
    notes = imported(inputs__0__parameters__keep_aspect_ratio=True).notes
    field = "inputs[0].parameters.keep_aspect_ratio"
    assert any(
        n.field == field and "without max_dimension changes nothing" in n.message for n in notes
    )


def test_a_semantic_segment_is_a_class_per_pixel() -> None:
    output = {"type": "semanticsegment", "parameters": {"masks_layer": "SemanticPredictions"}}
    data = imported(output=output).data["outputs"]
    assert data == [
        {"name": "SemanticPredictions", "type": "segmentation", "segmentation": {"form": "classes"}}
    ]


def test_a_semantic_segment_outside_tensorflow_says_to_check_its_form() -> None:
    output = {"type": "semanticsegment", "parameters": {"masks_layer": 0}}
    notes = import_text(
        tiny(output=output, framework={"name": "PyTorch", "version": "1.0"}, model=TINY_PT)
    ).notes
    assert any(n.field == "output.type" and "then form: logits" in n.message for n in notes)


# -- the command ----------------------------------------------------------------------------------

MOBILENET = FIXTURES / "tensorflow/MobileNet_v1_1.0_224.yml"


def test_cli_writes_a_manifest_that_loads(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "mobilenet.yaml"
    result = cli("import-mlmodelscope", str(MOBILENET), "-o", str(out))
    assert result.code == 0, result.err
    assert result.out.startswith(f"wrote {out}: model/mlmodelscope/tensorflow-mobilenet-v1-1.0-224")
    assert "image tags, not digests" in result.err
    assert load_manifest(out) == import_file(MOBILENET).manifest
    assert not (tmp_path / "home").exists(), "importing publishes nothing"


def test_cli_prints_the_manifest_without_output(cli: Cli) -> None:
    result = cli("import-mlmodelscope", str(MOBILENET))
    assert result.code == 0, result.err
    assert load_manifest_text(result.out) == import_file(MOBILENET).manifest


def test_cli_json_has_the_manifest_and_the_notes(cli: Cli) -> None:
    result = cli("import-mlmodelscope", str(MOBILENET), "--json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert document["manifest"]["name"] == "mlmodelscope/tensorflow-mobilenet-v1-1.0-224"
    assert document["output"] is None
    assert {"field", "message"} == set(document["notes"][0])


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        (FIXTURES / "tensorflow/AI_Matrix_DIEN.yml", "`inputs[0].parameters.url` is sample"),
        (FIXTURES / "mxnet/caffenet.yml", "`version` is required"),
    ],
)
def test_cli_refusal_exits_1_and_writes_nothing(
    cli: Cli, tmp_path: Path, source: Path, needle: str
) -> None:
    out = tmp_path / "refused.yaml"
    result = cli("import-mlmodelscope", str(source), "-o", str(out))
    assert result.code == 1
    assert needle in result.err
    assert not out.exists()


def test_cli_refuses_a_copy_missing_a_required_field(cli: Cli, tmp_path: Path) -> None:
    copy_path = tmp_path / "mobilenet.yml"
    copy_path.write_text(_without_line(MOBILENET, r"  graph_path:"))
    out = tmp_path / "out.yaml"
    result = cli("import-mlmodelscope", str(copy_path), "-o", str(out))
    assert (result.code, "`model.graph_path` is required" in result.err) == (1, True)
    assert not out.exists()


def test_cli_unreadable_file_is_a_user_error(cli: Cli, tmp_path: Path) -> None:
    result = cli("import-mlmodelscope", str(tmp_path / "absent.yml"))
    assert result.code == 1
    assert "cannot read" in result.err
