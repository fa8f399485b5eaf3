"""Descriptions of every manifest field, injected into the JSON Schemas ``json_schemas`` gives.

msgspec 0.22 turns a struct's docstring into its schema's ``description`` but not an attribute's
docstring; annotating the fields (``Annotated[..., Meta(description=...)]``) would change their
types, so the descriptions live here, keyed by struct name (as in the schema's ``$defs``) and
field name, and ``describe`` puts them in. ``undescribed`` lists what still lacks one: the
tests require it to be empty, so a field added to a struct without a description here fails
them. Each text says what the code does with the field: units, what a default means, what is
refused.
"""

from __future__ import annotations

import inspect
from typing import Any

from pinbench.registry.schema_docs_lite import (
    INPUT_QUANTIZATION,
    OUTPUT_QUANTIZATION,
    QUANTIZATION_DOCS,
)
from pinbench.registry.schema_docs_more import (
    DETECTION_HEAD_FIELDS,
    HEAD_DOCS,
    READ_BYTES_DOCS,
    READ_BYTES_STEP,
    RESIZE_FIELDS,
)
from pinbench.registry.schema_docs_ports import PORT_DOCS
from pinbench.registry.schema_docs_rows import INPUT_LENGTHS, OUTPUT_VIEWS, ROW_DOCS, ROW_STEPS

_VERSION = (
    "The artifact's version: strict semver MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD] (no 'v' "
    "prefix, no partial version, no leading zeros). Quote it in YAML ('1.0.0'). Together with "
    "kind and name it identifies the artifact; a published version is immutable."
)
_RANGE = (
    "An npm-style version range with node-semver's semantics (^1.2, ~1.2.3, 1.x, "
    "'>=1.2 <2 || 3.x', hyphen ranges); '*' (the default) allows any version. Quote it in "
    "YAML. A range is at most 1024 characters."
)
_NAME = (
    "A lowercase artifact name, NAME or NAMESPACE/NAME: letters, digits, '.', '_' and '-', "
    "starting with a letter or digit; at most 200 characters (a namespace at most 100)."
)


def _common(kind: str) -> dict[str, str]:
    """The fields every kind has."""
    return {
        "kind": f"The manifest's kind; must be {kind!r} for this schema.",
        "name": _NAME,
        "version": _VERSION,
        "description": "Free text shown in listings and on the artifact's page; '' when left out.",
        "license": "The license of the artifact's files (an SPDX identifier such as "
        "'Apache-2.0' is expected, not checked); left out, none is stated.",
        "references": "Links or citations (papers, upstream pages) shown with the artifact; "
        "recorded as text, never fetched.",
        "attributes": "Free-form scalar facts (string, integer, number or boolean) kept with "
        "the artifact and shown with it; no nested values. pinbench does not act on them.",
    }


