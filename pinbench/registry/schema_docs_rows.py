"""Descriptions, for ``schema_docs``, of the steps that shape a sample's rows (issue 86:
``take``, ``reshape``, ``views``; ``registry.row_steps``) and of the ``views`` field that joins
``Output``'s own."""

from __future__ import annotations

ROW_STEPS: dict[str, str] = {
    "take": "Keep positions [start, stop) of each sample's last axis, as NumPy's "
    "x[..., start:stop]: one part of a row of features (ICLabel's spectrum out of a row that "
    "also holds its map). A sample shorter than stop fails the run, naming the step.",
    "reshape": "Give each sample a shape (its values in C order, NumPy's reshape); the "
    "shape's product must be the sample's value count, else the run fails naming both.",
    "views": "Test-time augmentation: each sample becomes k rows, row i the sample through "
    "its i-th list of transforms, and the model is fed k rows per sample. The input's last "
    "step; every output then says how its k rows become one answer (its `views`). An input "
    "of the model without this step is repeated k times. A transform is one of `negate: {}` "
    "(times -1), `flip: {axis: A}` (reversed along the sample's axis A) and `crop: {size: "
    "[h, w], at: center}` (a window of the last two axes; at: center, top_left, top_right, "
    "bottom_left or bottom_right, torchvision's FiveCrop positions). ICLabel's four: "
    "`[[], [{negate: {}}], [{flip: {axis: -1}}], [{negate: {}}, {flip: {axis: -1}}]]`.",
}
ROW_DOCS: dict[str, dict[str, str]] = {
    "PadBatch": {
        "value": "What a shorter sample is padded with (the extractor's padding_value; 0 by "
        "default).",
    },
    "Take": {
        "start": "The first position kept (0 by default).",
        "stop": "The position after the last one kept; above start.",
    },
    "Reshape": {
        "shape": "Each sample's new shape after the batch axis (1 to 8 dimensions, each at "
        "least 1).",
    },
    "Views": {
        "transforms": "One list of transforms per view, applied in order (2 to 64 views, each "
        "at most 8 transforms; [] is the sample as it is). Every view must give one shape, the "
        "model's row.",
        "order": "How a batch's rows reach the model: 'view-major' (row v * B + s is view v "
        "of sample s, as ICLabel's network reads them) or 'sample-major' (row s * k + v: a "
        "sample's views together). Required: a model that reduces its rows itself reads "
        "them in one order only.",
    },
    "ViewOp": {
        "negate": "Every value times -1 (signed integers and floats).",
        "flip": "Reverse the sample along an axis.",
        "crop": "A window of the sample's last two axes.",
    },
    "Negate": {},
    "Flip": {
        "axis": "The axis reversed among the sample's own (the batch axis not counted; -1: "
        "the last, the width after layout NCHW).",
    },
    "ViewCrop": {
        "size": "The window's height and width (1..16384), at most the sample's.",
        "at": "'center' (the default: its top round((H - h) / 2), its left likewise, as "
        "torchvision's CenterCrop), 'top_left', 'top_right', 'bottom_left' or 'bottom_right' "
        "(torchvision's FiveCrop positions).",
    },
}
OUTPUT_VIEWS: dict[str, str] = {
    "views": "Where inputs have a views step, how this output's k rows per sample become "
    "one answer: 'mean' or 'max' over them, element by element (float outputs for the mean), "
    "or 'model' (the model answers one row per sample itself; a run whose model answers "
    "otherwise fails naming the output). Required then, refused otherwise. Left out of the "
    "stored manifest while unset.",
}
INPUT_LENGTHS: dict[str, str] = {
    "pad_batch": "For samples that keep lengths of their own (WAV files decoded without a "
    "fit_length step: each clip at its own length, as transformers' pipelines feed them): a "
    "batch of several is padded at the end of each sample's last axis to the batch's longest "
    "with its value, inside the timed call, as a pipeline's collate pads it. Without it, such "
    "samples run only at batch_size 1. Left out of the stored manifest while unset.",
    "mask_of": "This input is the attention mask of the named input (fed per sample): 1 over "
    "each sample's own length, 0 over the padding its batch added (all ones at batch size "
    "1), made at each call. It has no steps and no shape; element_type int32 (transformers' "
    "extractors' own), int64, bool or float32. Left out of the stored manifest while unset.",
}
