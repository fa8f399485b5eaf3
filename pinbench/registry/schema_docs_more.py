"""Descriptions, for ``schema_docs``, of the fields that read models as their packages ship
them (issue 50): the raw detection heads (``detection_heads``; ``DETECTION_HEAD_FIELDS`` joins
the ``Detection`` section's own), the ``read_bytes`` input step (``READ_BYTES_STEP`` joins
``InputStep``'s) and ``resize``'s ``antialias`` (``RESIZE_FIELDS`` joins ``Resize``'s)."""

from __future__ import annotations

DETECTION_HEAD_FIELDS: dict[str, str] = {
    "yolox": "Layout yolox: YOLOX's raw head, (N, anchors, 5 + C) (x, y offsets in cells, log "
    "w, log h in strides, objectness, C class probabilities), decoded on the grid of "
    "`yolox.strides` for the model input's size; score = objectness x the best class. Filled "
    "with strides 8, 16, 32 when left out. Refused with another layout. Left out of the "
    "stored manifest while unset.",
    "gfl": "Layout gfl: Generalized Focal Loss heads (PicoDet, NanoDet), one scores output and "
    "one box-distribution output per stride (`gfl.heads`); this output is one of them. "
    "Required for that layout, refused with another. Left out of the stored manifest while "
    "unset.",
    "ssd": "Layout ssd: this output holds box deltas (N, anchors, 4) against the anchors "
    "file, `scores` the class scores (N, anchors, C); decoded by the box coder `ssd` "
    "describes. Required for that layout, refused with another. Left out of the stored "
    "manifest while unset.",
}

HEAD_DOCS: dict[str, dict[str, str]] = {
    "Yolox": {
        "strides": "The grid's strides, level by level (YOLOX: [8, 16, 32]; its P6 models add "
        "64), each 1..1024: a level has H // stride rows of W // stride cells of the model "
        "input, its anchors row by row; the output's anchor count must be the grid's.",
    },
    "Gfl": {
        "heads": "One entry per level (1 to 16), in any order: each names its class-scores "
        "and box-distribution outputs and its stride.",
        "bins": "Values per box side, reg_max + 1 (2..64; 8 by default, PicoDet's and "
        "NanoDet's): the box output has 4 x bins values per anchor.",
        "offset": "Where a cell's centre is, in cells (0..1): 0.5 by default (PicoDet), 0 "
        "for NanoDet-Plus.",
    },
    "GflHead": {
        "scores": "The output (a name or an index) of the level's class probabilities, (N, "
        "anchors, C), a sigmoid's (a value outside [0, 1] fails the run); declared as a "
        "tensor output unless it is the detection output itself.",
        "boxes": "The output of the level's box distributions, (N, anchors, 4 x bins): left, "
        "top, right, bottom, each bins values whose softmax's expectation, times the stride, "
        "is the distance from the cell's centre.",
        "stride": "The level's stride in input pixels (1..1024): ceil(H / stride) rows of "
        "ceil(W / stride) cells, anchors row by row.",
    },
    "Ssd": {
        "anchors": "A .npy file among the model's files: (anchors, 4) numbers in the "
        "section's box_format, in the boxes' units (normalized: fractions of the input), read "
        "without pickles; every anchor finite with a positive size, at most 2^24.",
        "variances": "The box coder's variances (v0, v1, v2, v3), each 0.001..10; (0.1, 0.1, "
        "0.2, 0.2) by default (Caffe's SSD; torchvision's weights (10, 10, 5, 5) are their "
        "inverses).",
        "order": "The deltas' order: 'xywh' (the default: Caffe, torchvision) or 'yxhw' "
        "(TensorFlow's Object Detection API).",
        "activation": "How the scores become probabilities: 'softmax' over each anchor's "
        "columns (the background among them), 'sigmoid' per column, or 'none' (they are "
        "probabilities already). Required.",
        "background": "The scores' column of the background class, dropped after the "
        "activation (0 in Caffe's and torchvision's SSDs); left out, every column is a class "
        "of the labels.",
    },
}

READ_BYTES_STEP: dict[str, str] = {
    "read_bytes": "A sample file of any kind (data.format files) as one row of integers, its "
    "bytes 0..255 in file order: the input's first step on such a dataset, refused on any "
    "other. The input's element_type must hold every byte and the pad exactly (uint8 for a "
    "pad up to 255; int32, int64, float32 for any).",
}

READ_BYTES_DOCS: dict[str, dict[str, str]] = {
    "ReadBytes": {
        "length": "The bytes read from each file, the row's length (1..2^26); at most "
        "length + 1 bytes of a file are read.",
        "pad": "What a shorter file's row is padded with at its end (0..65535; 0 by default; "
        "magika pads with 256, a token no byte is).",
        "crop": "true: keep a longer file's first length bytes; false (the default): a longer "
        "file fails the run, naming it.",
    },
}

RESIZE_FIELDS: dict[str, str] = {
    "antialias": "false: bilinear without antialiasing, as OpenCV's cv2.resize INTER_LINEAR "
    "and cv2.dnn.blobFromImage resize (each pixel from the two nearest source pixels on each "
    "axis, half-pixel centres, whatever the scale; computed in float32 and rounded back to "
    "8 bits, within 1 grey level of OpenCV's fixed-point result); refused with any method but "
    "bilinear. Left out or true: Pillow's filter, which widens to cover every source pixel "
    "when shrinking (antialiasing). Left out of the stored manifest while unset.",
}