FIELD_DOCS: dict[str, dict[str, str]] = {
    # ---------------------------------------------------------------- shared parts
    "FileEntry": {
        "path": "The file's path inside the artifact: relative POSIX, normalised, no '..', "
        "'.' or empty part, no backslash or NUL, at most 1000 characters; each path may be "
        "listed once.",
        "sha256": "The file's sha256, 64 lowercase hex digits, checked against the bytes at "
        "publish and whenever the file is used. Required, except for a file with a remote "
        "source (https://, http://, hf://, dvc://): publishing fetches it, computes the "
        "sha256 and stores the manifest with it filled in.",
        "size": "The file's size in bytes (>= 0); when given, publishing refuses bytes of "
        "another size. Left out, it is not checked.",
        "source": "Where the bytes come from: 'file:REL' (relative to the manifest) or a URI "
        "(https://, http://, hf://ORG/REPO@REV/PATH, dvc://REPO@REV/PATH), fetched and "
        "pinned once at publish. Left out, the file at 'path' beside the manifest.",
        "md5": "A legacy digest (MLModelScope manifests, DVC), 32 lowercase hex digits: "
        "checked when the bytes are fetched and kept beside the sha256, never a substitute "
        "for it. Left out of the stored manifest while unset.",
    },
    "Constraint": {
        "name": "The other artifact's name. " + _NAME,
        "range": "The versions of it that are allowed. " + _RANGE,
    },
    "Platform": {
        "arch": "The CPU architecture: 'amd64' (the default) or 'arm64'.",
        "device": "The accelerator the environment runs on: 'cpu' (the default), 'cuda' or 'rocm'.",
    },
    **PORT_DOCS,
    **HEAD_DOCS,
    **READ_BYTES_DOCS,
    "Detection": PORT_DOCS["Detection"] | DETECTION_HEAD_FIELDS,
    "InputStep": PORT_DOCS["InputStep"] | READ_BYTES_STEP | ROW_STEPS,
    **ROW_DOCS,
    "Resize": PORT_DOCS["Resize"] | RESIZE_FIELDS,
    **QUANTIZATION_DOCS,
    "Input": PORT_DOCS["Input"] | INPUT_QUANTIZATION | INPUT_LENGTHS,
    "Output": PORT_DOCS["Output"] | OUTPUT_QUANTIZATION | OUTPUT_VIEWS,
    # ---------------------------------------------------------------- the four kinds
    "ModelManifest": {
        **_common("model"),
        "framework": "The framework artifact that runs the model: its name and allowed "
        "versions, resolved when a benchmark is locked.",
        "format": "The serialisation of the model files. The predictors load onnx, "
        "torchscript, torch-export, safetensors, torch-pickle, torch-state-dict (weights "
        "built by the model's own `builder`), savedmodel, keras, keras-h5 "
        "(a Keras 2 HDF5 file, .h5/.hdf5), tflite (TensorFlow Lite) and tf-graphdef; caffe, "
        "caffe2, mxnet and the like come from MLModelScope manifests "
        "(import-mlmodelscope): described and published, but a run stops with an error "
        "naming the framework or the format.",
        "files": "The model's files with their sha256 (at least one, each path once); for "
        "safetensors exactly one .safetensors weights file besides any labels file.",
        "architecture": "For safetensors weights: the architecture pinbench builds and loads "
        "the weights into (one it knows, e.g. 'resnet50'); required for that format.",
        "trusted": "Allow unpickling (format torch-pickle), which can run code: the run must "
        "also be given --allow-pickle. false by default; never implied.",
        "inputs": "The model inputs fed, in order. Empty (the default): the model must have "
        "exactly one input, which is used.",
        "outputs": "The model outputs read, in order. Empty (the default): all of them.",
        "trained_by": "The training run these weights come from (written by `run "
        "--publish-as`); publishing checks it against the run this registry recorded and "
        "refuses a claim that does not hold. Left out of the stored manifest while unset.",
        "preprocess": "Python that makes one sample into the inputs fed from the samples: "
        "prepare(sample, files) -> {input name: numpy array} (docs/processing.md). Such "
        "inputs declare no steps. Never run at manifest, publish, lock or verify; a run needs "
        "--allow-code (a server, `serve --allow-code`). Left out of the stored manifest while "
        "unset.",
        "postprocess": "Python that makes one prediction's raw outputs (every output of the "
        "model by its own name) into the declared outputs: finish(outputs, files) -> {output "
        "name: numpy array}, timed apart (postprocess_latency_*_ns). Consent as for "
        "preprocess. Left out of the stored manifest while unset.",
        "builder": "For format torch-state-dict (required there, refused elsewhere): the "
        "Python function that builds the torch.nn.Module its weights load into, "
        "build(files) -> module; the weights are read with torch.load(weights_only=True) and "
        "loaded with load_state_dict(strict=True). Consent as for preprocess. Left out of the "
        "stored manifest while unset.",
        "requirements": "Packages the model's own code (builder, preprocess, postprocess) "
        "imports beyond the framework's environment, each name==version with the sha256 of its "
        "wheel; the venv runner installs them beside the framework's after reading each wheel "
        "(refused: a .pth, sitecustomize, .data, a name the framework's wheels install). "
        "Refused without code of its own, or naming a package the framework pins. Left out of "
        "the stored manifest while unset.",
    },
    "Builder": {
        "function": "The name of the function to call, build(files) -> torch.nn.Module.",
        "file": "A .py file among the model's files (its sha256 pins it); exactly one of file "
        "and code.",
        "code": "The Python source itself, inline (at most 65536 characters; hashed with the "
        "manifest); exactly one of file and code.",
        "state_dict_key": "For a checkpoint dict (weights beside a step, an optimizer's state): "
        "the key whose value is the state dict, e.g. 'model_state'. Left out: the weights file "
        "is the state dict. Not for safetensors.",
        "hyperparameters_key": "For a checkpoint that keeps the hyper-parameters its module is "
        "made from (Lightning's 'hyper_parameters'), beside state_dict_key: their key. The "
        "function is then called as function(files, hyperparameters), the value read as plain "
        "data (dicts, lists, numbers, strings, tensors; omegaconf's containers as their "
        "content; an argparse.Namespace as a dict); anything else refuses the run, naming it.",
    },
    "Code": {
        "function": "The name of the function to call, defined at the top level of the code.",
        "file": "A .py file among the model's files (its sha256 pins it); exactly one of file "
        "and code.",
        "code": "The Python source itself, inline (at most 65536 characters; hashed with the "
        "manifest); exactly one of file and code.",
    },
    "TrainedBy": {
        "run": "The training run's full id, recorded in this registry.",
        "lockfile": "The sha256 of the run's lockfile (64 lowercase hex digits).",
        "weights": "The path of the model file holding the run's final weights; must be "
        "among the files, and its sha256 the digest of the weights the run stored.",
    },
    "Requirement": {
        "name": "The Python package's name as pip knows it.",
        "version": "The exact package version installed (name==version); quote it in YAML. "
        "For the framework's own package it must be the release the framework installs "
        "(a local label such as '+cpu' aside), else publishing refuses the manifest.",
        "hashes": "The allowed hashes of the package's files, each 'sha256:' + 64 lowercase "
        "hex digits; at least one. Installed with --require-hashes.",
    },
    "Environment": {
        "platform": "The platform this environment is for (amd64/cpu by default); each "
        "platform may appear once in a framework's environments.",
        "image": "A container image artifact that provides the framework: its name and "
        "allowed versions.",
        "requirements": "The hash-pinned Python packages installed into a fresh virtual "
        "environment (by uv) to run the framework.",
        "python": "The Python line the virtual environment is built with, e.g. '3.11': this "
        "interpreter if it matches, else 'python3.11' on PATH, else the run stops. Left out, "
        "the running interpreter.",
    },
    "FrameworkManifest": {
        **_common("framework"),
        "environments": "How to obtain the framework, one entry per platform (at least one, "
        "no platform twice); each gives an image, requirements, or both.",
        "files": "Files shipped with the framework artifact, with their sha256 (may be empty; "
        "each path once).",
        "installs": "The framework release its environments install (e.g. '1.31.0' or "
        "'2.21.0rc1', no local label), what a run checks it has; left out, the artifact's own "
        "version (without build metadata); publishing refuses requirements that pin the "
        "framework's own package at another release. Set it when a corrected manifest of the "
        "same release is published as a new artifact version (decision 80). Left out of the "
        "stored manifest while unset.",
    },
    "LabelFormat": {
        "format": "How the labels are stored: 'class-index-npy' (an .npy array, one class index "
        "per sample, never unpickled), 'class-index-txt' (one label per line in sample "
        "order), 'class-index-csv' (columns file and label, one row per sample file, paths "
        'relative to the data folder), \'class-index-jsonl\' (one {"file", "label"} object '
        "per line, likewise), 'imagefolder' (each sample's class is the first folder below "
        "the data folder), 'similarity-pairs' (tab-separated i, j, score lines: sample "
        "indexes and a gold similarity; task sentence-similarity only) or 'coco-json' (COCO "
        "ground truth: images matched to the data folder's sample files by file_name, "
        "relative to the data folder, every sample an image of the JSON and every image a "
        "sample, each of the size it declares; boxes inside their image; task detection "
        "only) or 'masks' (a folder of one single-channel PNG per sample file, at the same "
        "path relative to it with the suffix .png (data photos/a/b.jpg -> masks/a/b.png), of "
        "the sample's size, each pixel a class index or ignore_index; PNG mode L or I;16 "
        "(grayscale: the value), P (palette: the index, not the colour) or 1; colour masks "
        "are refused; the folder holds nothing else and lies apart from the data folder, "
        "whose samples must be images; task segmentation only) or 'reference-audio-npy' (an "
        ".npy array of one reference waveform per sample, (N, T) or (N, C, T); task "
        "audio-to-audio only) or 'reference-image-npy' (an .npy array of one reference image "
        "per sample, (N, H, W) or with channels as channel_axis says, values in data_range; "
        "task image-to-image only). A label is a class "
        "index or a class key from the names file. csv, "
        "jsonl and imagefolder need a data folder (data.format images, npy-files or audio).",
        "path": "The labels file; must be among the dataset's files (none for imagefolder; "
        "for masks, the folder of the mask files). "
        "Left out for the other formats, the dataset has no labels and accuracy cannot be "
        "measured.",
        "classes": "The number of classes: every class index must be below it, and a names "
        "file must name exactly this many.",
        "names": "A class-names file among the files: line i names class i; lines that all "
        "start with a WordNet id ('n01440764 tench, Tinca tinca') are keyed by it. String "
        "labels are looked up here, imagefolder folder names too (without it, imagefolder "
        "classes are the folder names in sorted order), and results show these names. Left "
        "out of the stored manifest while unset.",
        "ignore_index": "Masks only: the mask value of pixels that no metric counts (e.g. 255 "
        "for VOC's object borders), itself no class index (classes..65535); every other value "
        "must be below classes. Left out of the stored manifest while unset.",
        "data_range": "reference-image-npy only, and needed there: the range of the images' "
        "values (1.0 for images in 0..1, 255 for 8-bit ones), which PSNR and SSIM are computed "
        "against as scikit-image's data_range. Left out of the stored manifest while unset.",
        "channel_axis": "reference-image-npy only: the axis of each image's channels, 0 (C, H, "
        "W) or -1 (H, W, C); left out, each image is (H, W). SSIM is averaged over channels, "
        "as scikit-image's channel_axis. Left out of the stored manifest while unset.",
    },
    "SampleFiles": {
        "format": "Where the samples are: 'npy' (one .npy array (N, H, W[, C]) of all samples, "
        "never unpickled), 'images' (a folder of JPEG/PNG/WebP/BMP files, decoded with Pillow "
        "by the input's first step, which must be decode; sizes may differ until a resize or "
        "crop), 'npy-files' (a folder of one .npy array per sample), 'audio' (a folder of PCM "
        "WAV files, decoded by the input's first step, which must be decode_audio; for task "
        "speech-recognition, read as the model's feature extractor says) or "
        "'text-lines' (a UTF-8 file, one text sample per line, no blank line), 'files' (a "
        "folder of files of any kind, every file a sample, read by the input's first step, "
        "which must be read_bytes) or "
        '\'prompts-jsonl\' (a UTF-8 file of JSON lines {"prompt": text, "reference": text}, '
        "the reference optional, for task text-generation) or 'questions-jsonl' (a UTF-8 "
        'file of JSON lines {"question": text, "context": text}, one question about its '
        "context each, for task question-answering; the answers are the labels). A folder's "
        "samples "
        "are its files with those suffixes, in path order; any other file in it is refused.",
        "path": "The .npy or text file (formats npy, text-lines, prompts-jsonl, questions-jsonl) "
        "or the folder "
        "('.' for the artifact's root) holding the sample files; must be among / hold some of the "
        "dataset's files.",
    },
    "DatasetManifest": {
        **_common("dataset"),
        "files": "The dataset's files with their sha256 (at least one, each path once, unless "
        "a file_index lists them).",
        "file_index": "A file of the dataset listing its other files, one "
        "'<sha256> <size> <path>' line each (LF-ended, paths in code-point order, each once), "
        "pinned by its own sha256: for a dataset of more files than a manifest should list "
        "(`pinbench manifest dataset` writes one past 1,000 files). Publishing reads it, "
        "checks and stores each file it lists, and records every one as the artifact's; it "
        "is a local file outside the data and masks folders. Left out, `files` lists all.",
        "labels": "Where the labels are and how they are stored.",
        "data": "Where the samples are. Left out, the dataset cannot be run (a run stops "
        "saying the manifest names no sample file).",
        "task": "What the dataset is for: 'classification' (the default; top-1/top-5) or "
        "'sentence-similarity' (Spearman's rho of embedding cosine similarities against the "
        "gold scores of similarity-pairs labels) or 'detection' (COCOeval's twelve AP and AR "
        "statistics with pycocotools against coco-json labels; with a model's masks also "
        "the twelve of its segm evaluation, mask_map ...) or 'segmentation' (mIoU and pixel "
        "accuracy against masks labels), the tasks accuracy runs score; 'other' is read but "
        "refused at publish.",
        "samples": "The number of samples: checked at publish and at run time against the "
        "files (the array's first axis, or the data folder's sample files).",
    },
    "ImageManifest": {
        **_common("image"),
        "digest": "The image's content digest, 'sha256:' + 64 lowercase hex digits (the "
        "manifest or index digest): what a pull is pinned to.",
        "reference": "Where the image can be pulled from, e.g. "
        "'127.0.0.1:5000/pinbench/onnxruntime'; left out, none is known.",
        "platform": "The platform the image is built for (amd64/cpu by default).",
    },
}
"""Field descriptions, by struct name and field name."""

