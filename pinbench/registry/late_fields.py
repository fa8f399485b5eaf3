"""Fields added to manifests (and lockfiles) after documents without them were published: each
is left out of the stored data while unset, so the digests of the documents published before
it do not change (decision 2: a version's identity is its manifest's digest)."""

from __future__ import annotations

from typing import Any

from pinbench.registry.generation import LATE_GENERATION_FIELDS
from pinbench.registry.ports import (
    LATE_BINARY_FIELDS,
    LATE_CTC_ALPHABET_FIELDS,
    LATE_CTC_FIELDS,
    LATE_DETECTION_FIELDS,
    LATE_LABELS_REF_FIELDS,
    LATE_NMS_FIELDS,
)
from pinbench.registry.steps import LATE_RESIZE_FIELDS, LATE_TOKENIZE_FIELDS

LATE_FILE_FIELDS = ("md5",)
"""File fields added after manifests were first published: left out of the stored data while
unset, so the digests of manifests published before them do not change."""
LATE_FIELDS = (
    *("installs", "trained_by", "file_index", "preprocess", "postprocess", "builder"),
    "requirements",  # a model's own (a framework's are per environment, never unset)
)
"""Top-level fields added likewise (a framework's ``installs``, a model's ``trained_by``, a
dataset's ``file_index``)."""
LATE_LABEL_FIELDS = ("names", "ignore_index", "data_range", "channel_axis")
"""A dataset's ``labels`` fields added likewise (stripped in lockfiles too)."""
LATE_BUILDER_FIELDS = ("hyperparameters_key",)
"""A model builder's fields added likewise (stripped in lockfiles too): ``drop_unset_builder``."""
LATE_OUTPUT_FIELDS = ("detection", "segmentation", "ctc", "binary", "quantization", "views")
"""A model output's fields added likewise (stripped in lockfiles too)."""


LATE_INPUT_FIELDS = ("value", "state", "stream", "quantization", "pad_batch", "mask_of")
"""A model input's fields added likewise (stripped in lockfiles too)."""


def drop_unset_inputs(inputs: object) -> None:
    """``drop_unset`` of ``LATE_INPUT_FIELDS`` on each input of a model's plain data, and of
    the late fields of its steps (``resize``'s ``antialias``, ``tokenize``'s windows of a
    question's context)."""
    if isinstance(inputs, list):
        for spec in inputs:
            if isinstance(spec, dict):
                drop_unset(spec, LATE_INPUT_FIELDS)
                for step in spec.get("steps") or []:
                    if isinstance(step, dict) and isinstance(step.get("resize"), dict):
                        drop_unset(step["resize"], LATE_RESIZE_FIELDS)
                    if isinstance(step, dict) and isinstance(step.get("tokenize"), dict):
                        drop_unset(step["tokenize"], LATE_TOKENIZE_FIELDS)


def drop_unset_outputs(outputs: object) -> None:
    """``drop_unset`` of ``LATE_OUTPUT_FIELDS`` on each output of a model's plain data, and of
    the late fields of its sections (detection, binary, labels)."""
    if isinstance(outputs, list):
        for output in outputs:
            if isinstance(output, dict):
                drop_unset(output, LATE_OUTPUT_FIELDS)
                if isinstance(output.get("detection"), dict):
                    drop_unset(output["detection"], LATE_DETECTION_FIELDS)
                    if isinstance(output["detection"].get("nms"), dict):
                        drop_unset(output["detection"]["nms"], LATE_NMS_FIELDS)
                if isinstance(output.get("binary"), dict):
                    drop_unset(output["binary"], LATE_BINARY_FIELDS)
                if isinstance(output.get("ctc"), dict):
                    drop_unset(output["ctc"], LATE_CTC_FIELDS)
                    if isinstance(output["ctc"].get("alphabet"), dict):
                        drop_unset(output["ctc"]["alphabet"], LATE_CTC_ALPHABET_FIELDS)
                if isinstance(output.get("labels"), dict):
                    drop_unset(output["labels"], LATE_LABELS_REF_FIELDS)


LATE_STAGE_FIELDS = ("join",)
"""A chain stage's fields added likewise (stripped in requests and lockfiles)."""


def drop_unset_builder(model: object) -> None:
    """``drop_unset`` of ``LATE_BUILDER_FIELDS`` in a model's plain data's ``builder``."""
    if isinstance(model, dict) and isinstance(model.get("builder"), dict):
        drop_unset(model["builder"], LATE_BUILDER_FIELDS)


LATE_DISTRIBUTED_FIELDS = ("systems",)
"""A training request's ``distributed`` fields added likewise (ranks spread over systems)."""


def drop_unset_request_parts(data: dict[str, Any]) -> None:
    """``drop_unset`` of the late fields of a request's ``generation``, ``distributed`` and
    of its chain's stages (plain data), for every digest made of a request (its lockfile's,
    a sweep's id)."""
    for stage in (data.get("chain") or {}).get("stages", []):
        drop_unset(stage, LATE_STAGE_FIELDS)
    if isinstance(data.get("generation"), dict):
        drop_unset(data["generation"], LATE_GENERATION_FIELDS)
    if isinstance(data.get("distributed"), dict):
        drop_unset(data["distributed"], LATE_DISTRIBUTED_FIELDS)


def drop_unset(data: dict[str, Any], names: tuple[str, ...]) -> None:
    """Remove the late fields ``names`` from ``data`` where they are unset (``None``)."""
    for name in names:
        if name in data and data[name] is None:
            del data[name]
