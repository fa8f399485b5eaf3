"""``pinbench manifest``: write a manifest from files, one command per kind.

Each command builds the manifest's data with ``pinbench.authoring`` (imported when the
command runs: reading a model loads its framework), validates it, and prints it as YAML or
writes it with ``-o``; what the author should still check goes to stderr. Nothing is written
when anything is wrong. A new kind is one more command calling ``manifest_emit.emit``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from pinbench.cli.common import F, force_option, listed
from pinbench.cli.manifest_emit import destination_of as _destination
from pinbench.cli.manifest_emit import emit as _emit
from pinbench.console import json_option
from pinbench.errors import UserError

manifest_app = click.Group(
    "manifest",
    help="Write a manifest from files: a model's, a dataset's or a framework's.\n\n"
    "A model's from the model's own signature, a framework's from pinbench's hash-pinned "
    "environment locks.",
    no_args_is_help=True,
)


def _stdout_dash(_ctx: object, _param: object, value: Path | None) -> Path | None:
    """``-o -`` prints, as ``-`` means standard output to most tools (it wrote a file ``-``)."""
    return None if value is not None and str(value) == "-" else value


_output = click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(path_type=Path),
    callback=_stdout_dash,
    help=(
        "Write the manifest to this file (default, or `-`: print it). "
        "File paths in the manifest are relative to this file's "
        "folder (default: the current folder)."
    ),
)


def _output_option(f: F) -> F:
    """``-o/--output FILE`` (``output``) and ``--force`` (``force``)."""
    return _output(force_option(f))


_version_option = click.option(
    "--version", "version", type=str, default="1.0.0", help="Artifact version."
)


@manifest_app.command("model")
@click.argument(
    "files",
    type=click.Path(path_type=Path),
    nargs=-1,
    required=True,
    callback=listed,
    help=(
        "The model (.onnx, TorchScript .pt, torch.export .pt2, "
        ".keras, or a SavedModel folder; or a state dict with the "
        ".py builder that makes its module, whose local modules are "
        "found and listed with it) and any other files of the "
        "artifact (labels...)."
    ),
)
@click.option("--name", "name", type=str, help="Artifact name (default: the model file's stem).")
@_version_option
@click.option(
    "--framework-range",
    "framework_range",
    type=str,
    help=(
        "The framework versions the model runs on (default: the "
        "catalog's range for its framework, e.g. '>=1.17 <2' for "
        "onnxruntime)."
    ),
)
@click.option(
    "--steps",
    "steps",
    type=click.Path(path_type=Path),
    help=(
        "A YAML file of the input's preprocessing steps (a list, e.g. "
        "`- decode: {color_mode: rgb}` ...; for several inputs, a "
        "mapping from input name to list), written into the manifest "
        "and validated."
    ),
)
@click.option(
    "--classification",
    "classification",
    type=str,
    multiple=True,
    callback=listed,
    help=(
        "An output that holds class scores (marked `type: "
        "classification`, what accuracy is computed from); repeat for "
        "several."
    ),
)
@_output_option
@json_option
def model(
    files: list[Path],
    name: str | None = None,
    version: str = "1.0.0",
    framework_range: str | None = None,
    steps: Path | None = None,
    classification: list[str] | None = None,
    output: Path | None = None,
    force: bool = False,
    as_json: bool = False,
) -> None:
    """A model manifest: format, inputs and outputs read from the model, every file's sha256.

    ONNX external-data files and a SavedModel folder's files are included. What the model
    does not record (TorchScript element types and shapes, which output holds class scores,
    preprocessing) is left for the author and said on stderr.
    """
    from pinbench.authoring.model import model_manifest

    dest = _destination(output, force)
    base = output.parent if output is not None else Path.cwd()
    authored = model_manifest(
        files,
        base=base,
        name=name,
        version=version,
        framework_range=framework_range,
        steps=_steps(steps) if steps is not None else None,
        classification=classification or [],
    )
    _emit(authored.data, authored.notes, dest, as_json, authored.beside, authored.comments)


def _steps(path: Path) -> list[Any] | dict[str, Any]:
    """The ``--steps`` file: a list of steps, or a mapping from input name to list."""
    from pinbench.sdk.values import YamlRefused, load_yaml, read_yaml_file

    try:
        data = load_yaml(read_yaml_file(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the steps file {path}: {exc}") from None
    except YamlRefused as exc:
        raise UserError(f"steps file {path}: {exc.reason}") from None
    if not isinstance(data, list | dict):
        raise UserError(
            f"steps file {path}: want a list of steps, or a mapping from input name to a list"
        )
    return data


@manifest_app.command("framework")
@click.argument("pin", type=str, help="NAME==VERSION, e.g. onnxruntime==1.31.0.")
@_output_option
@json_option
def framework(
    pin: str,
    output: Path | None = None,
    force: bool = False,
    as_json: bool = False,
) -> None:
    """A framework manifest: the hash-pinned environment of a release pinbench has a lock for.

    Its requirements are the framework's wheel and the evaluator's own dependencies, each
    pinned by sha256 (pinbench/environments/<framework>.txt); a release without a lock is
    refused, naming those with one.
    """
    from pinbench.authoring.framework import framework_manifest

    dest = _destination(output, force)
    _emit(framework_manifest(pin), [], dest, as_json)


@manifest_app.command("dataset")
@click.argument(
    "data",
    type=click.Path(path_type=Path),
    help=(
        "The folder of samples (JPEG/PNG/WebP/BMP images, PCM WAV "
        "audio files, or one .npy per sample; class sub-folders for "
        "imagefolder labels), one .npy array of all samples, a "
        ".txt file of texts (one per line), or a .jsonl file of prompts "
        '({"prompt", "reference"} per line) or of questions '
        '({"question", "context"} per line: question answering, its '
        "answers the --labels file)."
    ),
)
@click.option(
    "--labels",
    "labels",
    type=str,
    help=(
        "imagefolder (the class is each sample's folder), none, a "
        "labels file: .txt (one label per line, in sample order), "
        '.csv (columns file,label), .jsonl ({"file", "label"} per '
        "line), .npy (class indexes), .tsv (sentence pairs: i, j, "
        "gold score; the task becomes sentence-similarity) or .json "
        "(COCO instances: boxes per image, each image's file_name "
        "relative to the data folder; the task becomes detection), or "
        "a folder of masks (one single-channel PNG per sample image, "
        "at its path with .png; the task becomes segmentation). "
        "With a questions file: its answers (.jsonl, one JSON array of "
        "answer texts per line; the task becomes question-answering). "
        "Default: imagefolder when every sample is in a sub-folder, "
        "else none."
    ),
)
@click.option(
    "--labels-format",
    "labels_format",
    type=str,
    help=(
        "The labels file's format where its suffix's default is not "
        "it, e.g. text-txt, text-csv (columns file,text) or "
        'text-jsonl ({"file", "text"} per line) for each sample\'s '
        "text (the task becomes text-recognition); any format a task "
        "reads (README's task table)."
    ),
)
@click.option(
    "--names",
    "names",
    type=click.Path(path_type=Path),
    help=(
        "A class-names file: line i names class i (ImageNet synset "
        "lines 'n01440764 tench, ...' are keyed by their WordNet id). "
        "Labels that are names, and imagefolder folders, are looked "
        "up here; without it imagefolder classes are the folder names "
        "in sorted order."
    ),
)
@click.option(
    "--format",
    "data_format",
    type=click.Choice(["images", "npy-files", "audio", "files"]),
    help=(
        "The folder's sample format where the suffixes do not say it: "
        "files makes every file under the folder a sample of any kind "
        "(raw bytes, read by the model's processing code, or a "
        "read_bytes step); default: the suffixes' format."
    ),
)
@click.option("--name", "name", type=str, help="Artifact name (default: the folder's name).")
@_version_option
@click.option(
    "--classes",
    "classes",
    type=int,
    help=(
        "How many classes the labels index (labels.classes). For a "
        "masks folder, by default as many as --names lists, else one "
        "more than the largest mask value."
    ),
)
@click.option(
    "--ignore-index",
    "ignore_index",
    type=int,
    help=("Masks: the mask value of pixels no metric counts (e.g. 255, Pascal VOC's borders)."),
)
@click.option(
    "--data-range",
    "data_range",
    type=float,
    help=(
        "reference-image-npy labels (task image-to-image): the range of "
        "the images' values, 1.0 or 255, which PSNR and SSIM use."
    ),
)
@click.option(
    "--channel-axis",
    "channel_axis",
    type=click.Choice(["0", "-1"]),
    help="reference-image-npy labels: each image's channel axis, 0 (CHW) or -1 (HWC).",
)
@click.option(
    "--file-index",
    "file_index",
    type=click.Path(path_type=Path),
    help=(
        "Write the sample files' list (path, sha256, size) to this "
        "file of the dataset and name it in the manifest "
        "(`file_index`), which then stays small whatever the number "
        "of files; done by default beside the manifest (NAME.files) "
        "for a folder of more than 1,000 files. Outside the data "
        "folder."
    ),
)
@_output_option
@json_option
def dataset(
    data: Path,
    labels: str | None = None,
    labels_format: str | None = None,
    names: Path | None = None,
    name: str | None = None,
    version: str = "1.0.0",
    classes: int | None = None,
    ignore_index: int | None = None,
    data_range: float | None = None,
    channel_axis: str | None = None,
    file_index: Path | None = None,
    output: Path | None = None,
    force: bool = False,
    as_json: bool = False,
    data_format: str | None = None,
) -> None:
    """A dataset manifest: every sample file's sha256, the labels format, the sample count.

    Checked as publishing checks it (each image's signature, labels for every sample, class
    names found, every mask's size and values, COCO boxes and image sizes) before anything is
    written; paths are relative to the -o file's folder.
    """
    from pinbench.authoring.dataset import dataset_manifest

    if output is not None and data.is_dir() and output.resolve().is_relative_to(data.resolve()):
        raise UserError(
            f"write the manifest outside the data folder {data}: inside it, {output} would be "
            "one of the dataset's own files the next time"
        )
    if output is not None and file_index is not None and output.resolve() == file_index.resolve():
        raise UserError(f"{output} would be both the manifest and its file index")
    dest = _destination(output, force)
    base = output.parent if output is not None else Path.cwd()
    authored = dataset_manifest(
        data,
        base=base,
        name=name,
        version=version,
        labels=labels,
        names=names,
        index=file_index,
        classes=classes,
        ignore_index=ignore_index,
        label_format=labels_format,
        images={"data_range": data_range, "channel_axis": channel_axis and int(channel_axis)},
        data_format=data_format,
    )
    _emit(authored.data, authored.notes, dest, as_json, authored.beside)