STRUCT_DOCS: dict[str, str] = {
    "ModelManifest": "A model: its files in one format, the framework that runs it, and how "
    "its inputs are prepared and its outputs read.",
    "FrameworkManifest": "A framework (e.g. onnxruntime) and how to obtain it on each "
    "platform: a container image, hash-pinned Python requirements, or both.",
    "DatasetManifest": "A dataset: its files, where the samples and labels are.",
    "ImageManifest": "A container image pinned by its content digest.",
    "FileEntry": "One file of the artifact, pinned by its sha256.",
    "TrainedBy": "The training run whose final weights a model version holds.",
    "Code": "One Python function of a model's processing code: in a file of the artifact or "
    "inline.",
    "Builder": "The function that builds a torch-state-dict model's module (TorchServe's model "
    "file): run only with the run's consent, like processing code.",
    "Platform": "A platform: CPU architecture and device.",
    "Decode": "Bring the samples to a colour mode.",
    "Resize": "Resize each sample.",
    "Crop": "Cut a centred region out of each sample.",
    "Layout": "Reorder the samples' axes.",
    "ColorMode": "Convert the samples' colour mode.",
    "DType": "Cast the samples to an element type.",
    "OutputStep": "Exactly one of the fields: ``- topk: {k: 5}``.",
    "Softmax": "Softmax along an axis.",
    "Argsort": "Class indices sorted by score.",
    "TopK": "The indices of the k highest scores.",
    "Tokenize": "Text to token ids with the model's tokenizer.",
    "Pool": "Token states to one vector per sample.",
    "L2Normalize": "Each vector divided by its Euclidean norm (no fields).",
    "LabelsRef": "Where an output's class names are: a model file or an ONNX metadata entry.",
    "Input": "One model input and how the dataset's samples are prepared for it.",
    "Output": "One model output and how it is read.",
    "LabelFormat": "A dataset's labels: their format and file.",
}
"""Descriptions of the structs that have no docstring (msgspec uses a docstring itself)."""


def describe(schema: dict[str, Any]) -> dict[str, Any]:
    """Put the descriptions into ``schema`` (msgspec's, with ``$defs``) and return it; a
    description msgspec already gave is kept."""
    for struct, definition in schema.get("$defs", {}).items():
        if struct in STRUCT_DOCS:
            definition.setdefault("description", STRUCT_DOCS[struct])
        if "description" in definition:  # a docstring as Python's own help shows it: msgspec
            # 0.22 cleaned it so, 0.23 only dedents it (its lines after the first stay indented)
            definition["description"] = inspect.cleandoc(definition["description"])
        fields = FIELD_DOCS.get(struct, {})
        for field, prop in definition.get("properties", {}).items():
            if field in fields:
                prop.setdefault("description", fields[field])
    return schema


def undescribed(schema: dict[str, Any]) -> list[str]:
    """Each struct (``Name``) and field (``Name.field``) of ``schema``'s ``$defs`` that has no
    non-empty description."""
    missing: list[str] = []
    for struct, definition in schema.get("$defs", {}).items():
        if not str(definition.get("description", "")).strip():
            missing.append(struct)
        for field, prop in definition.get("properties", {}).items():
            if not str(prop.get("description", "")).strip():
                missing.append(f"{struct}.{field}")
    return missing
